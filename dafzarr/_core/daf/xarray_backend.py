"""The ``daf`` engine of xarray: ``xr.open_dataset("x.daf.zarr.zip", engine="daf")``.

Registered as the ``xarray.backends`` entry point ``daf``. The Dataset is the one of
:meth:`~dafzarr.daf.ZarrDaf.to_xarray` (see :mod:`._xarray` for the naming scheme), built
lazily: opening reads the documents, the axes' entries (xarray indexes its coordinates) and
the scalars; a vector or matrix is read when its values are asked for, and then only through
the Daf reader (a zero-copy view of a flat property, indexed).

The lazy variables pickle (dask's distributed workers): an unpickled one reopens its data set
read-only by path, once per process while any of them is alive.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ...errors import InvalidArgumentTypeError
from .interface import DafReader
from .names import parse_daf_path
from .xarray import DafVariable, build_dataset, sparse_module, variable_shape_dtype, variable_values
from .zarrdaf import ZarrDaf

__all__ = ["DafBackendArray", "DafBackendEntrypoint"]

_DAF_SUFFIXES = (".daf.zarr", ".daf.zarr.zip")

#: The data sets unpickled lazy variables reopened in this process, by path.
_REOPENED: weakref.WeakValueDictionary[str, ZarrDaf] = weakref.WeakValueDictionary()
_REOPEN_LOCK = threading.Lock()


def _reopen(path: str) -> ZarrDaf:
    """The data set at ``path``, opened read-only once per process while it is in use."""
    with _REOPEN_LOCK:
        daf = _REOPENED.get(path)
        if daf is None:
            daf = ZarrDaf(path, "r")
            _REOPENED[path] = daf
        return daf


class DafBackendArray(BackendArray):
    """One Daf vector or stored matrix layout, read through the Daf reader when indexed."""

    def __init__(self, daf: ZarrDaf, var: DafVariable, sparse: Any) -> None:
        self.daf = daf
        self.var = var
        self.sparse = sparse
        self.shape, self.dtype = variable_shape_dtype(daf, var)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        # pydata sparse arrays take basic indexing; xarray indexes the result further.
        support = (
            indexing.IndexingSupport.BASIC
            if self.var.sparse and len(self.shape) == 2
            else indexing.IndexingSupport.OUTER
        )
        return indexing.explicit_indexing_adapter(key, self.shape, support, self._getitem)

    def _getitem(self, key: tuple[Any, ...]) -> Any:
        values = variable_values(self.daf, self.var, self.sparse)
        if len(key) == 2 and all(isinstance(k, np.ndarray) for k in key):
            return values[np.ix_(*key)]  # outer indexing: rows x columns
        return values[key]

    def __getstate__(self) -> dict[str, Any]:
        if self.daf.path == "memory":
            raise InvalidArgumentTypeError(
                f"can't pickle the lazy variable {self.var.name} of an in-memory daf data set: "
                f"{self.daf.name}\n(write it to a path, or use to_xarray())"
            )
        return {"path": self.daf.path, "var": self.var}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(_reopen(state["path"]), state["var"], sparse_module())  # type: ignore[misc]


def _lazy(daf: DafReader, var: DafVariable, sparse: Any) -> Any:
    """A variable's data, read when indexed."""
    assert isinstance(daf, ZarrDaf)
    return indexing.LazilyIndexedArray(DafBackendArray(daf, var, sparse))


class _Closer:
    """Closes the data set a Dataset opened; a copy in another process closes nothing."""

    def __init__(self, daf: ZarrDaf | None) -> None:
        self.daf = daf

    def __call__(self) -> None:
        if self.daf is not None:
            self.daf.close()

    def __reduce__(self) -> tuple[type[_Closer], tuple[None]]:
        return _Closer, (None,)


class DafBackendEntrypoint(BackendEntrypoint):
    """Opens a ZarrDaf data set (``X.daf.zarr``, ``X.daf.zarr.zip``,
    ``X.dafs.zarr.zip#/group``, ``http(s)://...``, or an open :class:`ZarrDaf`) as an
    ``xarray.Dataset``."""

    description = "Daf data sets stored as Zarr (ZarrDaf) through dafzarr"
    url = "https://github.com/dafzarr/dafzarr"
    open_dataset_parameters = ("filename_or_obj", "drop_variables")

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: str | os.PathLike[Any] | ZarrDaf,
        *,
        drop_variables: str | Iterable[str] | None = None,
    ) -> xr.Dataset:
        """The data set's Dataset, its vectors and matrices read when indexed."""
        if isinstance(drop_variables, str):
            drop_variables = [drop_variables]
        if isinstance(filename_or_obj, ZarrDaf):
            daf, owned = filename_or_obj, False
        else:
            daf, owned = ZarrDaf(os.fspath(filename_or_obj), "r"), True
        try:
            ds = build_dataset(daf, drop_variables, _lazy)
        except BaseException:
            if owned:
                daf.close()
            raise
        if owned:
            ds.set_close(_Closer(daf))
        return ds

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Only the Daf path forms: ``X.daf.zarr`` (a directory), ``X.daf.zarr.zip`` and
        ``X.dafs.zarr.zip#/group``, or an open :class:`ZarrDaf`."""
        if isinstance(filename_or_obj, ZarrDaf):
            return True
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        text = os.fspath(filename_or_obj)
        if not isinstance(text, str) or text.startswith(("http://", "https://")):
            return False
        if ".dafs.zarr.zip#/" in text:
            try:
                parse_daf_path(text)
            except ValueError:
                return False
            return True
        return text.rstrip("/").endswith(_DAF_SUFFIXES)
