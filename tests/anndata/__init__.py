"""Tests of ``dafzarr.anndata``: the AnnData bridge."""
