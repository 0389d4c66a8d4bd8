"""Packing a Zarr directory store into an MmapZipStore archive, in one streaming pass.

The archive has the store's own layout (as ``copy`` writes it), metadata documents first; it
is written to a temporary file next to the output, fsynced and renamed, as every whole output
of the package is (:mod:`dafzarr._core.atomic`).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from ...errors import MissingFileError, PackSourceError
from ..aliases import PathLike
from ..atomic import (
    check_destination,
    locked_temporary,
    no_space,
    publish_file,
    retry_interrupted,
)
from ..crc import crc32
from ..ioerror import storage_io
from ..progress import Progress
from . import ziprecords as zf
from .repack import METADATA_NAMES, ArchiveWriter
from .space import ArchiveSpace

__all__ = ["pack_directory"]

# Files up to this size are read whole (one read, one write); larger ones stream in pieces.
_BUFFER = 8 << 20


def _missing(path: str, what: str) -> Exception:
    return MissingFileError(errno.ENOENT, f"no such {what}: {path}", path)


@dataclass(frozen=True, slots=True)
class _SourceFile:
    key: str
    path: str


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _key_of(parts: list[bytes], root: str) -> str:
    """The Zarr key of a file (its relative path, ``/``-separated), checked."""
    shown = os.path.join(root, *(os.fsdecode(p) for p in parts))
    try:
        key = "/".join(p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise PackSourceError(
            f"{root}: the name of {shown!r} is not UTF-8; ZIP entry names and Zarr keys are "
            "UTF-8 text: rename it"
        ) from None
    reason = zf.unsafe_name_reason(key)
    if reason is not None:
        raise PackSourceError(
            f"{root}: {shown!r} cannot be a ZIP entry name: {reason.replace('its name', 'it')}"
        )
    if len(key.encode("utf-8")) > zf.MAX_NAME:
        raise PackSourceError(f"{root}: the key of {shown!r} is longer than {zf.MAX_NAME} bytes")
    return key


def _entries(directory: bytes) -> list[os.DirEntry[bytes]]:
    with os.scandir(directory) as it:
        return list(it)


def _walk(root: str) -> list[_SourceFile]:
    """Every file under ``root`` (following links that stay inside it), checked."""
    real_root = os.path.realpath(root)
    files: list[_SourceFile] = []
    top = os.stat(real_root)
    seen = {(top.st_dev, top.st_ino)}
    stack: list[tuple[bytes, list[bytes]]] = [(os.fsencode(root), [])]
    while stack:
        directory, parts = stack.pop()
        for entry in retry_interrupted(_entries, directory):
            name_parts = [*parts, entry.name]
            key = _key_of(name_parts, root)
            path = os.fsdecode(entry.path)
            if entry.is_symlink():
                target = os.path.realpath(path)
                if not _inside(target, real_root):
                    raise PackSourceError(
                        f"{root}: {key!r} is a symbolic link to {target}, outside the "
                        "directory; copy the file in (or pack the directory it is in)"
                    )
            try:
                st = os.stat(path)
            except FileNotFoundError:
                raise PackSourceError(f"{root}: {key!r} is a broken symbolic link") from None
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:
                    raise PackSourceError(f"{root}: {key!r} links back to a parent directory")
                seen.add((st.st_dev, st.st_ino))
                stack.append((entry.path, name_parts))
            elif stat.S_ISREG(st.st_mode):
                files.append(_SourceFile(key, path))
            else:
                raise PackSourceError(f"{root}: {key!r} is neither a regular file nor a directory")
    return files


def _pack_order(f: _SourceFile) -> tuple[bool, list[str]]:
    parts = f.key.split("/")
    return parts[-1] not in METADATA_NAMES, parts


def _check_zarr_directory(root: str) -> None:
    if not os.path.isdir(root):
        if not os.path.exists(root):
            raise _missing(root, "directory")
        raise PackSourceError(f"{root} is not a directory")
    if not any(os.path.isfile(os.path.join(root, n)) for n in ("zarr.json", ".zgroup", ".zarray")):
        raise PackSourceError(
            f"{root} is not a Zarr store: it has no zarr.json, .zgroup or .zarray at its top"
        )


def pack_directory(
    directory: PathLike, out: PathLike, *, force: bool = False, progress: bool = False
) -> ArchiveSpace:
    """Pack a Zarr directory store (v2 or v3) into an aligned MmapZipStore archive ``out``.

    Metadata documents (``.zgroup``, ``.zattrs``, ``.zarray``, ``.zmetadata``,
    ``zarr.json``) come first, then every other file, each group sorted by path; every
    file becomes one stored entry named by its path relative to ``directory``. One pass
    over the data, written to a temporary file next to ``out``, fsynced and renamed: ``out``
    is never seen half-written.

    Parameters
    ----------
    directory : str or os.PathLike
        The Zarr directory store.
    out : str or os.PathLike
        The archive to write.
    force : bool, default False
        Replace an existing ``out``.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    ArchiveSpace
        The space accounting of the new archive.

    Raises
    ------
    OutputExistsError
        ``out`` exists and ``force`` is False.
    MissingFileError
        ``directory`` does not exist.
    PackSourceError
        ``directory`` is not a Zarr store, ``out`` is inside it, a file name is not UTF-8,
        a symbolic link leads outside it, it holds a special file (before anything is
        written), or a file changes size while being packed.
    StorageIOError
        Writing the archive failed (a full disk); ``out`` is left as it was.

    Examples
    --------
    >>> import zarr
    >>> zarr.create_array("dir.zarr", shape=(4,), dtype="int8")[:] = 7
    >>> dafzarr.MmapZipStore.pack("dir.zarr", "packed.zip").entries
    2
    >>> with dafzarr.MmapZipStore("packed.zip") as store:
    ...     zarr.open_array(store, mode="r")[:]
    array([7, 7, 7, 7], dtype=int8)
    """
    root = os.fspath(directory)
    _check_zarr_directory(root)
    target = os.path.realpath(os.fspath(out))
    if _inside(target, os.path.realpath(root)):
        raise PackSourceError(f"{root}: the output {out} would be inside the directory")
    check_destination(target, force)
    kept = "the archive is left as it was"
    with storage_io(f"listing {root} to pack it", target, kept):
        files = sorted(_walk(root), key=_pack_order)
    with (
        storage_io(f"packing {root}", target, kept),
        Progress(len(files), "packing", progress) as bar,
    ):
        buf = memoryview(bytearray(_BUFFER + 1))  # (one byte more: see _add_small_file)
        with locked_temporary(target) as (fd, tmp):
            writer = ArchiveWriter(fd, tmp)
            try:
                for f in files:
                    src = os.open(f.path, os.O_RDONLY | os.O_CLOEXEC)
                    try:
                        size = os.fstat(src).st_size
                        if size <= _BUFFER:
                            _add_small_file(writer, f, src, size, buf)
                        else:
                            writer.add_file(f.key.encode("utf-8"), src, size, buf[:_BUFFER], f.path)
                    finally:
                        os.close(src)
                    bar.step()
                size = writer.finish()
            except OSError as exc:
                if exc.filename is not None and exc.filename != tmp:
                    raise
                raise no_space(exc, f"the archive of {root} ({target})", tmp) from None
            publish_file(fd, tmp, target, force)
    return ArchiveSpace(
        entries=writer.count,
        live_bytes=writer.pos,
        dead_bytes=0,
        directory_bytes=size - writer.pos,
        file_size=size,
    )


def _add_small_file(
    writer: ArchiveWriter, f: _SourceFile, fd: int, size: int, buf: memoryview
) -> None:
    """One read, one CRC, one write (header and data together)."""
    chunk = buf[: size + 1]  # one byte more: a file that grew is noticed
    got = 0
    while got <= size:
        n = os.preadv(fd, [chunk[got:]], got)
        if n == 0:
            break
        got += n
        if got == len(chunk):
            break
    if got != size:
        what = "grew" if got > size else "shrank"
        raise PackSourceError(
            f"{f.path} {what} while being packed ({size} bytes when opened); pack a directory "
            "that no process is writing"
        )
    data = chunk[:size]
    writer.add(f.key.encode("utf-8"), data, crc32(data))
