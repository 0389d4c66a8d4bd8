"""Child process of the ArrayFile crash tests (``test_arrayfile_crash.py``).

Usage::

    python tests/arrayfile/_af_crash_child.py PATH KILL_AT

Runs :func:`script` on the file set at ``PATH``. Every publishing file-system call of the
backends (``os.link``, ``os.replace``, ``os.unlink``) counts as two points, just before and
just after the call; at point ``KILL_AT`` the process SIGKILLs itself (``-1``: never). Before
each call it prints ``point N NAME`` (the point just before it, the call's name). After each
operation that returned, it prints one line (``ack ...``), so the parent knows what was
durably done. At the end it prints ``points N``, the number of points passed.

The script and the expected contents are defined here and imported by the parent.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

N_ROUNDS = 4
STEPS = [
    "created",
    "flushed 0",
    "flushed 1",
    "compacted 1",
    "flushed 2",
    "flushed 3",
    "redefined a0",
    "compacted 2",
]


def values(i: int, version: int) -> np.ndarray:
    """The data of array ``a{i}`` after its ``version``-th write."""
    return (np.arange(40, dtype="i4") * (i + 1) + 1000 * version).astype("i4")


def script(path: str, ack: Callable[[str], None]) -> None:
    from dafzarr import ArrayFile, FileConfig

    cfg = FileConfig(codec="lz4", block_target_size=64)
    f = ArrayFile.create(path, config=cfg)
    ack("created")
    for i in range(N_ROUNDS):
        f.define_array(f"a{i}", "i4", ["x"], [40], chunk_shape=[7])
        f.write_array(f"a{i}", [0], values(i, 0))
        f.set_attribute(f"a{i}", "round", i)
        if i >= 1:
            f.write_array(f"a{i - 1}", [0], values(i - 1, 1))
        f.flush()
        ack(f"flushed {i}")
        if i == 1:
            f.compact()
            ack("compacted 1")
    f.delete("a0")
    f.define_array("a0", "i4", ["x"], [40], chunk_shape=[7], fill_value=-5)
    f.write_array("a0", [14], values(0, 2)[14:21])
    f.flush()
    ack("redefined a0")
    f.compact()
    ack("compacted 2")
    f.close()


def expected(acks: list[str]) -> dict[str, tuple[np.ndarray, dict[str, Any]]]:
    """Name -> (data, attributes) that must be readable after the acknowledged steps."""
    out: dict[str, tuple[np.ndarray, dict[str, Any]]] = {}
    for a in acks:
        if a.startswith("flushed "):
            i = int(a.split()[1])
            out[f"a{i}"] = (values(i, 0), {"round": i})
            if i >= 1:
                out[f"a{i - 1}"] = (values(i - 1, 1), out[f"a{i - 1}"][1])
        elif a == "redefined a0":
            data = np.full(40, -5, "i4")
            data[14:21] = values(0, 2)[14:21]
            out["a0"] = (data, {})
    return out


def main() -> None:
    path, kill_at = sys.argv[1], int(sys.argv[2])
    count = [0]

    def point() -> None:
        if count[0] == kill_at:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        count[0] += 1

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            print(f"point {count[0]} {fn.__name__}", flush=True)
            point()
            out = fn(*args, **kwargs)
            point()
            return out

        return wrapped

    os.link = wrap(os.link)  # type: ignore[assignment]
    os.replace = wrap(os.replace)  # type: ignore[assignment]
    os.unlink = wrap(os.unlink)  # type: ignore[assignment]

    def ack(text: str) -> None:
        print(f"ack {text}", flush=True)

    script(path, ack)
    print(f"points {count[0]}", flush=True)


if __name__ == "__main__":
    main()
