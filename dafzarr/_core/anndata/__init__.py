"""Moving data between Daf and AnnData (scanpy's container) in one call, without loss.

Needs the optional ``anndata`` extra (``pip install dafzarr[anndata]``).

:func:`anndata_to_daf` stores every element of an AnnData object as ordinary Daf axes,
vectors, matrices and scalars (which DataAxesFormats.jl reads as such) plus one string
scalar ``anndata`` (JSON) recording what Daf has no type for: column kinds and order,
categories, masks of missing values, sparse formats, memory orders, the ``uns`` tree.
:func:`daf_to_anndata` gives back an equal object. What cannot be kept raises
:class:`~dafzarr.errors.AnnDataConversionError` naming the element. The README's AnnData
section has the mapping table.
"""

from __future__ import annotations

from .bridge import MANIFEST, anndata_to_daf, daf_to_anndata

__all__ = ["MANIFEST", "anndata_to_daf", "daf_to_anndata"]
