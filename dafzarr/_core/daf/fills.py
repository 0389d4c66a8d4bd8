"""Two-phase fills of a ZarrDaf: ``empty_*`` reserve a new property's storage, yield it for
filling in place (no second copy), and publish it when the block exits without error."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from ..casting import checked_view
from .axes import Axes
from .matrices import Matrices
from .names import check_name, check_not_reserved, join_path
from .storage import DafStorage
from .values import default_indtype, index_dtype, numeric
from .vectors import Vectors


class Fills:
    """``empty_dense_vector``, ``empty_sparse_vector``, ``empty_dense_matrix``,
    ``empty_sparse_matrix``."""

    def __init__(
        self, storage: DafStorage, axes: Axes, vectors: Vectors, matrices: Matrices
    ) -> None:
        self._storage = storage
        self._axes = axes
        self._vectors = vectors
        self._matrices = matrices

    @contextlib.contextmanager
    def _filling(
        self,
        path: str,
        replaces: Sequence[tuple[str, str, bool, str]],
        parts: list[tuple[str, np.dtype[Any], tuple[int, ...]]],
        check: Any = None,
    ) -> Iterator[list[np.ndarray[Any, Any]]]:
        """Reserve the chunks of ``parts`` (name, dtype, Zarr shape) of the property at
        ``path``, yield them for filling, then publish their documents. The properties
        ``replaces`` names (as :meth:`DafStorage.changing`) stay, readable and unchanged, until the
        fill succeeds (on a ZIP, other threads find them missing meanwhile); a fill that
        raises leaves no trace.

        On a ZIP the whole fill is one batch: the old properties are deleted first (a
        reservation cannot supersede an entry) and the batch's rollback restores them.
        Other backends reserve the chunks aside and delete the old properties once the fill
        passed.
        """
        self._storage.check_writable()
        L = self._storage.layout
        b = self._storage.backend
        sparse = parts[0][0] != ""
        doomed = self._storage.doomed(replaces)
        before, after = (doomed, []) if b.rolls_back else ([], doomed)
        lock = self._storage.lock
        # Entered first, left last: the lock (one change for other threads' reads) is held
        # from the publication, or the failure, through the ZIP batch's commit or rollback;
        # not while the caller fills (its threads may read the data set meanwhile).
        with (
            contextlib.ExitStack() as publishing,
            self._storage.io(f"filling {replaces[0][1]}"),
            self._storage.undoable(bool(doomed)),
        ):
            if before:
                with lock:
                    for old in before:
                        self._storage.delete_node(old)
            keys: list[str] = []
            views: list[np.ndarray[Any, Any]] = []
            try:
                for part, dt, shape in parts:
                    apath = join_path(path, part)
                    nbytes = math.prod(shape) * dt.itemsize
                    if nbytes:
                        key = L.chunk_key(apath, len(shape))
                        keys.append(key)
                        buf = b.reserve(key, nbytes)
                        view = buf.view(dt).reshape(shape)
                    else:
                        view = np.zeros(shape, dt)
                    views.append(checked_view(view, f"{self._storage.path}: {apath}"))
                yield views
                if check is not None:
                    check(*views)
            except BaseException:
                publishing.enter_context(lock)
                for key in keys:
                    b.abandon(key)
                raise
            publishing.enter_context(lock)
            for old in after:
                self._storage.delete_node(old)
            for key in keys:
                b.seal(key)
            items: list[tuple[str, Any]] = []
            for part, dt, shape in parts:
                items += L.array_docs(join_path(path, part), dt, shape).items()
            if sparse:
                items += L.group_docs(path).items()
            self._storage.write(items)

    @contextlib.contextmanager
    def empty_dense_vector(
        self, axis: str, name: str, eltype: Any, *, overwrite: bool = False
    ) -> Iterator[np.ndarray[Any, Any]]:
        """``ZarrDaf.empty_dense_vector``: reserve the vector's chunk, yield it, publish it."""
        self._axes.require_axis(axis)
        check_name(name, "vector")
        check_not_reserved(axis, name, self._storage.name)
        dt = numeric(eltype, f"vector {name!r}")
        n = self._axes.axis_length(axis)
        path = join_path("vectors", axis, name)
        with self._filling(
            path, self._vectors.vector_replace(path, axis, name, overwrite), [("", dt, (n,))]
        ) as (v,):
            yield v

    @contextlib.contextmanager
    def empty_sparse_vector(
        self,
        axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        indtype: Any = None,
        *,
        overwrite: bool = False,
    ) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """``ZarrDaf.empty_sparse_vector``: reserve ``nzind`` and ``nzval``, yield them,
        check and publish them."""
        self._axes.require_axis(axis)
        check_name(name, "vector")
        check_not_reserved(axis, name, self._storage.name)
        dt = numeric(eltype, f"vector {name!r}")
        n = self._axes.axis_length(axis)
        idt = default_indtype(n) if indtype is None else index_dtype(indtype, n, name)
        path = join_path("vectors", axis, name)

        def check(nzind: np.ndarray[Any, Any], _nzval: np.ndarray[Any, Any]) -> None:
            if nzind.size and (
                int(nzind.min()) < 1
                or int(nzind.max()) > n
                or np.any(np.diff(nzind.astype(np.int64)) <= 0)
            ):
                raise InvalidArgumentError(
                    f"{self._storage.path}: {path}/nzind must be increasing 1-based "
                    f"indices in 1..{n}"
                )

        with self._filling(
            path,
            self._vectors.vector_replace(path, axis, name, overwrite),
            [("nzind", idt, (int(nnz),)), ("nzval", dt, (int(nnz),))],
            check,
        ) as (nzind, nzval):
            yield nzind, nzval

    @contextlib.contextmanager
    def empty_dense_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        *,
        overwrite: bool = False,
    ) -> Iterator[np.ndarray[Any, Any]]:
        """``ZarrDaf.empty_dense_matrix``: reserve the matrix' chunk, yield it, publish it."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        check_name(name, "matrix")
        dt = numeric(eltype, f"matrix {name!r}")
        nr, nc = self._axes.axis_length(rows_axis), self._axes.axis_length(columns_axis)
        with self._filling(
            join_path("matrices", rows_axis, columns_axis, name),
            self._matrices.matrix_replaces(
                rows_axis, columns_axis, name, overwrite, relayout=False
            ),
            [("", dt, (nc, nr))],
        ) as (m,):
            yield m.T

    @contextlib.contextmanager
    def empty_sparse_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        indtype: Any = None,
        *,
        overwrite: bool = False,
    ) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """``ZarrDaf.empty_sparse_matrix``: reserve ``colptr``, ``rowval`` and ``nzval``,
        yield them, check and publish them."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        check_name(name, "matrix")
        dt = numeric(eltype, f"matrix {name!r}")
        nr, nc = self._axes.axis_length(rows_axis), self._axes.axis_length(columns_axis)
        nnz = int(nnz)
        size = max(nr, nnz + 1)
        idt = default_indtype(size) if indtype is None else index_dtype(indtype, size, name)
        path = join_path("matrices", rows_axis, columns_axis, name)

        def check(
            colptr: np.ndarray[Any, Any], rowval: np.ndarray[Any, Any], _nzval: np.ndarray[Any, Any]
        ) -> None:
            c64 = colptr.astype(np.int64)
            if c64[0] != 1 or c64[-1] != nnz + 1 or np.any(np.diff(c64) < 0):
                raise InvalidArgumentError(
                    f"{self._storage.path}: {path}/colptr must be a 1-based CSC column "
                    f"pointer from 1 to {nnz + 1}"
                )
            if rowval.size and (int(rowval.min()) < 1 or int(rowval.max()) > nr):
                raise InvalidArgumentError(
                    f"{self._storage.path}: {path}/rowval must hold 1-based rows in 1..{nr}"
                )

        with self._filling(
            path,
            self._matrices.matrix_replaces(
                rows_axis, columns_axis, name, overwrite, relayout=False
            ),
            [("colptr", idt, (nc + 1,)), ("rowval", idt, (nnz,)), ("nzval", dt, (nnz,))],
            check,
        ) as (colptr, rowval, nzval):
            colptr[0] = 1
            colptr[1:] = nnz + 1
            yield colptr, rowval, nzval
