"""Child process of the rewrite crash tests (``test_zipstore_rewrite_crash.py``).

Usage::

    python tests/zipstore/_rewrite_child.py PATH LOG SEED

Opens the archive at ``PATH`` writable and rewrites and deletes a few keys for ever, in
single writes, deletes and batches chosen by ``SEED`` (see :func:`operations`). Each
operation is announced in ``LOG`` with ``begin N`` before it starts and ``done N`` once it
returned, written unbuffered so that a SIGKILL loses no line. The parent replays the same
operations to know which states are allowed after the kill.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator

KEYS = tuple(f"k{i}" for i in range(5))
Op = list[tuple[str, str, int]]  # ("set", key, version) or ("del", key, 0)


def value(key: str, version: int, seed: int) -> bytes:
    """Distinguishable bytes of one version of a key (sizes from 0 to 2 MiB)."""
    rng = random.Random(f"{seed}/{key}/{version}")
    size = rng.choice((0, 3, 100, 5000, 70_000, 300_000, 2_100_000))
    unit = f"{key}:{version}|".encode()
    return (unit * (size // len(unit) + 1))[:size]


def operations(seed: int) -> Iterator[Op]:
    """The endless sequence of operations of a child with this seed."""
    rng = random.Random(seed)
    version = 0
    while True:
        kind = rng.random()
        if kind < 0.5:
            version += 1
            yield [("set", rng.choice(KEYS), version)]
        elif kind < 0.65:
            yield [("del", rng.choice(KEYS), 0)]
        else:
            op: Op = []
            for _ in range(rng.randint(2, 6)):
                if rng.random() < 0.8:
                    version += 1
                    op.append(("set", rng.choice(KEYS), version))
                else:
                    op.append(("del", rng.choice(KEYS), 0))
            yield op


def apply(state: dict[str, bytes], op: Op, seed: int) -> dict[str, bytes]:
    """The key -> value state after ``op``."""
    new = dict(state)
    for what, key, version in op:
        if what == "set":
            new[key] = value(key, version, seed)
        else:
            new.pop(key, None)
    return new


def main(path: str, log: str, seed: int) -> None:
    from dafzarr import MmapZipStore

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    store = MmapZipStore(path, "r+")
    store.keys()
    os.write(fd, b"ready\n")
    for n, op in enumerate(operations(seed)):
        os.write(fd, f"begin {n}\n".encode())
        if len(op) == 1:
            ((what, key, version),) = op
            if what == "set":
                store[key] = value(key, version, seed)
            else:
                store.delete_sync(key)
        else:
            with store.batch():
                for what, key, version in op:
                    if what == "set":
                        store[key] = value(key, version, seed)
                    else:
                        store.delete_sync(key)
        os.write(fd, f"done {n}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
