"""Scan one NetCDF4/HDF5 file, local or remote, into per-variable metadata and dense
chunk-reference columns.

:func:`scan` opens the file (a local path through HDF5's own driver, a remote one through a
block cache, see :mod:`._remote`) and walks it (:mod:`._walk`) in a helper process killed
at the deadline (see :mod:`._deadline`), or in this process.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import h5py

from ...errors import H5Error, InvalidArgumentError, UnsupportedHDF5Error
from ..io.blocks import BlockReader, ReadStats
from .model import OnUnsupported, ScanResult, file_url
from .remote import open_reader, opened_h5, remote_path
from .walk import open_local, scan_file

__all__ = [
    "DEFAULT_TIMEOUT", "check_arguments", "check_timeout", "scan", "scan_path", "scan_reader",
    "scan_remote",
]  # fmt: skip


# --- Scanning -----------------------------------------------------------------------------
DEFAULT_TIMEOUT = 600.0  # seconds one file's scan may take (see scan's ``timeout``)


def scan(
    path: str | os.PathLike[str],
    *,
    url: str | None = None,
    variables: Iterable[str] | None = None,
    on_unsupported: OnUnsupported = "raise",
    timeout: float | None = DEFAULT_TIMEOUT,
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
) -> ScanResult:
    """Scan a NetCDF4/HDF5 file's arrays and chunk indexes.

    Parameters
    ----------
    path
        The file to open (the *access* path): a local path, or an ``http(s)://`` or
        ``s3://`` URL (then only the blocks holding metadata and chunk indexes are fetched,
        never the chunks' data).
    url
        Location written into references (the *public* path); default: ``file://`` URL of
        a local ``path``, a remote ``path`` itself. Byte offsets are identical in every copy
        of a file.
    variables
        Only these variables (full paths without the leading ``/``); default: all.
    on_unsupported
        ``"raise"`` (default): an :class:`~dafzarr.errors.UnsupportedHDF5Error` naming the
        file, variable and cause for anything that cannot be referenced (szip, scaleoffset,
        unknown filters, non-zero per-chunk filter masks, compound or reference types; types
        whose stored bytes are not numpy's encoding of the values HDF5 reads, such as
        integers with padding bits or non-IEEE floats; data in external files);
        ``"skip"``: leave such variables out with an
        :class:`~dafzarr.errors.UnsupportedVariableWarning`.
    timeout
        Seconds the scan may take (default 600). The scan runs in a scanner process (a
        ``python`` child, reused from one scan to the next) that is killed when the time is
        up, so that even a file on which the HDF5 library never returns ends in a
        :class:`~dafzarr.errors.ScanTimeoutError` naming it. ``None``: scan in this process,
        without a deadline.
    storage_options
        How to reach a remote ``path``, with fsspec's (s3fs's) names: ``key``, ``secret``,
        ``token``, ``anon``, ``endpoint_url``, ``client_kwargs={"endpoint_url": ...,
        "region_name": ...}``; for HTTP, ``headers``. Names not understood are refused.
    store
        An obstore store holding ``path`` (then ``path`` is its key, or a URL whose path is),
        instead of ``storage_options``.

    Returns
    -------
    ScanResult
        Per variable: dtype with byte order, shape (netCDF dimension lengths for unlimited
        dimensions), chunk shape, filters in pipeline order as numcodecs configs, the HDF5
        fill value, attributes minus netCDF's hidden ones, dimension names, group path and
        dense chunk references.

    Raises
    ------
    InvalidArgumentError
        An ``on_unsupported`` other than ``"raise"``/``"skip"``, a ``timeout`` that is not
        a number of seconds > 0 or ``None``, ``storage_options`` for a local path, an
        option name the scanner does not understand.
    UnsupportedHDF5Error
        The file is not HDF5/NetCDF4 (netCDF3 classic, GRIB), or (with
        ``on_unsupported="raise"``) a variable cannot be referenced; the message names the
        file, the variable and the cause.
    H5Error
        HDF5 fails to read the file (damaged, truncated or inconsistent), or the scanner
        process dies.
    ScanTimeoutError
        The scan did not finish within ``timeout`` seconds (an ``H5Error`` and a
        ``TimeoutError``); the message names the file.
    HttpReadError
        A read of a remote file failed for good (the message names the URL and the range).
    FileNotFoundError
        The file does not exist.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> r = dafzarr.refs.scan("day0.nc")
    >>> sst = r["sst"]
    >>> sst.dtype, sst.shape, sst.chunks, sst.filters, sst.fill_value, sst.attrs
    ('<f4', (4, 8), (2, 4), [], None, {'units': 'degC'})
    >>> sst.refs.column_names
    ['chunk', 'offset', 'size', 'filter_mask', 'raw']
    """
    check_arguments(on_unsupported, timeout)
    p = os.fspath(path)
    if p.startswith("file://"):
        p = unquote(urlsplit(p).path)
    if remote_path(p, store):
        reader = open_reader(p, storage_options, store)
        try:
            return scan_reader(
                reader, url=url, variables=variables, on_unsupported=on_unsupported, timeout=timeout
            )
        finally:
            reader.close()
    if storage_options:
        raise InvalidArgumentError(f"{p}: storage_options apply to remote URLs only")
    if url is None:
        url = file_url(p)
    wanted = None if variables is None else {v.lstrip("/") for v in variables}
    if timeout is None:
        return scan_path(p, url, wanted, on_unsupported)
    from .deadline import call_with_deadline

    result: ScanResult = call_with_deadline(
        scan_path, (p, url, wanted, on_unsupported), {}, timeout=timeout, what=p
    )
    return result


def scan_reader(
    reader: BlockReader,
    *,
    url: str | None = None,
    variables: Iterable[str] | None = None,
    on_unsupported: OnUnsupported = "raise",
    timeout: float | None = DEFAULT_TIMEOUT,
) -> ScanResult:
    """:func:`scan` of a remote file opened as ``reader`` (see :mod:`._remote`).

    With a deadline, the reader goes to the helper process with the blocks it holds (a
    prefetch done here is not lost), and what the scan read there comes back to it.
    """
    check_arguments(on_unsupported, timeout)
    wanted = None if variables is None else {v.lstrip("/") for v in variables}
    url = url or reader.name
    if timeout is None:
        return scan_remote(reader, url, wanted, on_unsupported)
    try:
        pickle.dumps(reader.source)
    except (TypeError, AttributeError, pickle.PicklingError) as exc:
        raise InvalidArgumentError(
            f"{reader.name}: the scan's deadline runs it in a helper process, and this store "
            f"cannot be sent there ({exc}); pass timeout=None to scan in this process, or "
            "use a store that can be pickled (obstore's HTTP, S3, GCS and Azure stores)"
        ) from None
    from .deadline import call_with_deadline

    result, stats = call_with_deadline(
        _scan_remote_copy, (reader, url, wanted, on_unsupported), {}, timeout=timeout,
        what=reader.name,
    )  # fmt: skip
    reader.learn(stats)
    return result  # type: ignore[no-any-return]


def scan_remote(
    reader: BlockReader, url: str, wanted: set[str] | None, on_unsupported: OnUnsupported
) -> ScanResult:
    """Open the remote file ``reader`` reads and scan it (:func:`scan_file`) in this process.

    A read that failed for good raises as itself (naming the URL and the range), not as the
    HDF5 error it caused."""
    with opened_h5(reader) as fid:
        try:
            return scan_file(fid, reader.name, url, wanted, on_unsupported, file_size=reader.size)
        except (UnsupportedHDF5Error, H5Error) as exc:
            if reader.failure is not None:
                raise reader.failure from exc
            raise


def _scan_remote_copy(
    reader: BlockReader, url: str, wanted: set[str] | None, on_unsupported: OnUnsupported
) -> tuple[ScanResult, ReadStats]:
    """:func:`scan_remote` in a helper process; also what the reader read there."""
    return scan_remote(reader, url, wanted, on_unsupported), reader.stats()


def scan_target(
    target: BlockReader | str, url: str, wanted: set[str] | None, on_unsupported: OnUnsupported
) -> tuple[ScanResult, ReadStats | None]:
    """:func:`scan_path` of a local path, or :func:`scan_remote` of a remote file's reader
    with what it read (for :meth:`BlockReader.learn`): one function that a helper process
    runs for every file of a collection."""
    if isinstance(target, str):
        return scan_path(target, url, wanted, on_unsupported), None
    return _scan_remote_copy(target, url, wanted, on_unsupported)


def check_arguments(on_unsupported: object, timeout: object) -> None:
    """Refuse an ``on_unsupported`` other than ``"raise"``/``"skip"``, and a bad ``timeout``."""
    if on_unsupported not in ("raise", "skip"):
        raise InvalidArgumentError(
            f"on_unsupported must be 'raise' or 'skip', not {on_unsupported!r}"
        )
    check_timeout(timeout)


def check_timeout(timeout: object) -> None:
    """Refuse a ``timeout`` that is not ``None`` or a number of seconds > 0."""
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise InvalidArgumentError(f"timeout must be a number of seconds > 0 or None: {timeout!r}")


def scan_path(
    p: str, url: str, wanted: set[str] | None, on_unsupported: OnUnsupported
) -> ScanResult:
    """Open the local file ``p`` and scan it (:func:`scan_file`) in this process."""
    try:
        fid = open_local(p)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.isfile(p) and not h5py.is_hdf5(p):
            raise UnsupportedHDF5Error(
                f"{p}: not an HDF5/NetCDF4 file (netCDF3 classic, GRIB and other formats "
                "cannot be scanned)"
            ) from exc
        raise H5Error(f"{p}: HDF5 cannot open the file: {exc}") from exc
    try:
        return scan_file(fid, p, url, wanted, on_unsupported, file_size=os.path.getsize(p))
    finally:
        fid.close()
