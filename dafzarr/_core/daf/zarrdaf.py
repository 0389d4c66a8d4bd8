"""ZarrDaf: a Daf data set (named axes, scalars, vectors, matrices) stored as a Zarr group.

Reads of dense vectors and matrices stored as one uncompressed chunk are zero-copy, read-only
numpy views of the file (directory), of the archive mapping (ZIP) or of the stored buffer
(memory). Writes publish every property atomically: its chunks first, then the documents that
make it visible (children before parents), then the consolidated metadata (directories).

The class is assembled from one part per concern: :mod:`._storage` (nodes, writes,
consolidated metadata), :mod:`._scalars`, :mod:`._axes`, :mod:`._vectors`, :mod:`._matrices`,
:mod:`._fills` (``empty_*``), :mod:`._describe` and :mod:`._queries` (Daf queries, evaluated
by :mod:`.query`); :mod:`._open` finds the backend of a path.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import TYPE_CHECKING, Self

from ...errors import InvalidArgumentError
from ..aliases import OpenMode
from ..io import HttpOptions
from ..ioerror import storage_io
from . import layout as lay
from .backends import DafBackend
from .backends_zip import ZipBackend
from .describe import Description
from .fills import Fills
from .names import unique_name
from .open import create_aside, create_zip_aside, open_backend
from .queries import Queries
from .query.cache import QueryCache
from .storage import MODES

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import xarray

__all__ = ["ZarrDaf", "memory_daf", "open_daf"]


class ZarrDaf(Description, Fills, Queries):
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
        self._stale_consolidated = False
        self._mode = mode
        self._read_only = mode == "r"
        self._cmeta = None
        self._ctext = lay.ZmetadataText()
        self._cstamp = None
        self._lock = threading.RLock()
        self._axis_cache = {}
        self._changes = [0]
        self._query_cache = QueryCache()
        self._finalizer = None
        where = "memory" if path is None else os.fspath(path)
        with storage_io(f"opening the data set (mode {mode!r})", where):
            self._open(path, mode, zarr_format, max_file_size, append_only, http, lock,
                       durable)
        stored = self.get_scalar("name", default=None) if name is None else None
        base = name if name is not None else (str(stored) if stored is not None else self._path)
        if self._read_only:
            base = f"{base}.read_only" if name is None else base
        self._name = unique_name(base)

    def _open(
        self, path: str | os.PathLike[str] | None, mode: OpenMode, zarr_format: int,
        max_file_size: int | None, append_only: bool, http: HttpOptions | None, lock: bool,
        durable: bool = False,
    ) -> None:
        """Open the backend and make (or adopt) the data set's root group."""
        opened = open_backend(path, mode, max_file_size, append_only, http, lock, durable)
        self._backend, self._kind, self._path = opened.backend, opened.kind, opened.path
        if isinstance(opened.backend, ZipBackend) and not opened.aside:
            self._finalizer = weakref.finalize(self, opened.backend.close)
        try:
            if opened.aside and isinstance(opened.backend, ZipBackend):
                self._backend = create_zip_aside(
                    self._path.split("#/")[0], opened.backend, durable,
                    self._init_aside(zarr_format))
                self._finalizer = weakref.finalize(self, self._backend.close)
            elif opened.aside:
                self._backend = create_aside(self._path, durable, self._init_aside(zarr_format))
            elif opened.truncate_group:
                # Mode "w" on an existing ZIP data set: its keys go and a fresh data set
                # takes their place in one commit (the rest of an archive of several
                # data sets stays).
                assert isinstance(self._backend, ZipBackend)
                with self._backend.transaction():
                    self._backend.truncate()
                    self._init_group(zarr_format, self._path)
            else:
                self._init_group(zarr_format, self._path)
        except BaseException:
            if path is not None:
                self._backend.close()
            raise

    def _init_aside(self, zarr_format: int) -> Callable[[DafBackend], None]:
        """Make the new data set's group in ``backend`` (see :func:`create_aside`)."""

        def init(backend: DafBackend) -> None:
            self._backend = backend
            self._init_group(zarr_format, self._path)

        return init

    # --- Identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The data set's name (unique in this process)."""
        return self._name

    @property
    def path(self) -> str:
        """The full path: absolute container path (plus ``#/group``), URL, or ``memory``."""
        return self._path

    @property
    def mode(self) -> str:
        """The mode the data set was opened with."""
        return self._mode

    @property
    def read_only(self) -> bool:
        """Whether writers raise (mode ``r``, HTTP, read-only views)."""
        return self._read_only

    @property
    def zarr_format(self) -> int:
        """The Zarr layout generation of the store: 2 or 3."""
        return self._layout.zarr_format

    def __repr__(self) -> str:
        return f"{'ReadOnly ' if self._read_only else ''}ZarrDaf {self._name}"

    def close(self) -> None:
        """Release the store (ZIP: drop this handle's share of the archive) and the results
        and tables of this handle's query cache."""
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
        """
        from .xarray import daf_to_xarray

        return daf_to_xarray(self, drop_variables)

    def read_only_view(self) -> ZarrDaf:
        """Another handle on the same data whose writers raise (named ``<name>.read_only``)."""
        view = object.__new__(ZarrDaf)
        view.__dict__.update(self.__dict__)
        view._read_only = True
        view._mode = "r"
        view._finalizer = None
        view._axis_cache = {}
        view._query_cache = QueryCache()
        view._name = unique_name(f"{self._name}.read_only")
        return view


def open_daf(
    path: str | os.PathLike[str], mode: OpenMode = "r", *, name: str | None = None,
    zarr_format: int = 2, max_file_size: int | None = None, append_only: bool = False,
    http: HttpOptions | None = None, lock: bool = True, durable: bool = False,
) -> ZarrDaf:
    """Open (or create) a Daf data set stored as Zarr.

    Path forms: ``X.daf.zarr`` (directory), ``X.daf.zarr.zip`` (one ZIP archive),
    ``X.dafs.zarr.zip#/group`` (one of several data sets in one ZIP), ``http(s)://...``
    (read-only). Modes: ``"r"`` read-only (writers raise), ``"r+"`` read-write, ``"w+"``
    created if missing, ``"w"`` created or truncated. ``zarr_format`` (2 or 3) is the
    layout of a new data set; existing ones keep theirs. ZIP only: ``max_file_size`` (the
    largest size the archive may reach while open for writing) and ``append_only`` (refuse
    deletes and overwrites) and ``lock`` (``False``: no writer lock, for file systems
    without ``flock``; you guarantee a single writer); see :class:`ZarrDaf`. ``http`` sets the deadline, retries and
    limits of reads over HTTP(S) (:class:`dafzarr.HttpOptions`). ``durable``: every write
    is durable, also across a power loss, when it returns (see :class:`ZarrDaf`).
    """
    return ZarrDaf(path, mode, name=name, zarr_format=zarr_format,
                   max_file_size=max_file_size, append_only=append_only, http=http, lock=lock,
                   durable=durable)


def memory_daf(name: str = "memory", *, zarr_format: int = 2) -> ZarrDaf:
    """A new, empty in-memory Daf data set."""
    return ZarrDaf(None, "w+", name=name, zarr_format=zarr_format)
