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
    from ._attrs import HIDDEN_ATTRIBUTES
    from ._compose import compose, virtualize
    from ._icechunk import to_icechunk
    from ._model import ScanResult, Variable, VirtualArray, VirtualDataset
    from ._placement import PLACEMENT_SCHEMA, place
    from ._scan import scan
    from ._sources import mosaic_sources, scan_many
    from ._stream import ReferenceWriter
    from ._write import REFS_SCHEMA, as_virtual, to_kerchunk_json, write_parquet

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

# Public name -> the private module that defines it.
_SOURCE = {
    "HIDDEN_ATTRIBUTES": "_attrs",
    "PLACEMENT_SCHEMA": "_placement",
    "REFS_SCHEMA": "_write",
    "ReferenceWriter": "_stream",
    "ScanResult": "_model",
    "Variable": "_model",
    "VirtualArray": "_model",
    "VirtualDataset": "_model",
    "as_virtual": "_write",
    "compose": "_compose",
    "mosaic_sources": "_sources",
    "place": "_placement",
    "scan": "_scan",
    "scan_many": "_sources",
    "to_icechunk": "_icechunk",
    "to_kerchunk_json": "_write",
    "virtualize": "_compose",
    "write_parquet": "_write",
}

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all attribute

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module on first use (PEP 562)."""
        if name not in _SOURCE:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{_SOURCE[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
