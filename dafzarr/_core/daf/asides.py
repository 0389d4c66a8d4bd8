"""Deletes of a directory data set that stand or fall with the change they belong to.

A delete renames the property's directory aside at once, to a hidden temporary name beside it
(``.NAME.<pid>-<random>.dafzarr-tmp``, which listings and consolidation skip), so the
property disappears in one step. Outside a change the aside is removed right away. Inside a
change (an overwrite deletes the old property, then writes the new one) the aside is held
(flocked) until the change ends: removed when it passed, renamed back over whatever the change
wrote at its place when it raised. A removal that fails (an I/O error) leaves debris that no
listing shows and that the next writable open sweeps once no process holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
from collections.abc import Callable, Iterator

from ..atomic import TMP_SUFFIX, remove_stale_temporaries, temporary_name, walk

__all__ = ["TMP_SUFFIX", "Asides", "sweep_asides"]

_ASIDE_NAME = re.compile(rf"\.(.+)\.\d+-[0-9a-f]+{re.escape(TMP_SUFFIX)}")


class Asides:
    """The nodes a directory data set's current change deleted, ``(path, aside, lock,
    whether it is put back if the change fails)``, and the files the change wrote."""

    def __init__(self) -> None:
        self._held: list[tuple[str, str, int | None, bool]] | None = None
        self._written: list[str] = []

    def writing(self, path: str) -> None:
        """The change is about to write the file ``path``: a node holding it was (at least
        in part) made by the change, and a delete of it is not undone."""
        if self._held is not None:
            self._written.append(path)

    def delete(self, path: str, settle: Callable[[], None]) -> None:
        """Rename the directory ``path`` aside (``settle`` makes the rename durable), then
        remove it now, or hold it until the change ends."""
        aside = temporary_name(path, "")
        os.replace(path, aside)
        settle()
        if self._held is None:
            _remove(aside)
            return
        head = path + os.sep
        made_here = any(w == path or w.startswith(head) for w in self._written)
        self._held.append((path, aside, _locked(aside), not made_here))

    @contextlib.contextmanager
    def transaction(self, settle: Callable[[str], None]) -> Iterator[None]:
        """One change: its deletes are undone if it raises (``settle(path)`` makes each
        rename back durable). Nested changes are part of the outermost one."""
        if self._held is not None:
            yield
            return
        self._held, self._written = [], []
        try:
            yield
        except BaseException:
            held, self._held, self._written = self._held, None, []
            try:
                for path, aside, _fd, restore in reversed(held):
                    if not restore:
                        _remove(aside)
                        continue
                    if os.path.lexists(path):
                        _remove(path)  # what the change wrote at the old property's place
                    os.replace(aside, path)
                    settle(path)
            finally:
                _release(held)
            raise
        held, self._held, self._written = self._held, None, []
        _release(held)
        for _path, aside, _fd, _restore in held:
            _remove(aside)


def sweep_asides(root: str) -> None:
    """Remove the nodes left aside below ``root`` by failed removals or killed processes
    (held by no process, untouched for :data:`~dafzarr._core.atomic.STALE_SECONDS`)."""
    for dirpath, dirs, _files in walk(root):
        for name in dirs:
            found = _ASIDE_NAME.fullmatch(name)
            if found is not None:
                remove_stale_temporaries(os.path.join(dirpath, found.group(1)))


def _locked(path: str) -> int | None:
    """A descriptor of the directory ``path`` holding its lock, so that no sweep removes it
    while the change may still put it back (None where that cannot be had)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    with contextlib.suppress(OSError):  # a file system without locks: the name is ours alone
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _release(held: list[tuple[str, str, int | None, bool]]) -> None:
    for _path, _aside, fd, _restore in held:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _remove(path: str) -> None:
    """Remove a directory tree; one that cannot be removed now stays as debris."""
    with contextlib.suppress(OSError):
        shutil.rmtree(path)
