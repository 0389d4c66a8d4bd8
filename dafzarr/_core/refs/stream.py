"""A kerchunk-Parquet reference store written as its references arrive, in bounded memory.

:class:`ReferenceWriter` takes each array's references in pieces (numpy columns, C order of
the chunk grid) and writes a ``refs.<N>.parq`` file whenever ``record_size`` rows are
complete, so that memory holds at most one record per call, whatever the number of
references (10^8 take the memory of 10^5). The store appears at its path, by a rename, only
when :meth:`ReferenceWriter.close` succeeds; an error or a kill leaves no partial store.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InvalidArgumentError, OutputExistsError
from ..atomic import atomic_directory
from .filenames import METADATA_FILE, refs_file
from .model import chunk_grid, dumps

__all__ = ["REFS_SCHEMA", "ReferenceWriter", "check_record_size", "refs_table"]

# pandas metadata makes fastparquet (fsspec's default engine) read offset/size as int64.
_PANDAS_METADATA = json.dumps(
    {
        "index_columns": [],
        "column_indexes": [],
        "columns": [
            {"name": c, "field_name": c, "pandas_type": pt, "numpy_type": nt, "metadata": None}
            for c, pt, nt in [
                ("path", "unicode", "object"),
                ("offset", "int64", "int64"),
                ("size", "int64", "int64"),
                ("raw", "bytes", "object"),
            ]
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
).encode()

#: The schema of every ``refs.N.parq`` file.
REFS_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("raw", pa.binary()),
    ],
    metadata={b"pandas": _PANDAS_METADATA},
)


def refs_table(
    paths: pa.Array,
    path_index: npt.NDArray[np.int32],
    offset: npt.NDArray[np.int64],
    size: npt.NDArray[np.int64],
    raw: Mapping[int, bytes] | None = None,
) -> pa.Table:
    """One ``refs.N.parq`` table from numpy columns (no Python loop over references);
    ``raw`` maps rows to inlined bytes."""
    n = len(path_index)
    missing = path_index < 0
    path = pa.DictionaryArray.from_arrays(
        pa.array(path_index, type=pa.int32(), mask=missing), paths
    ).dictionary_decode()
    raw_col: pa.Array
    if raw:
        items: list[bytes | None] = [None] * n
        for i, data in raw.items():
            items[i] = data
        raw_col = pa.array(items, pa.binary())
    else:
        raw_col = pa.nulls(n, pa.binary())
    return pa.Table.from_arrays(
        [path, pa.array(np.where(missing, 0, offset), pa.int64()),
         pa.array(np.where(missing, 0, size), pa.int64()), raw_col],
        schema=REFS_SCHEMA,
    )  # fmt: skip


def check_record_size(record_size: object) -> None:
    """Refuse a ``record_size`` that is not a positive integer."""
    if not isinstance(record_size, int) or isinstance(record_size, bool) or record_size < 1:
        raise InvalidArgumentError(f"record_size must be an integer >= 1, not {record_size!r}")


def _node_key(path: str) -> tuple[int, list[str]]:
    """Consolidated metadata in hierarchy order: depth first, then parent path, then name
    (zarr-python nests consecutive keys of one parent)."""
    parts = path.split("/") if path else []
    return len(parts), parts


class ReferenceWriter:
    """Write a kerchunk-Parquet reference store array by array, in pieces (see module doc).

    ``paths`` are the URLs the references point into (``path_index`` values index them).
    Use as a context manager: the store is renamed into place on a clean exit, discarded
    otherwise (or call :meth:`close` / :meth:`abort`). Memory holds at most one record of
    references, whatever their number.

    Parameters
    ----------
    out_path
        The store directory to create (it appears only when the writer closes cleanly).
    paths
        The URLs of the files the references point into.
    record_size
        References per Parquet file (an integer >= 1).
    compression
        The Parquet compression codec (``"zstd"``, ``"snappy"``, ``"none"``, ...).
    overwrite
        Replace an existing reference store at ``out_path`` (when the writer closes).

    Raises
    ------
    OutputExistsError
        ``out_path`` exists and ``overwrite`` was not given, or it exists and is not a
        reference store (never replaced).
    InvalidArgumentError
        A ``record_size`` that is not an integer >= 1; then from the methods, references
        that do not fit the array they are given for (the message names the array).

    Examples
    --------
    One array of four chunks, its references given in two pieces of two:

    >>> zarray = {"zarr_format": 2, "shape": [8], "chunks": [2], "dtype": "<f4",
    ...           "compressor": None, "filters": None, "fill_value": None, "order": "C"}
    >>> with dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"]) as w:
    ...     w.add_group("", {"title": "written in pieces"})
    ...     w.add_array("sst", zarray, {"_ARRAY_DIMENSIONS": ["time"]})
    ...     for start in (0, 2):
    ...         w.append(np.zeros(2, "int32"), 4096 + 8 * np.arange(start, start + 2),
    ...                  np.full(2, 8))
    >>> w.written, sorted(p.name for p in w.out.iterdir())
    (4, ['.zmetadata', 'sst'])
    """

    def __init__(
        self,
        out_path: str | os.PathLike[str],
        paths: Sequence[str],
        *,
        record_size: int = 100_000,
        compression: str = "zstd",
        overwrite: bool = False,
    ) -> None:
        check_record_size(record_size)
        self.out = Path(out_path)
        _check_out(self.out, overwrite)
        self.paths = pa.array(list(paths), pa.string())
        self.record_size = record_size
        self.compression = compression
        self.written = 0  # references written so far
        self._stack = contextlib.ExitStack()
        self._tmp = Path(self._stack.enter_context(atomic_directory(self.out, force=overwrite)))
        self._nodes: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._array: str | None = None
        self._expected = 0
        self._rows = 0  # rows of the current array written or buffered
        self._record = 0
        self._pending: list[tuple[Any, Any, Any, dict[int, bytes]]] = []
        self._pending_rows = 0
        self.closed = False

    # --- what the store holds ---------------------------------------------------------------

    def add_group(self, name: str, attrs: Mapping[str, Any] | None = None) -> None:
        """A group (``""``: the root) with its attributes.

        Parameters
        ----------
        name
            The group's path (``""``: the root).
        attrs
            Its attributes (default: none).

        Raises
        ------
        InvalidArgumentError
            A group or array of that name is in the store already.

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_group("", {"title": "daily SST"})
        >>> w.close().name
        'day0.refs'
        """
        self._node(name, {"zarr_format": 2}, dict(attrs or {}))

    def add_array(
        self, name: str, zarray: Mapping[str, Any], zattrs: Mapping[str, Any] | None = None
    ) -> None:
        """Start the array ``name`` (its ``.zarray`` must give ``shape`` and ``chunks``); its
        references follow through :meth:`append`. The previous array must be complete.

        Parameters
        ----------
        name
            The array's full path in the store.
        zarray
            Its zarr v2 ``.zarray`` document (``shape`` and ``chunks`` at least).
        zattrs
            Its ``.zattrs`` document (``_ARRAY_DIMENSIONS`` for xarray; default: none).

        Raises
        ------
        InvalidArgumentError
            ``zarray`` gives no valid ``shape`` and ``chunks``; a group or array of that name
            is in the store already; the previous array did not get all its references.

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_array("sst", {"shape": [4], "chunks": [2], "dtype": "<f4"})
        >>> w.append([0, 0], [4096, 4104], [8, 8])
        >>> w.close().name
        'day0.refs'
        """
        self._finish_array()
        try:
            grid = chunk_grid(tuple(zarray["shape"]), tuple(zarray["chunks"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"array {name!r}: invalid .zarray ({exc})") from None
        self._node(name, dict(zarray), dict(zattrs or {}))
        (self._tmp / name).mkdir(parents=True, exist_ok=True)
        self._array, self._expected = name, math.prod(grid)
        self._rows = self._record = 0

    def append(
        self,
        path_index: npt.ArrayLike,
        offset: npt.ArrayLike,
        size: npt.ArrayLike,
        raw: Mapping[int, bytes] | None = None,
    ) -> None:
        """The next references of the current array, in C order of its chunk grid:
        ``path_index`` (-1: a missing chunk), byte ``offset`` and ``size`` in that file;
        ``raw`` maps positions in this piece to inlined chunk bytes.

        Parameters
        ----------
        path_index
            For each chunk, the index of its file in ``paths`` (-1: a missing chunk, read as
            the fill value).
        offset
            Byte offset of each chunk in its file.
        size
            Byte size of each chunk.
        raw
            Inlined chunk bytes, by position in this piece (their ``path_index`` is -1).

        Raises
        ------
        InvalidArgumentError
            No array was started; the columns are not 1-d or differ in length; more
            references than the array's chunk grid holds; a path index outside
            ``[-1, len(paths))``; a negative offset or size; a ``raw`` position outside the
            piece. The message names the array.

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_array("sst", {"shape": [4], "chunks": [2], "dtype": "<f4"})
        >>> w.append([0], [4096], [8])
        >>> w.append([-1], [0], [0], raw={0: bytes(8)})  # the second chunk inlined
        >>> w.close().name
        'day0.refs'
        """
        if self._array is None:
            raise InvalidArgumentError("append() before add_array()")
        idx = np.ascontiguousarray(path_index, dtype=np.int32)
        off = np.ascontiguousarray(offset, dtype=np.int64)
        nbytes = np.ascontiguousarray(size, dtype=np.int64)
        n = idx.shape[0]
        if idx.ndim != 1 or off.shape != (n,) or nbytes.shape != (n,):
            raise InvalidArgumentError(
                f"array {self._array!r}: path_index, offset and size must be 1-d columns of "
                f"one length, not {idx.shape}, {off.shape}, {nbytes.shape}"
            )
        if self._rows + n > self._expected:
            raise InvalidArgumentError(
                f"array {self._array!r}: {self._rows + n} references for a grid of "
                f"{self._expected} chunks"
            )
        if n and (idx.min() < -1 or idx.max() >= len(self.paths)):
            raise InvalidArgumentError(
                f"array {self._array!r}: a path index outside [-1, {len(self.paths)})"
            )
        present = idx >= 0
        if ((off < 0) & present).any() or ((nbytes < 0) & present).any():
            raise InvalidArgumentError(f"array {self._array!r}: a negative offset or size")
        inline = dict(raw or {})
        if any(not 0 <= i < n for i in inline):
            raise InvalidArgumentError(f"array {self._array!r}: an inlined row outside the piece")
        self._rows += n
        start = 0
        while start < n:  # fill the pending record, write it when full
            take = min(n - start, self.record_size - self._pending_rows)
            piece_raw = {i - start: inline[i] for i in inline if start <= i < start + take}
            self._pending.append(
                (
                    idx[start : start + take],
                    off[start : start + take],
                    nbytes[start : start + take],
                    piece_raw,
                )
            )
            self._pending_rows += take
            start += take
            if self._pending_rows == self.record_size:
                self._flush()

    # --- writing ------------------------------------------------------------------------------

    def _node(self, name: str, zmeta: dict[str, Any], zattrs: dict[str, Any]) -> None:
        if name in self._nodes:
            raise InvalidArgumentError(f"{name!r} is in the store already")
        self._nodes[name] = (zmeta, zattrs)

    def _flush(self) -> None:
        """Write the pending rows as the current array's next reference file."""
        assert self._array is not None
        if not self._pending:  # an array without chunks: one empty record
            self._pending.append(
                (np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64), {})
            )
        if len(self._pending) == 1:
            idx, off, nbytes, raw = self._pending[0]
        else:
            idx = np.concatenate([p[0] for p in self._pending])
            off = np.concatenate([p[1] for p in self._pending])
            nbytes = np.concatenate([p[2] for p in self._pending])
            raw, base = {}, 0
            for p in self._pending:
                raw.update({base + i: b for i, b in p[3].items()})
                base += len(p[0])
        table = refs_table(self.paths, idx, off, nbytes, raw)
        pq.write_table(
            table, self._tmp / self._array / refs_file(self._record),
            compression=self.compression, use_dictionary=["path"], write_statistics=False,
            row_group_size=max(1, len(idx)),
        )  # fmt: skip
        self.written += len(idx)
        self._record += 1
        self._pending, self._pending_rows = [], 0

    def _finish_array(self) -> None:
        if self._array is None:
            return
        if self._rows != self._expected:
            raise InvalidArgumentError(
                f"array {self._array!r}: {self._rows} references for a grid of "
                f"{self._expected} chunks"
            )
        if self._pending_rows or self._record == 0:
            self._flush()  # the last (or only, possibly empty) record
        self._array = None

    def add_file(self, name: str, table: pa.Table) -> None:
        """An extra Parquet file in the store (not referenced by the zarr metadata).

        Parameters
        ----------
        name
            The file's name in the store's directory.
        table
            The table to write.

        Raises
        ------
        OSError
            The file system failed while writing it.

        Examples
        --------
        >>> import pyarrow as pa
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_file("sources.parquet", pa.table({"day": [0]}))
        >>> (w.close() / "sources.parquet").is_file()
        True
        """
        pq.write_table(table, self._tmp / name)

    def add_bytes(self, name: str, data: bytes) -> None:
        """An extra file of raw bytes in the store (references may point into it).

        Parameters
        ----------
        name
            The file's name in the store's directory.
        data
            Its bytes.

        Raises
        ------
        OSError
            The file system failed while writing it.

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_bytes("values.bin", bytes(16))
        >>> (w.close() / "values.bin").stat().st_size
        16
        """
        (self._tmp / name).write_bytes(data)

    def close(self) -> Path:
        """Finish the last array, write ``.zmetadata`` and rename the store into place.

        Closing twice does nothing more. On an error the store is discarded (the destination
        stays as it was) and the error raised.

        Returns
        -------
        pathlib.Path
            The store's path.

        Raises
        ------
        InvalidArgumentError
            The last array did not get all its references (the message names it).
        OutputExistsError
            A store appeared at the destination meanwhile and ``overwrite`` was not given.
        OSError
            The file system failed while writing or renaming the store
            (:func:`write_parquet` reports it as a :class:`~dafzarr.errors.StorageIOError`).

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_group("", {})
        >>> w.close().name, w.closed
        ('day0.refs', True)
        """
        if self.closed:
            return self.out
        try:
            self._finish_array()
            meta: dict[str, Any] = {}
            for path in sorted(self._nodes, key=_node_key):
                zmeta, zattrs = self._nodes[path]
                prefix = f"{path}/" if path else ""
                meta[f"{prefix}{'.zarray' if 'shape' in zmeta else '.zgroup'}"] = zmeta
                meta[f"{prefix}.zattrs"] = zattrs
            doc = {"metadata": meta, "record_size": self.record_size}
            (self._tmp / METADATA_FILE).write_text(dumps(doc), encoding="utf-8")
        except BaseException as exc:
            self.abort(exc)
            raise
        self.closed = True
        self._stack.close()  # the rename
        return self.out

    def abort(self, exc: BaseException | None = None) -> None:
        """Discard the store being written (the destination stays as it was).

        Does nothing once the writer is closed.

        Parameters
        ----------
        exc
            The error that made the caller give up (default: none).

        Raises
        ------
        OSError
            Never on its own account: ``exc`` is not raised again (the caller raises it).

        Examples
        --------
        >>> w = dafzarr.refs.ReferenceWriter("day0.refs", ["file:///data/day0.nc"])
        >>> w.add_group("", {})
        >>> w.abort()
        >>> w.out.exists()
        False
        """
        if self.closed:
            return
        self.closed = True
        error = exc if exc is not None else RuntimeError("reference store abandoned")
        self._stack.__exit__(type(error), error, error.__traceback__)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        if exc is None:
            self.close()
        else:
            self.abort(exc)


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise OutputExistsError(
            errno.EEXIST,
            f"{out} exists (pass overwrite=True to replace a reference store)",
            str(out),
        )
    if out.exists() and not (out / METADATA_FILE).is_file():
        raise OutputExistsError(
            errno.EEXIST,
            f"{out} exists and is not a reference store: not replacing it",
            str(out),
        )
