"""Tests of ``dafzarr.daf``: ZarrDaf, chains, views, backends."""
