"""Moving data between Daf and AnnData (scanpy's container) in one call, without loss.

Needs the optional ``anndata`` extra (``pip install dafzarr[anndata]``). The
implementation lives in ``dafzarr._core.anndata``.
"""

from __future__ import annotations

from .._core.anndata.bridge import MANIFEST, anndata_to_daf, daf_to_anndata

__all__ = ["MANIFEST", "anndata_to_daf", "daf_to_anndata"]
