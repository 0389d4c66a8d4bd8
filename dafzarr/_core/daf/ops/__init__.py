"""Daf operations between data sets: copies with aligned axes, the adapter, concatenation,
axis reconstruction and computation contracts.

* :func:`copy_scalar`, :func:`copy_axis`, :func:`copy_vector`, :func:`copy_matrix`,
  :func:`copy_tensor` - copy one property, its axes related by their entries;
* :func:`copy_all` - copy everything, validated before anything is written;
* :func:`adapter` - run a computation on renamed or subset inputs, copying its outputs back;
* :func:`concatenate` - stack data sets along axes (``concat.jl``; its rules and decisions are
  in its own documentation), with :class:`MergeAction` for the other properties;
* :func:`reconstruct_axis` - the distinct values of a vector become an axis, and the vectors
  constant within each group move onto it;
* :class:`Contract`, :func:`computation`, :func:`contractor` - what a computation reads and
  writes, checked before and after it runs.

They read from any Daf reader (:class:`~dafzarr.daf.ZarrDaf` on any backend, views, chains)
and write into any writer. The rules are DataAxesFormats.jl's (``copies.jl``,
``adapters.jl``) with dafpy's Python names, and these decisions where it is silent or fails:

* axes with the same entries in another order are aligned by name;
* conversions (``type``, ``eltype``, ``types``, ``empty``) are exact or refused
  (:class:`~dafzarr.errors.UnsafeCastError`), and strings are parsed for vectors and
  matrices too;
* with ``reaxis``/``rename`` the fill follows the destination's axis;
* an axis with fewer entries in the destination is selected even when the other axis of a
  matrix has more;
* ``copy_all`` validates everything before writing (one commit on a ZIP);
* the adapter refuses to do nothing (``no-op adapter``).

Entries that cannot be aligned raise :class:`~dafzarr.errors.DafMismatchError`, missing
properties :class:`~dafzarr.errors.DafMissingError`, existing ones
:class:`~dafzarr.errors.DafExistsError`.
"""

from __future__ import annotations

from .adapter import adapter
from .computation import computation
from .concat import concatenate
from .contract import (
    Contract,
    ContractExpectation,
    CreatedOutput,
    ElementType,
    GuaranteedOutput,
    OptionalInput,
    OptionalOutput,
    RequiredInput,
)
from .contractor import ContractDaf, contractor
from .copies import copy_axis, copy_scalar, copy_vector
from .copy_all import copy_all
from .copy_matrix import copy_matrix, copy_tensor
from .merge import ALL_MATRICES, ALL_SCALARS, ALL_VECTORS, MergeAction
from .reconstruct import reconstruct_axis

__all__ = [
    "ALL_MATRICES",
    "ALL_SCALARS",
    "ALL_VECTORS",
    "Contract",
    "ContractDaf",
    "ContractExpectation",
    "CreatedOutput",
    "ElementType",
    "GuaranteedOutput",
    "MergeAction",
    "OptionalInput",
    "OptionalOutput",
    "RequiredInput",
    "adapter",
    "computation",
    "concatenate",
    "contractor",
    "copy_all",
    "copy_axis",
    "copy_matrix",
    "copy_scalar",
    "copy_tensor",
    "copy_vector",
    "reconstruct_axis",
]
