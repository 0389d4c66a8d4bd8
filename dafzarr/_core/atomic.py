"""Whole outputs written beside their destination and published by one rename.

Every command and function of the package that writes a whole file or directory store
(``dafzarr zip compact``/``pack``, ``dafzarr daf convert``, ``dafzarr refs build``, the
reference writers) writes it under a temporary name in the destination's directory,
``.NAME.<pid>-<random>.dafzarr-tmp`` (plus the destination's own suffix when a reader needs it,
e.g. ``.daf.zarr``), fsyncs it (every file of a directory), renames it over the destination
and fsyncs the directory. A failure removes the temporary and leaves the destination as it
was; a process killed at any instant leaves the old destination or the complete new one.

A temporary is flocked while it is written; a later write onto the same destination removes
those that no process holds and that are older than :data:`STALE_SECONDS` (the debris of a
killed run). That lock only marks a live temporary: on a file system without ``flock``
(:data:`~dafzarr._core.ioerror.LOCK_UNSUPPORTED`) the temporary is written unlocked, and no sweep
removes anything there (a sweep removes only what it could lock). A directory that replaces another is swapped in with one ``renameat2``
(``RENAME_EXCHANGE``) where the kernel has it, so there is no instant without a destination.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import functools
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..errors import ArchiveLockedError, OutputExistsError
from .aliases import PathLike
from .ioerror import LOCK_UNSUPPORTED, storage_error

__all__ = [
    "STALE_SECONDS",
    "TMP_SUFFIX",
    "atomic_directory",
    "atomic_file",
    "check_destination",
    "copy_mode",
    "fsync_directory",
    "link_descriptor",
    "link_temporary",
    "locked_temporary",
    "mark_live",
    "no_space",
    "remove_stale_temporaries",
    "removed_on_failure",
    "retry_interrupted",
    "temporary_name",
    "unmark_live",
    "walk",
]


# A temporary that no process holds and that was not written for this long is debris.
STALE_SECONDS = 60.0
TMP_SUFFIX = ".dafzarr-tmp"

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


_T = TypeVar("_T")


def retry_interrupted(call: Callable[..., _T], *args: Any) -> _T:
    """``call(*args)``, again while it fails with EINTR: for the calls Python does not retry
    itself, such as opening a directory to list it (``os.listdir``, ``os.scandir``)."""
    while True:
        try:
            return call(*args)
        except InterruptedError:
            continue


def _raise_interrupted(exc: OSError) -> None:
    if isinstance(exc, InterruptedError):
        raise exc


def walk(root: str, *, topdown: bool = True) -> list[tuple[str, list[str], list[str]]]:
    """``os.walk(root)`` as a list, walked again from the start when a listing is interrupted
    (``os.walk`` would skip that directory silently); other errors are ignored as
    ``os.walk`` ignores them (a directory removed meanwhile)."""
    return retry_interrupted(
        lambda: list(os.walk(root, topdown=topdown, onerror=_raise_interrupted))
    )


def fsync_directory(directory: str) -> None:
    """fsync a directory (makes the renames and creations in it durable)."""
    fd = os.open(directory or ".", os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def link_descriptor(fd: int, path: str) -> None:
    """Give the file open as ``fd`` (an anonymous ``O_TMPFILE`` one, say) the name ``path``.

    ``linkat`` with ``AT_SYMLINK_FOLLOW`` of the descriptor's ``/proc/self/fd`` link;
    :class:`FileExistsError` if ``path`` exists, another :class:`OSError` where ``/proc`` or
    hard links are missing.
    """
    directory, name = os.path.split(os.path.abspath(path))
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        # a directory descriptor makes os.link call linkat(), which follows the /proc link
        # to the file (plain link() would try to link the symbolic link itself)
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd)
    except FileExistsError:
        if not _same_file(os.fstat(fd), path):
            with contextlib.suppress(OSError):
                os.close(dir_fd)
            raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(dir_fd)
        raise
    # The name is in place. A close of the read-only directory descriptor that reports an
    # error does not undo it (the descriptor holds no writes; the caller's fsync of the
    # directory makes the name durable): reporting the link as failed would make a caller
    # write the same object again under a second name.
    with contextlib.suppress(OSError):
        os.close(dir_fd)


def _same_file(st: os.stat_result, path: str) -> bool:
    """Whether ``path`` names the file of ``st``: a link that reported ``EEXIST`` although it
    was made (NFS retries a ``link`` whose reply was lost, and the retry finds the name)."""
    try:
        there = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (st.st_dev, st.st_ino)


def mark_live(fd: int) -> bool:
    """Lock the temporary open as ``fd`` (``flock``), which keeps every sweep
    (:func:`remove_stale_temporaries`) from removing it; False on a file system without
    ``flock``, where the temporary stays unlocked: no sweep can lock, hence remove, one there.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        if exc.errno not in LOCK_UNSUPPORTED:
            raise
        return False
    return True


def unmark_live(fd: int) -> None:
    """Let go of :func:`mark_live`'s lock once the temporary got its final name (a failure
    is ignored: the lock then goes with the last descriptor of the file)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def link_temporary(fd: int, destination: str, suffix: str = "") -> str:
    """Name the file open as ``fd`` (an anonymous one) as a temporary of ``destination``,
    flocked first so that no sweep removes it while this process lives; return its path.

    :class:`OSError` where ``/proc`` or hard links are missing (see :func:`link_descriptor`).
    """
    mark_live(fd)
    while True:
        tmp = temporary_name(destination, suffix)
        try:
            link_descriptor(fd, tmp)
        except FileExistsError:
            continue
        return tmp


def copy_mode(fd: int, source: str | os.stat_result) -> None:
    """Give the file open as ``fd`` the permission bits of ``source`` (a path, or its
    ``stat``): a file derived from another (its replacement, a sidecar of it) keeps the mode
    its owner chose. Nothing when the path does not exist."""
    if not isinstance(source, os.stat_result):
        try:
            source = os.stat(source)
        except FileNotFoundError:
            return
    os.fchmod(fd, stat.S_IMODE(source.st_mode))


def _fsync_tree(root: str) -> None:
    """fsync every file and directory under ``root`` (deepest first), then ``root``."""
    for directory, _dirs, files in walk(root, topdown=False):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(directory)


def temporary_name(destination: str, suffix: str) -> str:
    """A hidden temporary name beside ``destination`` (removed by
    :func:`remove_stale_temporaries` once no process holds it)."""
    directory, base = os.path.split(destination)
    return os.path.join(
        directory, f".{base}.{os.getpid()}-{secrets.token_hex(4)}{TMP_SUFFIX}{suffix}"
    )


def _is_temporary_of(name: str, base: str) -> bool:
    pattern = rf"\.{re.escape(base)}\.\d+-[0-9a-f]+{re.escape(TMP_SUFFIX)}(\.[^/]*)?"
    return re.fullmatch(pattern, name) is not None


def _remove(path: str) -> None:
    """Remove a file or a directory tree (never following a link), ignoring a missing one."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def remove_stale_temporaries(destination: str) -> list[str]:
    """Remove the temporaries of killed runs onto ``destination``; return their paths.

    A temporary (file or directory) is removed when no process holds its lock and it was not
    written for :data:`STALE_SECONDS`.
    """
    directory, base = os.path.split(destination)
    removed: list[str] = []
    try:
        names = [
            n for n in retry_interrupted(os.listdir, directory or ".") if _is_temporary_of(n, base)
        ]
    except OSError:
        return removed
    for name in sorted(names):
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                continue
            if time.time() - st.st_mtime < STALE_SECONDS:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live run is writing it
            with contextlib.suppress(OSError):
                if os.lstat(path).st_ino == st.st_ino:
                    _remove(path)
                    removed.append(path)
        finally:
            os.close(fd)
    return removed


def check_destination(destination: str, force: bool, *, directory: bool = False) -> None:
    """Refuse an existing destination without ``force`` (:class:`OutputExistsError`).

    A file output also refuses a directory at ``destination``, even with ``force``.
    """
    if not directory and os.path.isdir(destination):
        raise OutputExistsError(
            errno.EISDIR,
            f"{destination} is a directory; give the path of the file to write",
            destination,
        )
    if os.path.lexists(destination) and not force:
        raise OutputExistsError(
            errno.EEXIST,
            f"{destination} exists; pass force=True (--force) to replace it",
            destination,
        )


def _exists_error(destination: str) -> OutputExistsError:
    return OutputExistsError(
        errno.EEXIST,
        f"{destination} exists; pass force=True (--force) to replace it",
        destination,
    )


@contextlib.contextmanager
def _destination_lock(destination: str) -> Iterator[None]:
    """Hold the writer's lock of an existing archive at ``destination`` while replacing it.

    On a file system without ``flock`` (:data:`~dafzarr._ioerror.LOCK_UNSUPPORTED`) no
    writer can hold that lock either (writers there open with ``lock=False``, the user
    guaranteeing one writer), so the replacement the caller forced goes ahead unlocked."""
    try:
        fd = os.open(destination, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, IsADirectoryError):
        yield
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ArchiveLockedError(
                    errno.EWOULDBLOCK,
                    f"{destination} is open for writing; it cannot be replaced now",
                    destination,
                ) from None
            except OSError as exc:
                if exc.errno not in LOCK_UNSUPPORTED:
                    raise
        yield
    finally:
        os.close(fd)


def publish_file(fd: int, tmp: str, destination: str, force: bool) -> None:
    """fsync ``tmp`` and give it the name ``destination`` (atomically), then fsync the folder.

    Without ``force`` a file that appeared at ``destination`` meanwhile is kept (a hard link
    fails instead of replacing it; where links do not exist, the check comes just before).
    """
    os.fsync(fd)
    if force:
        with _destination_lock(destination):
            os.rename(tmp, destination)
    else:
        try:
            os.link(tmp, destination)
        except FileExistsError:
            if not _same_file(os.fstat(fd), destination):
                raise _exists_error(destination) from None
            os.unlink(tmp)
        except OSError:  # a file system without hard links
            check_destination(destination, force=False)
            os.rename(tmp, destination)
        else:
            os.unlink(tmp)
    fsync_directory(os.path.dirname(destination))


def publish_new_file(tmp: str, destination: str, sync: bool) -> None:
    """Give the file ``tmp`` (which may be open, and locked) the name ``destination``
    (``sync``: fsync it first, and the folder after): a hard link where nothing is there,
    then ``tmp`` goes; else (a file that appeared meanwhile, or a file system without
    links) a rename under the writer's lock of the file there
    (:class:`ArchiveLockedError` while a writer holds it)."""
    if sync:
        fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    try:
        os.link(tmp, destination)
    except OSError as exc:
        if isinstance(exc, FileExistsError) and _same_file(os.stat(tmp), destination):
            os.unlink(tmp)  # the link was made; its reply was lost (NFS)
        else:
            with _destination_lock(destination):
                os.rename(tmp, destination)
    else:
        os.unlink(tmp)
    if sync:
        fsync_directory(os.path.dirname(destination))


@functools.cache
def _renameat2_function() -> Any:
    """The C library's ``renameat2``, or None (looked up once: finding the library runs
    a program)."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    return getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None)


def _renameat2(src: str, dst: str, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False where the C library or file system lacks it."""
    func = _renameat2_function()
    if func is None:
        return False
    rc = func(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), ctypes.c_uint(flags))
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    if err == errno.EEXIST:
        raise _exists_error(dst)
    raise OSError(err, os.strerror(err), dst)


def publish_directory(tmp: str, destination: str, force: bool, sync: bool = True) -> None:
    """fsync the tree at ``tmp`` and give it the name ``destination``, then fsync the folder
    (``sync=False``: no fsync; the rename is atomic for the processes, not across a power
    loss).

    An existing destination (with ``force``) is swapped with ``tmp`` in one
    ``RENAME_EXCHANGE``, so the old tree is left at ``tmp`` for the caller to remove; without
    ``force`` a destination that appeared meanwhile is kept.
    """
    if sync:
        _fsync_tree(tmp)
    parent = os.path.dirname(destination)
    if not os.path.lexists(destination):
        if not _renameat2(tmp, destination, _RENAME_NOREPLACE):
            check_destination(destination, force=False, directory=True)
            os.rename(tmp, destination)
    elif not force:
        raise _exists_error(destination)
    elif not _renameat2(tmp, destination, _RENAME_EXCHANGE):  # a short instant without one
        old = tmp + ".old"
        os.rename(destination, old)
        os.rename(tmp, destination)
    if sync:
        fsync_directory(parent)


def no_space(exc: OSError, what: str, tmp: str) -> OSError:
    """``exc`` as a :class:`~dafzarr.errors.StorageIOError` that says what was being written
    and that nothing was lost (the temporary ``tmp`` is removed by the caller)."""
    return storage_error(
        exc, f"writing {what}", tmp, "the temporary was removed; nothing else was changed"
    )


@contextlib.contextmanager
def removed_on_failure(path: str) -> Iterator[None]:
    """Remove the file ``path`` if the block raises (a removal that fails is left to the
    sweep of :func:`remove_stale_temporaries`), then raise on."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def new_temporary(destination: str, suffix: str = "", *, sweep: bool = True) -> str:
    """Create an empty temporary file next to ``destination``; return its path.

    ``sweep``: first remove the stale temporaries of ``destination`` (a caller that does it
    once, when it opens, passes False)."""
    if sweep:
        remove_stale_temporaries(destination)
    while True:
        tmp = temporary_name(destination, suffix)
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        with removed_on_failure(tmp):
            os.close(fd)
        return tmp


@contextlib.contextmanager
def locked_temporary(
    destination: str, suffix: str = "", *, sweep: bool = True
) -> Iterator[tuple[int, str]]:
    """A flocked, empty temporary file next to ``destination``, removed on failure
    (``sweep``: as for :func:`new_temporary`)."""
    tmp = new_temporary(destination, suffix, sweep=sweep)
    with removed_on_failure(tmp):
        fd = os.open(tmp, os.O_RDWR | os.O_CLOEXEC)
        try:
            mark_live(fd)
            yield fd, tmp
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(
    destination: PathLike, *, force: bool, suffix: str = "", create: bool = True
) -> Iterator[str]:
    """The path of a temporary file; on a clean exit it becomes ``destination``.

    An existing destination is refused without ``force`` (:class:`OutputExistsError`),
    before and again at the rename. If the block raises, the temporary is removed and the
    destination is untouched. ``suffix`` ends the temporary's name (for readers that go by
    it, e.g. ``.daf.zarr.zip``). With ``create=False`` no file is there yet: the block
    creates it (an :class:`~dafzarr.MmapZipStore`, which takes the file's lock itself);
    otherwise it is an empty file, flocked until it is published.
    """
    target = os.path.abspath(os.fspath(destination))
    check_destination(target, force)
    if create:
        with locked_temporary(target, suffix) as (fd, tmp):
            yield tmp
            publish_file(fd, tmp, target, force)
        return
    tmp = new_temporary(target, suffix)
    os.unlink(tmp)  # the name is unique (pid and random); the block creates the file
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            publish_file(fd, tmp, target, force)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(destination: PathLike, *, force: bool, sync: bool = True) -> Iterator[str]:
    """The path of an empty temporary directory; on a clean exit it becomes ``destination``.

    As :func:`atomic_file`, for directory stores: every file under the directory is fsynced
    before the rename. The directory yielded has the destination's own name, inside a
    flocked temporary directory (``.NAME.<pid>-<random>.dafzarr-tmp/NAME``), so a writer
    may lock the store's directory itself and readers that go by the name accept it; the
    replaced store is removed with the temporary. ``sync=False``: nothing is fsynced (see
    :func:`publish_directory`).
    """
    target = os.path.abspath(os.fspath(destination))
    check_destination(target, force, directory=True)
    remove_stale_temporaries(target)
    while True:
        wrapper = temporary_name(target, "")
        try:
            os.mkdir(wrapper)
            break
        except FileExistsError:
            continue
    try:
        fd = os.open(wrapper, os.O_RDONLY | os.O_CLOEXEC)
        try:
            mark_live(fd)
            tmp = os.path.join(wrapper, os.path.basename(target))
            os.mkdir(tmp)
            yield tmp
            publish_directory(tmp, target, force, sync)
        finally:
            os.close(fd)
    finally:
        _remove(wrapper)
