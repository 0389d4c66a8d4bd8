"""The lock every change of a data set holds, and the generation its readers check.

A ZIP or memory data set changes in place: an overwrite deletes a property's documents and
chunks and writes new ones, and a thread reading the property meanwhile could combine the
old documents with the new chunk. :class:`ChangeLock` is a sequence lock: the writer holds
its re-entrant lock for the whole change, and the generation is odd while a change is under
way and moves when it ends. A reader (:meth:`ChangeLock.read`) reads without the lock and
keeps what it read when the generation was even and did not move; otherwise it reads again
holding the lock, once, so that it never spins and always gets one state. The thread making
the change reads its own pending state directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

_T = TypeVar("_T")


class ChangeLock:
    """A re-entrant lock held by every change, with the generation readers compare.

    Used as ``with lock:`` by writers (the outermost entry starts a change, its exit ends
    it, also when the change raises); :meth:`read` by readers.
    """

    __slots__ = ("_depth", "_gen", "_lock", "_owner")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        #: Odd while a change is under way; moves by two with each change.
        self._gen = 0
        self._owner = 0  # the thread making the change (0: none)
        self._depth = 0

    def __enter__(self) -> Self:
        self._lock.acquire()
        if self._depth == 0:
            self._owner = threading.get_ident()
            self._gen += 1
        self._depth += 1
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = 0
            self._gen += 1
        self._lock.release()

    @property
    def generation(self) -> int:
        """The generation: odd while a change is under way."""
        return self._gen

    def read(self, read: Callable[[], _T]) -> _T:
        """``read()`` from one state: not during another thread's change, nor across one.

        Without contention, one call without the lock. When a change was under way, or
        began or ended during the call, ``read()`` is made again holding the lock (what
        the first call returned or raised is dropped); the thread making a change reads
        its pending state."""
        gen = self._gen
        if gen & 1:
            if self._owner == threading.get_ident():
                return read()
            with self._lock:
                return read()
        try:
            out = read()
        except Exception:
            if self._gen == gen:
                raise
            with self._lock:
                return read()
        if self._gen == gen:
            return out
        with self._lock:
            return read()
