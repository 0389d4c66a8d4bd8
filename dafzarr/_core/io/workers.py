"""Worker threads that carry object-store requests, so that a caller waits for an answer at
most until its deadline.

obstore's blocking calls cannot be interrupted; run in a worker, they leave the caller free to
give up when its deadline passes. The abandoned request then ends by obstore's own timeouts
(see :meth:`HttpOptions.client_options`), and checks the deadline between chunks of its
body, so that it stops reading soon after the caller gave up. The workers are daemon threads:
a request left behind never delays the end of the process.
"""

from __future__ import annotations

import collections
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from typing import Any, TypeVar

__all__ = ["WORKERS", "DeadlinePassed", "ForkedAfterUse", "call_within", "map_within"]

_T = TypeVar("_T")

#: Requests in flight at once in the process (others wait for a worker).
WORKERS = 64


class _Workers:
    """Daemon threads taking calls from one queue, started as needed up to :data:`WORKERS`."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], _T]) -> Future[_T]:
        future: Future[_T] = Future()
        with self._lock:
            if self._idle:
                self._idle -= 1  # a waiting worker takes it
            elif self._threads < WORKERS:
                self._threads += 1
                threading.Thread(target=self._work, name="dafzarr-io", daemon=True).start()
            # else: every worker is busy; the call waits in the queue
        self._calls.put((future, fn))
        return future

    def _work(self) -> None:
        while True:
            future, fn = self._calls.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - raised in the caller instead
                    future.set_exception(exc)
            del future, fn
            with self._lock:
                self._idle += 1


_lock = threading.Lock()
_executor: _Workers | None = None
#: True in a process forked after requests ran: obstore's runtime (tokio) lost its threads in
#: the fork, and a request would never be answered.
_inherited = False


class ForkedAfterUse(Exception):
    """obstore cannot run in this process: it was forked after obstore had run."""

    def __init__(self) -> None:
        super().__init__(
            "obstore, which carries reads over HTTP(S) and object stores, cannot run in a "
            "process forked after it had run (its runtime's threads are not copied by fork); "
            "start worker processes with the 'spawn' or 'forkserver' method, or read only "
            "in the workers"
        )


class DeadlinePassed(Exception):
    """A call given to :func:`call_within` or :func:`map_within` did not finish in time."""

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self.index = index


def _workers() -> _Workers:
    global _executor
    if _inherited:
        raise ForkedAfterUse
    with _lock:
        if _executor is None:
            _executor = _Workers()
        return _executor


def _forget_workers_after_fork() -> None:
    """A forked child has none of its parent's threads: the next request starts new ones."""
    global _executor, _lock, _inherited
    _inherited = _inherited or _executor is not None
    _executor = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers_after_fork)


def _result(future: Future[_T], until: float, index: int) -> _T:
    done, _ = wait_for([future], timeout=max(0.0, until - time.monotonic()))
    if not done:
        future.cancel()
        raise DeadlinePassed(index)
    return future.result()


def call_within(fn: Callable[[], _T], seconds: float) -> _T:
    """``fn()`` in a worker; its result or exception, or :class:`DeadlinePassed` after
    ``seconds``."""
    until = time.monotonic() + seconds
    return _result(_workers().submit(fn), until, 0)


def map_within(fns: Sequence[Callable[[], _T]], seconds: float, window: int) -> list[_T]:
    """Every ``fn()``, up to ``window`` at once, each given ``seconds`` from when it was
    handed to a worker; the first failure in order raises (``DeadlinePassed(index)`` for a
    call that took too long) and the calls not yet started are dropped."""
    pool = _workers()
    queued: collections.deque[tuple[Future[_T], float]] = collections.deque()
    results: list[_T] = []
    following = iter(fns)

    def top_up() -> None:
        while len(queued) < window:
            fn = next(following, None)
            if fn is None:
                return
            queued.append((pool.submit(fn), time.monotonic() + seconds))

    top_up()
    try:
        while queued:
            future, until = queued[0]
            results.append(_result(future, until, len(results)))
            queued.popleft()
            top_up()
    finally:
        for future, _ in queued:
            future.cancel()
    return results
