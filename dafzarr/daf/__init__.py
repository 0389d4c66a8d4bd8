"""The Daf data-axes format on Zarr: directory, ZIP, multi-data-set ZIP, memory and HTTP.

The implementation lives in ``dafzarr._core.daf``.
"""

from __future__ import annotations

from .._core.daf import (
    DafReader,
    ZarrDaf,
    chain_reader,
    chain_writer,
    complete_chain,
    complete_daf,
    convert_daf,
    copy_daf,
    describe_property,
    memory_daf,
    open_daf,
    parse_daf_path,
    viewer,
)
from . import query  # noqa: F401  (``dafzarr.daf.query`` loads with the data sets)

__all__ = [
    "DafReader",
    "ZarrDaf",
    "chain_reader",
    "chain_writer",
    "complete_chain",
    "complete_daf",
    "convert_daf",
    "copy_daf",
    "describe_property",
    "memory_daf",
    "open_daf",
    "parse_daf_path",
    "viewer",
]
