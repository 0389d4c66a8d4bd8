"""Tests of ``dafzarr.arrayfile``: ArrayFile."""
