"""The Daf data-axes format on Zarr: directory, ZIP, multi-data-set ZIP, memory and HTTP.

See :func:`open_daf`, :func:`memory_daf` and :class:`ZarrDaf`; :func:`viewer` (views: axes and
properties defined by queries) and :func:`chain_reader`/:func:`chain_writer` (chains: data sets
read as one); :func:`complete_chain`/:func:`complete_daf` (data sets that name the data set
they extend, opened with all their bases).
"""

from __future__ import annotations

from .chain import chain_reader, chain_writer
from .complete import complete_chain, complete_daf
from .copy import convert_daf, copy_daf
from .describe import describe_property
from .interface import DafReader
from .names import parse_daf_path
from .view import viewer
from .zarrdaf import ZarrDaf, memory_daf, open_daf

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
