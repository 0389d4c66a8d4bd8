"""Daf operations between data sets: copies with aligned axes, the adapter, concatenation,
axis reconstruction and computation contracts.

The implementation lives in ``dafzarr._core.daf.ops``.
"""

from __future__ import annotations

from .._core.daf.ops import (
    ALL_MATRICES,
    ALL_SCALARS,
    ALL_VECTORS,
    Contract,
    ContractDaf,
    ContractExpectation,
    CreatedOutput,
    ElementType,
    GuaranteedOutput,
    MergeAction,
    OptionalInput,
    OptionalOutput,
    RequiredInput,
    adapter,
    computation,
    concatenate,
    contractor,
    copy_all,
    copy_axis,
    copy_matrix,
    copy_scalar,
    copy_tensor,
    copy_vector,
    reconstruct_axis,
)

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
