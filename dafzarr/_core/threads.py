"""Run one piece of work per part on threads, the calling thread taking the first part.

The compiled kernels (transposition, sparse conversion) release the GIL, so parts given to
threads run on separate cores. An exception raised in any part is raised again by the
calling thread once every part has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any


def on_threads(work: Callable[..., Any], parts: Sequence[tuple[Any, ...]]) -> None:
    """``work(*part)`` for each of ``parts``: the first on this thread, each other on its
    own thread; returns when all are done, raising the first failure."""
    failures: list[BaseException] = []

    def run(*part: Any) -> None:
        try:
            work(*part)
        except BaseException as exc:  # noqa: BLE001 - raised again by the calling thread
            failures.append(exc)

    workers = [threading.Thread(target=run, args=part, daemon=True) for part in parts[1:]]
    for w in workers:
        w.start()
    if parts:
        run(*parts[0])
    for w in workers:
        w.join()
    if failures:
        raise failures[0]
