"""Child process of the ArrayFile concurrency tests (``test_arrayfile_concurrent.py``).

Usage::

    python tests/arrayfile/_af_compact_child.py PATH LOG

Opens the file set at ``PATH`` (made by :func:`create`) and, for ever, writes step ``k``
(1, 2, ...) into array ``a`` and flushes it, compacting after every third step. ``ready`` is
written to ``LOG`` (unbuffered) once the imports are done and the file set is open, and
``done K`` after each compaction.
"""

from __future__ import annotations

import os
import sys

import numpy as np

CHUNKS = 5  # array ``a`` holds CHUNKS chunks of 2 elements
STEPS_PER_COMPACTION = 3


def create(path: str) -> None:
    """A file set with arrays ``a`` (written by the child), ``b`` and ``c`` (by the parent)."""
    from dafzarr import ArrayFile, FileConfig

    with ArrayFile.create(path, config=FileConfig(codec="lz4")) as f:
        for name in ("a", "b", "c"):
            f.define_array(name, "i4", ["x"], [2 * CHUNKS], chunk_shape=[2])
            f.write_array(name, [0], np.zeros(2 * CHUNKS, "i4"))
        f.flush()
        f.compact()


def state(step: int) -> np.ndarray:
    """Array ``a`` once step ``step`` was flushed: step ``k`` writes ``k`` into chunk
    ``k % CHUNKS``."""
    out = np.zeros(2 * CHUNKS, "i4")
    for c in range(CHUNKS):
        last = step - (step - c) % CHUNKS
        out[2 * c : 2 * c + 2] = max(last, 0)
    return out


def check(a: np.ndarray, newest_seen: int) -> int:
    """The step whose state ``a`` is, which must not be older than ``newest_seen``; an
    :class:`AssertionError` for a mix of states."""
    step = int(a.max())
    assert (a == state(step)).all(), f"array a is no state of the file set: {a.tolist()}"
    assert step >= newest_seen, f"read step {step} after step {newest_seen}"
    return step


def main(argv: list[str]) -> None:
    from dafzarr import ArrayFile

    path, log = argv
    f = ArrayFile.open(path)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b"ready\n")
    step = 0
    while True:
        step += 1
        c = step % CHUNKS
        f.write_array("a", [2 * c], np.full(2, step, "i4"))
        f.flush()
        if step % STEPS_PER_COMPACTION == 0:
            f.compact()
            os.write(fd, f"done {step}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1:])
