"""One event loop, in a daemon thread, that runs every object-store request of the process.

obstore's requests are coroutines; running them on one loop lets a blocking caller wait for
one request (or several at once) with a deadline that really ends it: when time is up the
coroutine is cancelled, which drops obstore's request and its connection.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

__all__ = ["DeadlinePassed", "run", "within"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


class DeadlinePassed(Exception):
    """The awaitable given to :func:`within` did not finish in time (it was cancelled)."""


def _running_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="dafzarr-io", daemon=True
            ).start()
            _loop = loop
        return _loop


def _forget_loop_after_fork() -> None:
    """A forked child has no loop thread: the next request starts one."""
    global _loop, _lock
    _loop = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_loop_after_fork)


async def within(coro: Awaitable[T], seconds: float) -> T:
    """Await ``coro``; raise :class:`DeadlinePassed` (cancelling it) after ``seconds``."""
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            return await coro
    except TimeoutError:
        if timer.expired():
            raise DeadlinePassed from None
        raise


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the shared loop and wait for its result (or exception)."""
    loop = _running_loop()
    if _in_loop_thread(loop):
        coro.close()
        raise RuntimeError("a blocking read was called from dafzarr's own I/O loop")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def _in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
