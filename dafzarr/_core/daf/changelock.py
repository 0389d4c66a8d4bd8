"""The lock every change of a data set holds, and the generation its readers check.

A ZIP or memory data set changes in place: an overwrite deletes a property's documents and
chunks and writes new ones, and a thread reading the property meanwhile could combine the
old documents with the new chunk. :class:`ChangeLock` is a sequence lock: the writer holds
its re-entrant lock for the whole change, and the generation is odd while a change is under
way and moves when it ends. A reader (:meth:`ChangeLock.read`) reads without the lock and
keeps what it read when the generation was even and did not move; otherwise it reads again
holding the lock, once, so that it never spins and always gets one state. The thread making
the change reads its own pending state directly.

A thread that holds one data set's lock (a copy into it) may read a second one that another
thread is changing, and that thread may be reading the first one: each would wait for the
other. A thread about to wait for a lock follows the threads that hold the locks waited for
and, when the chain leads back to itself, raises :class:`~dafzarr.errors.StateError`
instead of waiting forever (its change is undone as any failed change is).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

from ...errors import StateError

_T = TypeVar("_T")

# The lock each thread waits for, by thread id: a thread that would close a cycle raises.
_WAITING: dict[int, ChangeLock] = {}
_WAITING_LOCK = threading.Lock()


class ChangeLock:
    """A re-entrant lock held by every change, with the generation readers compare.

    Used as ``with lock:`` by writers (the outermost entry starts a change, its exit ends
    it, also when the change raises); :meth:`read` by readers.
    """

    __slots__ = ("_depth", "_gen", "_lock", "_name", "_owner")

    def __init__(self, name: str) -> None:
        #: What the lock guards, for messages (a data set, an archive).
        self._name = name
        self._lock = threading.RLock()
        #: Odd while a change is under way; moves by two with each change.
        self._gen = 0
        self._owner = 0  # the thread making the change (0: none)
        self._depth = 0

    def __enter__(self) -> Self:
        self._acquire()
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

    def call(self, read: Callable[[str], _T], arg: str) -> _T:
        """``read(arg)`` as :meth:`read` makes ``read()`` (a call per node lookup: no
        closure to make)."""
        gen = self._gen
        if not gen & 1:
            out = read(arg)
            if self._gen == gen:
                return out
        return self.read(lambda: read(arg))

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
            return self._locked(read)
        try:
            out = read()
        except Exception:
            if self._gen == gen:
                raise
            return self._locked(read)
        if self._gen == gen:
            return out
        return self._locked(read)

    def _locked(self, read: Callable[[], _T]) -> _T:
        self._acquire()
        try:
            return read()
        finally:
            self._lock.release()

    def _acquire(self) -> None:
        """Take the lock; raise rather than wait when waiting would close a cycle."""
        if self._lock.acquire(blocking=False):
            return
        me = threading.get_ident()
        with _WAITING_LOCK:
            holder, seen = self._owner, set()
            while holder and holder not in seen:
                if holder == me:
                    raise StateError(
                        f"can't wait for the change another thread makes to {self._name}: "
                        "that thread waits for a change this thread makes (two threads each "
                        "change a data set the other reads or changes)"
                    )
                seen.add(holder)
                waited = _WAITING.get(holder)
                holder = waited._owner if waited is not None else 0
            _WAITING[me] = self
        try:
            self._lock.acquire()
        finally:
            with _WAITING_LOCK:
                del _WAITING[me]
