"""Tests of ``dafzarr.daf.query``: Daf queries."""
