"""dafzarr: storing and addressing array data without copies.

* :class:`MmapZipStore` - a crash-safe, zero-copy Zarr store over one ZIP file.
* :func:`open_daf`, :func:`memory_daf`, :class:`ZarrDaf` - the Daf data-axes format on Zarr.
* :func:`viewer`, :func:`chain_reader`, :func:`chain_writer` - Daf views (axes and properties
  defined by queries) and chains (data sets read as one, writes into the last);
  :func:`complete_chain`, :func:`complete_daf` - chains recorded in the data sets themselves.
* :func:`copy_all`, :func:`copy_vector`, :func:`copy_matrix`, ..., :func:`adapter` - Daf
  operations between data sets (copies with axes related by their entries).
* :func:`concatenate`, :class:`MergeAction` - Daf data sets concatenated along axes.
* :func:`parse_query`, :func:`escape_value`, :func:`unescape_value`,
  :func:`query_result_dimensions` - Daf queries (``daf.get_np_query("@ cell : age")``).
* :func:`reconstruct_axis` - an axis rebuilt from a vector that names an entry per element
  (AnnData's per-type data stored per cell).
* :class:`Contract`, :func:`computation`, :func:`contractor` - computations that declare,
  check and document the axes and properties they read and write.
* :class:`ArrayFile` - many n-dimensional arrays in one object, with delta sidecars
  (file-compatible with the ``array-format`` container).
"""

from __future__ import annotations

import os as _os
from importlib import metadata as _metadata

try:
    from . import _posix  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on how the package was installed
    if _os.path.exists(_os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "setup.py")):
        raise ImportError(
            "dafzarr's compiled extensions are missing: build them first "
            "(pip install -e . --no-build-isolation) or run from another directory"
        ) from _exc
    raise

from typing import TYPE_CHECKING as _TYPE_CHECKING

from . import errors as _errors
from ._core.config import show_config
from ._core.io import HttpOptions
from .errors import *  # every class named in dafzarr.errors.__all__
from .zipstore import MmapZipStore

if _TYPE_CHECKING:
    from .arrayfile import ArrayFile, ArrayStats, DeltaCache, FileConfig
    from .daf import (
        ZarrDaf,
        chain_reader,
        chain_writer,
        complete_chain,
        complete_daf,
        memory_daf,
        open_daf,
        viewer,
    )
    from .daf.ops import (
        ALL_MATRICES,
        ALL_SCALARS,
        ALL_VECTORS,
        Contract,
        ContractExpectation,
        CreatedOutput,
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
    from .daf.query import escape_value, parse_query, query_result_dimensions, unescape_value


# Imported on first use: the Daf layer and ArrayFile bring scipy and their own modules, which a
# process that only opens ZIP stores need not hold (16 MB of memory and 0.3 s of import).
_LAZY = {
    "ArrayFile": "arrayfile",
    "ArrayStats": "arrayfile",
    "DeltaCache": "arrayfile",
    "FileConfig": "arrayfile",
    "ZarrDaf": "daf",
    "memory_daf": "daf",
    "open_daf": "daf",
    "viewer": "daf",
    "chain_reader": "daf",
    "chain_writer": "daf",
    "complete_chain": "daf",
    "complete_daf": "daf",
    "adapter": "daf.ops",
    "copy_all": "daf.ops",
    "copy_axis": "daf.ops",
    "copy_matrix": "daf.ops",
    "copy_scalar": "daf.ops",
    "copy_tensor": "daf.ops",
    "copy_vector": "daf.ops",
    "Contract": "daf.ops",
    "ContractExpectation": "daf.ops",
    "CreatedOutput": "daf.ops",
    "GuaranteedOutput": "daf.ops",
    "OptionalInput": "daf.ops",
    "OptionalOutput": "daf.ops",
    "RequiredInput": "daf.ops",
    "computation": "daf.ops",
    "contractor": "daf.ops",
    "reconstruct_axis": "daf.ops",
    "ALL_MATRICES": "daf.ops",
    "ALL_SCALARS": "daf.ops",
    "ALL_VECTORS": "daf.ops",
    "MergeAction": "daf.ops",
    "concatenate": "daf.ops",
    "escape_value": "daf.query",
    "parse_query": "daf.query",
    "query_result_dimensions": "daf.query",
    "unescape_value": "daf.query",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dafzarr' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


try:  # the version is defined once, in pyproject.toml; the installed metadata carries it
    __version__ = _metadata.version("dafzarr")
except _metadata.PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "ALL_MATRICES",
    "ALL_SCALARS",
    "ALL_VECTORS",
    "ArrayFile",
    "ArrayStats",
    "Contract",
    "ContractExpectation",
    "CreatedOutput",
    "DeltaCache",
    "FileConfig",
    "GuaranteedOutput",
    "HttpOptions",
    "MergeAction",
    "MmapZipStore",
    "OptionalInput",
    "OptionalOutput",
    "RequiredInput",
    "ZarrDaf",
    "__version__",
    "adapter",
    "chain_reader",
    "chain_writer",
    "complete_chain",
    "complete_daf",
    "computation",
    "concatenate",
    "contractor",
    "copy_all",
    "copy_axis",
    "copy_matrix",
    "copy_scalar",
    "copy_tensor",
    "copy_vector",
    "escape_value",
    "memory_daf",
    "open_daf",
    "parse_query",
    "query_result_dimensions",
    "reconstruct_axis",
    "show_config",
    "unescape_value",
    "viewer",
]
# Every exception and warning class of :mod:`dafzarr.errors` (a light module) is a name of the
# package too, from its one list.
__all__ += _errors.__all__
