"""Tests of ``dafzarr.daf.ops``: copies, concatenation, adapters, contracts."""
