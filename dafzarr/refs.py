"""Virtual reference stores: NetCDF4/HDF5 collections as kerchunk-Parquet without copying data.

* :func:`scan` walks one file's chunk indexes with HDF5's ``H5Dchunk_iter`` (from C) into
  dense numpy columns, with each variable's zarr metadata.
* :func:`write_parquet` / :func:`to_kerchunk_json` write a reference store that fsspec,
  xarray, zarr and VirtualiZarr read.
* :func:`virtualize` composes many files along a dimension into one store, refusing
  combinations that would change the data's meaning.
"""

from __future__ import annotations

from ._refs_compose import PLACEMENT_SCHEMA, compose, mosaic_sources, place, scan_many, virtualize
from ._refs_scan import HIDDEN_ATTRIBUTES, ScanResult, Variable, scan
from ._refs_write import (
    REFS_SCHEMA,
    VirtualArray,
    VirtualDataset,
    as_virtual,
    to_kerchunk_json,
    write_parquet,
)

__all__ = [
    "HIDDEN_ATTRIBUTES",
    "PLACEMENT_SCHEMA",
    "REFS_SCHEMA",
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
    "to_kerchunk_json",
    "virtualize",
    "write_parquet",
]
