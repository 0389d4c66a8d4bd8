"""Tests of ``dafzarr.refs``: virtual reference stores."""
