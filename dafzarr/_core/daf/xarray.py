"""A ZarrDaf data set as an ``xarray.Dataset``: axes as dimensions, properties as variables.

The naming scheme (the same for :meth:`ZarrDaf.to_xarray` and ``xr.open_dataset(...,
engine="daf")``):

* every axis is a dimension of its own name, with the axis' entry names as its coordinate;
* the vector ``age`` of the axis ``cell`` is the variable ``cell.age``, dims ``("cell",)``;
* the matrix ``UMIs`` stored with rows ``cell`` and columns ``gene`` is the variable
  ``cell.gene.UMIs``, dims ``("cell", "gene")``; a matrix stored in both layouts (Daf's
  relayout) is two variables, ``cell.gene.UMIs`` and ``gene.cell.UMIs``, each the view of
  its own stored bytes. The columns of a square matrix (rows and columns ``cell``) run along
  the dimension ``cell_columns``, whose coordinate holds the same entry names;
* scalars are the Dataset's attributes.

Each variable's attributes name the Daf property (``daf_axis``/``daf_vector`` or
``daf_rows_axis``/``daf_columns_axis``/``daf_matrix``). Two properties whose names map to
one variable name (a vector ``gene.UMIs`` of ``cell`` beside the matrix ``UMIs`` of
``cell`` x ``gene``) raise :class:`~dafzarr.errors.UnsupportedDafError` naming both, unless that
name is in ``drop_variables``.

Dense matrices are Daf's column-major bytes: a Fortran-ordered view in ``(rows, columns)``
order, as :meth:`ZarrDaf.get_np_matrix` returns them. Sparse matrices become
``sparse.GCXS`` arrays (pydata ``sparse``, compressed along the columns as Daf stores them)
when that package is installed, and are otherwise left out with an
:class:`~dafzarr.errors.UnsupportedVariableWarning` naming them. Sparse vectors are dense,
as :meth:`ZarrDaf.get_np_vector` returns them.

Any reader (a view, a chain) gives its Dataset the same way (``to_xarray()``): a matrix is
sparse when the reader returns it sparse, and a vector is dense.

This module imports xarray; ``import dafzarr`` does not import it.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ...errors import UnsupportedDafError, UnsupportedVariableWarning
from . import layout as lay
from .interface import DafReader
from .names import join_path
from .storage import DafStorage

__all__ = ["DafVariable", "build_dataset", "daf_to_xarray", "plan_variables", "variable_values"]


@dataclass(frozen=True)
class DafVariable:
    """One vector or one stored matrix layout, as an xarray variable."""

    #: The variable's name (``cell.age``, ``cell.gene.UMIs``).
    name: str
    #: The Daf property's name (``age``, ``UMIs``).
    prop: str
    #: ``(axis,)`` for a vector, ``(rows_axis, columns_axis)`` for a matrix.
    axes: tuple[str, ...]
    #: The variable's dimensions (the axes, ``<axis>_columns`` for a square matrix's columns).
    dims: tuple[str, ...]
    #: The property's node in the data set (``vectors/cell/age``).
    path: str
    #: Whether it is stored sparse (nonzero positions and values).
    sparse: bool

    @property
    def what(self) -> str:
        """The property in words, for messages."""
        if len(self.axes) == 1:
            return f"vector {self.prop} of the axis {self.axes[0]}"
        return f"matrix {self.prop} of the axes {self.axes[0]} x {self.axes[1]}"

    @property
    def attrs(self) -> dict[str, str]:
        """The variable's attributes: which Daf property it is."""
        if len(self.axes) == 1:
            return {"daf_axis": self.axes[0], "daf_vector": self.prop}
        return {
            "daf_rows_axis": self.axes[0],
            "daf_columns_axis": self.axes[1],
            "daf_matrix": self.prop,
        }


def columns_dim(axis: str) -> str:
    """The dimension of the columns of a square matrix of ``axis``."""
    return f"{axis}_columns"


def plan_variables(
    daf: DafReader, drop_variables: Iterable[str] | None = None
) -> tuple[dict[str, str], list[DafVariable]]:
    """The coordinates (dimension name -> axis) and variables of ``daf``'s Dataset, without
    reading any property's values; names in ``drop_variables`` are left out.

    Two names that collide (among dimensions, coordinates and variables) raise
    :class:`UnsupportedDafError` naming both, unless the name is dropped.
    """
    drop = set(drop_variables or ())
    axes = sorted(daf.axes_set())
    owners: dict[str, str] = {}
    variables: list[DafVariable] = []

    def claim(name: str, what: str) -> bool:
        if name in drop:
            return False
        if name in owners:
            raise UnsupportedDafError(
                f"two Daf properties map to the xarray name {name!r}: the {owners[name]} and "
                f"the {what}\nin the daf data: {_where(daf)}\npass drop_variables=[{name!r}] to "
                "leave both out"
            )
        owners[name] = what
        return True

    coords = {axis: axis for axis in axes if claim(axis, f"axis {axis}")}
    for axis in axes:
        for prop in sorted(daf.vectors_set(axis)):
            path = join_path("vectors", axis, prop)
            var = DafVariable(
                f"{axis}.{prop}", prop, (axis,), (axis,), path, _is_sparse(daf, path, (axis,), prop)
            )
            if claim(var.name, var.what):
                variables.append(var)
    for rows in axes:
        for cols in axes:
            for prop in sorted(daf.matrices_set(rows, cols, relayout=False)):
                path = join_path("matrices", rows, cols, prop)
                dims = (rows, columns_dim(cols) if rows == cols else cols)
                var = DafVariable(
                    f"{rows}.{cols}.{prop}",
                    prop,
                    (rows, cols),
                    dims,
                    path,
                    _is_sparse(daf, path, (rows, cols), prop),
                )
                if claim(var.name, var.what):
                    variables.append(var)
    for var in variables:
        if len(var.axes) == 2 and var.axes[0] == var.axes[1]:
            dim = var.dims[1]
            if dim not in coords and claim(
                dim, f"columns of the square matrices of the axis {var.axes[0]}"
            ):
                coords[dim] = var.axes[0]
    return coords, variables


def _where(daf: DafReader) -> str:
    """The path of a stored data set, or the name of a view or chain."""
    return str(getattr(daf, "_path", daf.name))


def _storage(daf: DafReader) -> DafStorage | None:
    """The node storage of a stored data set (``None`` for a view or a chain)."""
    storage = getattr(daf, "_storage", None)
    return storage if isinstance(storage, DafStorage) else None


def _is_sparse(daf: DafReader, path: str, axes: tuple[str, ...], prop: str) -> bool:
    """Whether a property is stored sparse (any other reader: whether it returns a matrix
    sparse; its vectors are dense)."""
    storage = _storage(daf)
    if storage is not None:
        return storage.node_kind(path) == "group"
    if len(axes) == 1:
        return False
    import scipy.sparse as sp

    return bool(sp.issparse(daf.get_np_matrix(axes[0], axes[1], prop, relayout=False)))


def sparse_module() -> Any:
    """The pydata ``sparse`` package, or ``None`` when it is not installed."""
    try:
        import sparse
    except ImportError:
        return None
    return sparse


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside dafzarr and xarray, for a warning
    issued by the function that calls this one."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and _package(frame) in ("dafzarr", "xarray"):
        frame = frame.f_back
        level += 1
    return level


def _package(frame: Any) -> str:
    return str(frame.f_globals.get("__name__", "")).split(".")[0]


def warn_left_out(daf: DafReader, left_out: list[DafVariable]) -> None:
    """Name the sparse matrices left out of a Dataset for want of the ``sparse`` package
    (the warning points at the caller of ``to_xarray`` or ``xr.open_dataset``)."""
    if left_out:
        warnings.warn(
            f"{_where(daf)}: sparse matrices are left out of the xarray Dataset because the "
            "'sparse' package is not installed (pip install sparse): "
            + ", ".join(f"{v.name} ({v.what})" for v in left_out),
            UnsupportedVariableWarning,
            stacklevel=_user_stacklevel(),
        )


def variable_shape_dtype(daf: DafReader, var: DafVariable) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The variable's shape and element type, from the stored documents only (``daf`` is a
    stored data set)."""
    storage = _storage(daf)
    assert storage is not None
    shape = tuple(daf.axis_length(a) for a in var.axes)
    part = var.path
    if var.sparse:
        part = join_path(var.path, "nzval")
        if storage.node_kind(part) != "array":  # all-true Bool values: nzval is not stored
            return shape, np.dtype(np.bool_)
    dtype = storage.array_info(part).dtype
    return shape, np.dtype(object) if dtype == lay.STRING else np.dtype(dtype)


def variable_values(daf: DafReader, var: DafVariable, sparse: Any) -> Any:
    """The variable's values: the Daf reader's array (a zero-copy view where the property is
    stored flat), a dense copy of a sparse vector, or a ``sparse.GCXS`` matrix."""
    if len(var.axes) == 1:
        return daf.get_np_vector(var.axes[0], var.prop)
    matrix = daf.get_np_matrix(var.axes[0], var.axes[1], var.prop, relayout=False)
    if not var.sparse:
        return matrix
    return sparse.GCXS(
        (matrix.data, matrix.indices, matrix.indptr), shape=matrix.shape, compressed_axes=[1]
    )


def build_dataset(
    daf: DafReader,
    drop_variables: Iterable[str] | None,
    data: Callable[[DafReader, DafVariable, Any], Any],
) -> xr.Dataset:
    """The Dataset of ``daf``: coordinates, attributes, and each variable's ``data(daf,
    variable, sparse)`` (``sparse`` the pydata package, or ``None``: then the sparse matrices
    are left out with a warning)."""
    coords, variables = plan_variables(daf, drop_variables)
    sparse = sparse_module()
    left_out = [v for v in variables if v.sparse and len(v.axes) == 2 and sparse is None]
    warn_left_out(daf, left_out)
    data_vars = {
        v.name: xr.Variable(v.dims, data(daf, v, sparse), attrs=v.attrs)
        for v in variables
        if v not in left_out
    }
    coord_vars = {
        dim: xr.Variable((dim,), daf.axis_np_entries(axis)) for dim, axis in coords.items()
    }
    attrs = {name: daf.get_scalar(name) for name in sorted(daf.scalars_set())}
    return xr.Dataset(data_vars, coords=coord_vars, attrs=attrs)


def daf_to_xarray(daf: DafReader, drop_variables: Iterable[str] | None = None) -> xr.Dataset:
    """The Dataset of :meth:`ZarrDaf.to_xarray` (see the module's docstring)."""
    return build_dataset(daf, drop_variables, variable_values)
