"""Virtual reference stores: NetCDF4/HDF5 collections as kerchunk-Parquet without copying data.

* :func:`scan` walks one file's chunk indexes with HDF5's ``H5Dchunk_iter`` (from C) into
  dense numpy columns, with each variable's zarr metadata.
* :class:`ReferenceWriter` writes a store whose references arrive in pieces, in memory
  bounded by one record, whatever their number.
* :func:`write_parquet` / :func:`to_kerchunk_json` write a reference store that fsspec,
  xarray, zarr and VirtualiZarr read.
* :func:`virtualize` composes many files along a dimension into one store, refusing
  combinations that would change the data's meaning.
* :func:`to_icechunk` publishes a store (or a composed dataset) into an Icechunk repository:
  virtual chunk references, native chunks for the values it holds itself, Zarr v3 metadata.

The names below are loaded from their modules on first use, so that importing ``dafzarr``
(and starting its command line) does not load h5py and pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._core.refs.attrs import HIDDEN_ATTRIBUTES
    from .._core.refs.compose import compose, virtualize
    from .._core.refs.icechunk import to_icechunk
    from .._core.refs.kerchunk import REFS_SCHEMA, as_virtual, to_kerchunk_json, write_parquet
    from .._core.refs.model import ScanResult, Variable
    from .._core.refs.placement import PLACEMENT_SCHEMA, place
    from .._core.refs.scan import scan
    from .._core.refs.source_files import mosaic_sources, scan_many
    from .._core.refs.stream import ReferenceWriter
    from .._core.refs.virtual import VirtualArray, VirtualDataset

__all__ = [
    "HIDDEN_ATTRIBUTES",
    "PLACEMENT_SCHEMA",
    "REFS_SCHEMA",
    "ReferenceWriter",
    "ScanResult",
    "Variable",
    "VirtualArray",
    "VirtualDataset",
    "as_virtual",
    "compose",
    "mosaic_sources",
    "place",
    "scan",
    "scan_many",
    "to_icechunk",
    "to_kerchunk_json",
    "virtualize",
    "write_parquet",
]

# Public name -> the module of ``dafzarr._core.refs`` that defines it.
_SOURCE = {
    "HIDDEN_ATTRIBUTES": "attrs",
    "PLACEMENT_SCHEMA": "placement",
    "REFS_SCHEMA": "kerchunk",
    "ReferenceWriter": "stream",
    "ScanResult": "model",
    "Variable": "model",
    "VirtualArray": "virtual",
    "VirtualDataset": "virtual",
    "as_virtual": "kerchunk",
    "compose": "compose",
    "mosaic_sources": "source_files",
    "place": "placement",
    "scan": "scan",
    "scan_many": "source_files",
    "to_icechunk": "icechunk",
    "to_kerchunk_json": "kerchunk",
    "virtualize": "compose",
    "write_parquet": "kerchunk",
}

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all attribute

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module on first use (PEP 562)."""
        if name not in _SOURCE:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"dafzarr._core.refs.{_SOURCE[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
