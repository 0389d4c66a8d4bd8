"""ZarrDaf: a Daf data set (named axes, scalars, vectors, matrices) stored as a Zarr group.

Reads of dense vectors and matrices stored as one uncompressed chunk are zero-copy, read-only
numpy views of the file (directory), of the archive mapping (ZIP) or of the stored buffer
(memory). Writes publish every property atomically: its chunks first, then the documents that
make it visible (children before parents), then the consolidated metadata (directories).

The class is a façade over parts it composes, one per concern, each owning its state and
handed the parts it works with: :mod:`.storage` (nodes, writes, consolidated metadata, over
a backend and a layout), :mod:`.scalars`, :mod:`.axes` (with the cache of their entries),
:mod:`.vectors`, :mod:`.matrices`, :mod:`.fills` (``empty_*``) and :mod:`.describe`; the
query methods come from :mod:`.queries` (Daf queries, evaluated by :mod:`.query` over the
public reader API, results kept in this handle's query cache); :mod:`.open` finds the
backend of a path.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import TYPE_CHECKING, Any, Literal, Self

from ...errors import InvalidArgumentError
from ..aliases import OpenMode
from ..documented import documented_by
from ..io import HttpOptions
from ..ioerror import storage_io
from . import layout as lay
from .axes import Axes
from .backends_zip import ZipBackend
from .describe import Description
from .fills import Fills
from .interface import DafReader, DafWriter
from .matrices import Matrices
from .names import unique_name
from .open import create_aside, create_zip_aside, open_backend
from .queries import Queries
from .query.cache import QueryCache
from .scalars import Scalars
from .storage import MODES, UNDEF, DafStorage
from .vectors import Vectors

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    import numpy as np
    import xarray

    from .backends import DafBackend

__all__ = ["ZarrDaf", "memory_daf", "open_daf"]


class ZarrDaf(Queries):
    """A Daf data set stored as a Zarr group (see :func:`open_daf` for the path forms).

    Parameters
    ----------
    path
        ``X.daf.zarr`` (directory), ``X.daf.zarr.zip`` (ZIP), ``X.dafs.zarr.zip#/group``
        (one of several data sets in one ZIP), ``http(s)://...`` (read-only), or ``None``
        for an in-memory data set.
    mode
        ``"r"`` read-only (writers raise), ``"r+"`` read-write (must exist), ``"w+"``
        read-write (created if missing), ``"w"`` created or truncated. A new data set (modes
        ``"w"`` and ``"w+"``), and a directory opened ``"w"``, is built beside its path and
        takes its place with one rename (a ZIP opened ``"w"`` is emptied and given its new
        group in one commit): a crash leaves the old contents (or nothing) or the new data
        set, never a store without its group.
    name
        The data set's name; default: the stored scalar ``name``, else the full path.
    zarr_format
        Layout of a newly created data set: 2 (default) or 3 (DataAxesFormats.jl 0.3.0).
        An existing store keeps its own layout.
    max_file_size
        ZIP only: the largest size the archive may reach while it is open for writing
        (see :class:`~dafzarr.zipstore.MmapZipStore`; default 1 TiB, or less under an
        address-space limit such as ``ulimit -v``).
    append_only
        ZIP only: refuse every delete and overwrite (``AppendOnlyError``), as
        DataAxesFormats.jl's ZIP backend does; by default they work as on directories.
        Mode ``"w"`` on a data set that holds anything is refused too (use ``"w+"``).
    lock
        ZIP only: ``False`` opens for writing without the archive's writer lock, for file
        systems without ``flock`` (NFS without a lock daemon, Lustre mounted without
        ``flock``), where a writable open raises :class:`~dafzarr.errors.StorageLockError`
        otherwise. You then guarantee that no other process writes the archive meanwhile
        (see :class:`~dafzarr.zipstore.MmapZipStore`).
    http
        Deadline, retries and limits of reads over HTTP(S) (:class:`dafzarr.HttpOptions`);
        default: ``HttpOptions()``.
    durable
        Make every write durable before it returns, also across a power loss or an
        operating-system crash: ``fsync`` of the files and directories written (directory)
        or the archive's ``durable=True`` (ZIP; see :class:`~dafzarr.zipstore.MmapZipStore`).
        Without it, a process crash still leaves each write whole or absent, but after a
        power loss a directory data set may hold a property half-written or empty, and a
        ZIP one may need a writable open to recover and may lose its recent writes.

    Raises
    ------
    DafNotFoundError
        Mode ``"r"`` or ``"r+"`` and nothing at ``path``.
    DafFormatError, InvalidArgumentError
        ``path`` has none of the forms above; an unknown ``mode`` or ``zarr_format``.
    StorageLockError, StorageIOError
        The store cannot be locked, read or written.

    Examples
    --------
    >>> dafzarr.ZarrDaf("cells.daf.zarr", "w").add_axis("cell", ["A", "B"]).close()
    >>> with dafzarr.ZarrDaf("cells.daf.zarr") as daf:
    ...     daf.read_only, daf.axis_np_entries("cell").tolist()
    (True, ['A', 'B'])
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        mode: OpenMode = "r",
        *,
        name: str | None = None,
        zarr_format: int = 2,
        max_file_size: int | None = None,
        append_only: bool = False,
        http: HttpOptions | None = None,
        lock: bool = True,
        durable: bool = False,
    ) -> None:
        if mode not in MODES:
            raise InvalidArgumentError(f"invalid mode: {mode}")
        lay.layout_for(zarr_format)
        self._query_cache = QueryCache()
        self._finalizer: Any = None
        where = "memory" if path is None else os.fspath(path)
        with storage_io(f"opening the data set (mode {mode!r})", where):
            storage = self._open(
                path, mode, zarr_format, max_file_size, append_only, http, lock, durable
            )
        self._compose(storage)
        stored = self.get_scalar("name", default=None) if name is None else None
        base = name if name is not None else (str(stored) if stored is not None else storage.path)
        if storage.read_only:
            base = f"{base}.read_only" if name is None else base
        self._name = unique_name(base)
        storage.name = self._name

    def _open(
        self,
        path: str | os.PathLike[str] | None,
        mode: OpenMode,
        zarr_format: int,
        max_file_size: int | None,
        append_only: bool,
        http: HttpOptions | None,
        lock: bool,
        durable: bool = False,
    ) -> DafStorage:
        """Open the backend and make (or adopt) the data set's root group: its storage."""
        opened = open_backend(path, mode, max_file_size, append_only, http, lock, durable)
        storage = DafStorage(opened.backend, opened.path, mode)
        if isinstance(opened.backend, ZipBackend) and not opened.aside:
            self._finalizer = weakref.finalize(self, opened.backend.close)
        try:
            if opened.aside and isinstance(opened.backend, ZipBackend):
                storage.backend = create_zip_aside(
                    opened.path.split("#/")[0],
                    opened.backend,
                    durable,
                    _init_aside(storage, zarr_format),
                )
                self._finalizer = weakref.finalize(self, storage.backend.close)
            elif opened.aside:
                storage.backend = create_aside(
                    opened.path, durable, _init_aside(storage, zarr_format)
                )
            elif opened.truncate_group:
                # Mode "w" on an existing ZIP data set: its keys go and a fresh data set
                # takes their place in one commit (the rest of an archive of several
                # data sets stays).
                backend = storage.backend
                assert isinstance(backend, ZipBackend)
                with storage.lock, backend.transaction():
                    backend.truncate()
                    storage.init_group(zarr_format, opened.path)
            else:
                storage.init_group(zarr_format, opened.path)
        except BaseException:
            if path is not None:
                storage.backend.close()
            raise
        return storage

    def _compose(self, storage: DafStorage) -> None:
        """Make the parts over ``storage``, each handed the parts it works with."""
        self._storage = storage
        self._scalars = Scalars(storage)
        self._axes = Axes(storage)
        self._vectors = Vectors(storage, self._axes)
        self._matrices = Matrices(storage, self._axes)
        self._fills = Fills(storage, self._axes, self._vectors, self._matrices)
        self._description = Description(
            storage, self._scalars, self._axes, self._vectors, self._matrices
        )
        # The node-level entry points the package's operations (copies, concatenation,
        # xarray, queries) and its tests use on a stored data set.
        self._backend: DafBackend = storage.backend
        self._layout: lay.ZarrLayout = storage.layout
        self._path: str = storage.path
        self._lock = storage.lock
        self._io = storage.io
        self._changing = storage.changing
        self._write = storage.write
        self._array_items = storage.array_items
        self._node_kind = storage.node_kind
        self._array_info = storage.array_info
        self._read_array = storage.read_array
        self._check_writable = storage.check_writable
        self._data_version = storage.data_version
        self._axis_cache = self._axes.cache
        self._require_axis = self._axes.require_axis
        self._repeated_entries = self._axes.repeated_entries
        self._sparse_vector = self._vectors.sparse_vector
        self._matrix_kind = self._matrices.matrix_kind
        self._matrix_replaces = self._matrices.matrix_replaces
        self._stored_csc_arrays = self._matrices.stored_csc_arrays
        self._property = self._description.property_info

    def _add_checked_axis(self, axis: str, names: Any, overwrite: bool = False) -> Self:
        """:meth:`add_axis` of entries known to be unique strings."""
        self._axes.add_checked_axis(axis, names, overwrite)
        return self

    # --- Identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The data set's name (unique in this process)."""
        return self._name

    @property
    def path(self) -> str:
        """The full path: absolute container path (plus ``#/group``), URL, or ``memory``."""
        return self._storage.path

    @property
    def mode(self) -> str:
        """The mode the data set was opened with."""
        return self._storage.mode

    @property
    def read_only(self) -> bool:
        """Whether writers raise (mode ``r``, HTTP, read-only views)."""
        return self._storage.read_only

    @property
    def zarr_format(self) -> int:
        """The Zarr layout generation of the store: 2 or 3."""
        return self._storage.layout.zarr_format

    def __repr__(self) -> str:
        return f"{'ReadOnly ' if self.read_only else ''}ZarrDaf {self._name}"

    def close(self) -> None:
        """Release the store (ZIP: drop this handle's share of the archive) and the results
        and tables of this handle's query cache.

        Raises
        ------
        DafzarrError
            None of its own.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.close()
        """
        self._query_cache.clear()
        if self._finalizer is not None:  # only the opening handle owns a ZIP store share
            self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def to_xarray(self, *, drop_variables: Iterable[str] | None = None) -> xarray.Dataset:
        """The data set as an ``xarray.Dataset`` (needs xarray).

        Axes are dimensions with their entry names as coordinates; the vector ``age`` of the
        axis ``cell`` is the variable ``cell.age``; the matrix ``UMIs`` stored with rows
        ``cell`` and columns ``gene`` is ``cell.gene.UMIs`` with dims ``("cell", "gene")``
        (each stored layout its own variable; the columns of a square matrix of ``cell`` run
        along ``cell_columns``); scalars are the attributes. Flat properties are zero-copy
        views of the stored bytes; sparse matrices are ``sparse.GCXS`` arrays, left out with
        an :class:`~dafzarr.errors.UnsupportedVariableWarning` naming them when the pydata
        ``sparse`` package is not installed. Names in ``drop_variables`` are left out. The
        same Dataset, read lazily: ``xr.open_dataset(path, engine="daf")``.

        Parameters
        ----------
        drop_variables : iterable of str, optional
            Variables to leave out.

        Returns
        -------
        xarray.Dataset
            The data set.

        Raises
        ------
        DafzarrError
            A property cannot be read.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", [3, 5]).to_xarray()["cell.age"].values.tolist()
        [3, 5]
        """
        from .xarray import daf_to_xarray

        return daf_to_xarray(self, drop_variables)

    def read_only_view(self) -> ZarrDaf:
        """Another handle on the same data whose writers raise (named ``<name>.read_only``).

        Returns
        -------
        ZarrDaf
            The read-only handle.

        Raises
        ------
        DafzarrError
            None for an open data set.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.read_only_view().read_only
        True
        """
        view = object.__new__(ZarrDaf)
        view._finalizer = None
        view._query_cache = QueryCache()
        view._name = unique_name(f"{self._name}.read_only")
        view._compose(self._storage.read_only_copy(view._name))
        return view

    # --- Scalars -------------------------------------------------------------------------------

    @documented_by(DafReader.has_scalar)
    def has_scalar(self, name: str) -> bool:
        return self._scalars.has_scalar(name)

    @documented_by(DafReader.scalars_set)
    def scalars_set(self) -> set[str]:
        return self._scalars.scalars_set()

    @documented_by(DafReader.get_scalar)
    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        return self._scalars.get_scalar(name, default=default)

    @documented_by(DafWriter.set_scalar)
    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> Self:
        self._scalars.set_scalar(name, value, overwrite=overwrite)
        return self

    @documented_by(DafWriter.delete_scalar)
    def delete_scalar(self, name: str, *, must_exist: bool = True) -> Self:
        self._scalars.delete_scalar(name, must_exist=must_exist)
        return self

    # --- Axes ----------------------------------------------------------------------------------

    @documented_by(DafReader.has_axis)
    def has_axis(self, axis: str) -> bool:
        return self._axes.has_axis(axis)

    @documented_by(DafReader.axes_set)
    def axes_set(self) -> set[str]:
        return self._axes.axes_set()

    @documented_by(DafReader.axis_length)
    def axis_length(self, axis: str) -> int:
        return self._axes.axis_length(axis)

    @documented_by(DafReader.axis_np_entries)
    def axis_np_entries(self, axis: str) -> np.ndarray[Any, Any]:
        return self._axes.axis_np_entries(axis)

    axis_np_vector = axis_np_entries

    @documented_by(DafWriter.axis_dict)
    def axis_dict(self, axis: str) -> dict[str, int]:
        return self._axes.axis_dict(axis)

    @documented_by(DafWriter.axis_np_indices)
    def axis_np_indices(
        self,
        axis: str,
        names: Sequence[str],
        *,
        allow_empty: bool = False,
        allow_missing: bool = False,
    ) -> np.ndarray[Any, Any]:
        return self._axes.axis_np_indices(
            axis, names, allow_empty=allow_empty, allow_missing=allow_missing
        )

    @documented_by(DafWriter.add_axis)
    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> Self:
        self._axes.add_axis(axis, entries, overwrite=overwrite)
        return self

    @documented_by(DafWriter.delete_axis)
    def delete_axis(self, axis: str, *, must_exist: bool = True) -> Self:
        self._axes.delete_axis(axis, must_exist=must_exist)
        return self

    # --- Vectors -------------------------------------------------------------------------------

    @documented_by(DafReader.has_vector)
    def has_vector(self, axis: str, name: str) -> bool:
        return self._vectors.has_vector(axis, name)

    @documented_by(DafReader.vectors_set)
    def vectors_set(self, axis: str) -> set[str]:
        return self._vectors.vectors_set(axis)

    @documented_by(DafReader.get_np_vector)
    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> np.ndarray[Any, Any]:
        return self._vectors.get_np_vector(axis, name, default=default)

    @documented_by(DafWriter.get_pd_vector)
    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        return self._vectors.get_pd_vector(axis, name, default=default)

    @documented_by(DafWriter.set_vector)
    def set_vector(
        self,
        axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        indtype: Any = None,
    ) -> Self:
        self._vectors.set_vector(axis, name, value, overwrite=overwrite, indtype=indtype)
        return self

    @documented_by(DafWriter.delete_vector)
    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> Self:
        self._vectors.delete_vector(axis, name, must_exist=must_exist)
        return self

    # --- Matrices ------------------------------------------------------------------------------

    @documented_by(DafReader.has_matrix)
    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        return self._matrices.has_matrix(rows_axis, columns_axis, name, relayout=relayout)

    @documented_by(DafReader.matrices_set)
    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        return self._matrices.matrices_set(rows_axis, columns_axis, relayout=relayout)

    @documented_by(DafReader.get_np_matrix)
    def get_np_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
        sparse_class: Literal["csc_matrix", "csc_array"] = "csc_matrix",
    ) -> Any:
        return self._matrices.get_np_matrix(
            rows_axis,
            columns_axis,
            name,
            default=default,
            relayout=relayout,
            sparse_class=sparse_class,
        )

    @documented_by(DafWriter.get_pd_matrix)
    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        return self._matrices.get_pd_matrix(
            rows_axis, columns_axis, name, default=default, relayout=relayout
        )

    @documented_by(DafWriter.set_matrix)
    def set_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        relayout: bool = True,
        indtype: Any = None,
    ) -> Self:
        self._matrices.set_matrix(
            rows_axis,
            columns_axis,
            name,
            value,
            overwrite=overwrite,
            relayout=relayout,
            indtype=indtype,
        )
        return self

    @documented_by(DafWriter.relayout_matrix)
    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> Self:
        self._matrices.relayout_matrix(rows_axis, columns_axis, name, overwrite=overwrite)
        return self

    @documented_by(DafWriter.delete_matrix)
    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> Self:
        self._matrices.delete_matrix(
            rows_axis, columns_axis, name, must_exist=must_exist, relayout=relayout
        )
        return self

    # --- Fills ---------------------------------------------------------------------------------

    @documented_by(DafWriter.empty_dense_vector)
    @contextlib.contextmanager
    def empty_dense_vector(
        self, axis: str, name: str, eltype: Any, *, overwrite: bool = False
    ) -> Iterator[np.ndarray[Any, Any]]:
        with self._fills.empty_dense_vector(axis, name, eltype, overwrite=overwrite) as out:
            yield out

    @documented_by(DafWriter.empty_sparse_vector)
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
        with self._fills.empty_sparse_vector(
            axis, name, eltype, nnz, indtype, overwrite=overwrite
        ) as out:
            yield out

    @documented_by(DafWriter.empty_dense_matrix)
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
        with self._fills.empty_dense_matrix(
            rows_axis, columns_axis, name, eltype, overwrite=overwrite
        ) as out:
            yield out

    @documented_by(DafWriter.empty_sparse_matrix)
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
        with self._fills.empty_sparse_matrix(
            rows_axis, columns_axis, name, eltype, nnz, indtype, overwrite=overwrite
        ) as out:
            yield out

    # --- Description ---------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Everything :meth:`description` shows, as plain data (``dafzarr daf describe --json``).

        Keys: ``name``, ``type``, ``path``, ``mode``, ``format`` (the Zarr format), ``scalars``
        (name -> value), ``axes`` (name -> length), ``vectors`` (``"axis/name"`` -> property)
        and ``matrices`` (``"rows,columns/name"`` -> property), where a property is a dict
        with ``dtype``, ``layout`` (``"dense"`` or ``"sparse"``) and, when sparse,
        ``nonzeros``.

        Returns
        -------
        dict
            The summary.

        Raises
        ------
        DafzarrError
            None for an open data set.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.summary()["axes"]
        {'cell': 2}
        """
        return self._description.summary()

    @documented_by(DafReader.description)
    def description(self) -> str:
        return self._description.description()


def _init_aside(storage: DafStorage, zarr_format: int) -> Callable[[DafBackend], None]:
    """Make the new data set's group in ``backend`` (see :func:`create_aside`)."""

    def init(backend: DafBackend) -> None:
        storage.backend = backend
        storage.init_group(zarr_format, storage.path)

    return init


def open_daf(
    path: str | os.PathLike[str],
    mode: OpenMode = "r",
    *,
    name: str | None = None,
    zarr_format: int = 2,
    max_file_size: int | None = None,
    append_only: bool = False,
    http: HttpOptions | None = None,
    lock: bool = True,
    durable: bool = False,
) -> ZarrDaf:
    """Open (or create) a Daf data set stored as Zarr.

    Path forms: ``X.daf.zarr`` (directory), ``X.daf.zarr.zip`` (one ZIP archive),
    ``X.dafs.zarr.zip#/group`` (one of several data sets in one ZIP), ``http(s)://...``
    (read-only). Modes: ``"r"`` read-only (writers raise), ``"r+"`` read-write, ``"w+"``
    created if missing, ``"w"`` created or truncated. The other options (the layout of a
    new data set, ZIP limits and locking, HTTP(S) reads, durability) are :class:`ZarrDaf`'s.

    Parameters
    ----------
    path, mode, name, zarr_format, max_file_size, append_only, http, lock, durable
        As for :class:`ZarrDaf`.

    Returns
    -------
    ZarrDaf
        The open data set; close it (or use it in a ``with`` block) when done.

    Raises
    ------
    DafzarrError
        As :class:`ZarrDaf` does (``DafNotFoundError``, ``DafFormatError``, ...).

    Examples
    --------
    >>> daf = dafzarr.open_daf("cells.daf.zarr.zip", "w+", name="cells")
    >>> daf.add_axis("cell", ["A", "B"]).axis_length("cell"), daf.zarr_format
    (2, 2)
    >>> daf.close()
    """
    return ZarrDaf(
        path,
        mode,
        name=name,
        zarr_format=zarr_format,
        max_file_size=max_file_size,
        append_only=append_only,
        http=http,
        lock=lock,
        durable=durable,
    )


def memory_daf(name: str = "memory", *, zarr_format: int = 2) -> ZarrDaf:
    """A new, empty in-memory Daf data set.

    Parameters
    ----------
    name : str, optional
        The data set's name (made unique in the process: ``name#2``, ...).
    zarr_format : int, optional
        The Zarr layout of its store: 2 or 3.

    Returns
    -------
    ZarrDaf
        The writable data set (mode ``"w+"``, path ``memory``).

    Raises
    ------
    InvalidArgumentError
        ``zarr_format`` is neither 2 nor 3.

    Examples
    --------
    >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
    >>> daf.name, daf.path, sorted(daf.scalars_set())
    ('cells...', 'memory', ['version'])
    """
    return ZarrDaf(None, "w+", name=name, zarr_format=zarr_format)
