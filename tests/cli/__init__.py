"""Tests of ``dafzarr.cli``: the ``dafzarr`` command line."""
