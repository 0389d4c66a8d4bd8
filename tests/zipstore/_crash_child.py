"""Child process of the MmapZipStore crash-injection tests (``test_zipstore_crash.py``).

Usage::

    python tests/zipstore/_crash_child.py op OP PATH [--step NAME] [--nth N]
    python tests/zipstore/_crash_child.py random PATH SEED

``op`` performs one operation of :data:`OPS` on the archive at ``PATH`` (opened ``"r+"``).
With ``--step``, a ``dafzarr._core.zipstore.commit.step_hook`` is installed that SIGKILLs this process
at the ``N``-th (default: first) time the store reports that step; it prints
``kill <step> #<n>`` just before. Every step seen is echoed to stderr. ``done`` is printed
when the operation returns (so a child that never reached its step says so).

``random`` appends the groups of :func:`random_groups` (singles and small batches) one after
the other, printing ``ready`` once the archive is open and then each key once the append
(or the whole batch) that wrote it has returned, until it is killed.

The payloads, the base archives and the operations are defined here and imported by the
parent, so both sides agree on the intended sequence of entries.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported lazily: a child installs its hook first
    from dafzarr import MmapZipStore

# --- Shared definitions ---------------------------------------------------------------------


def payload(key: str, size: int) -> bytes:
    """Deterministic pseudo-random bytes for an entry (distinct for every key)."""
    return np.random.default_rng(zlib.crc32(key.encode())).bytes(size)


_BASE_SIZES = (0, 1, 7, 8, 13, 100, 257, 1000)

# Entries of the base archives, (key, size) in archive order. "many" has a central directory
# (about 25 KB) much larger than a small entry, so a small append overlaps it.
BASES: dict[str, tuple[tuple[str, int], ...]] = {
    "empty": (),
    "few": (*((f"few/{i:02d}", (_BASE_SIZES[i % 8] + 1) * 3) for i in range(19)), ("few/19", 200)),
    "many": tuple((f"base/{i:04d}", _BASE_SIZES[i % 8]) for i in range(300)),
}

# Unpatched (filled) reservation left at the end of a base archive, for the recovery ops.
PENDING: dict[str, tuple[str, int]] = {
    "many+pending-small": ("pending/small", 10),
    "many+pending-large": ("pending/large", 100_000),
}


# A base archive ending with an archive comment (as zipped OME-Zarr writes one): every
# commit and every recovery must keep it byte for byte.
COMMENT = b'{"ome": {"version": "0.5", "jsonFirst": true}, "note": "' + b"c" * 200 + b'"}'
COMMENTED = ("many+comment",)


def base_entries(base: str) -> tuple[tuple[str, int], ...]:
    """The committed entries of a base archive (a pending reservation is not committed)."""
    return BASES[base.split("+")[0]]


@dataclass(frozen=True)
class Op:
    """One operation run by the child; ``entries`` are the (key, size) it tries to add."""

    name: str
    base: str
    kind: str
    entries: tuple[tuple[str, int], ...]


def _batch(prefix: str, sizes: list[int]) -> tuple[tuple[str, int], ...]:
    return tuple((f"{prefix}/{i:02d}", s) for i, s in enumerate(sizes))


# 50 entries with 70 KiB ones among them: the live CD is relocated several times
_BATCH50 = _batch("batch", [[0, 100, 70 * 1024, 3000, 10][i % 5] for i in range(50)])
# 50 entries that fill the room left before the relocated CD: the new CD does not fit below
# the live copy and goes past EOF ("commit:up-*")
_BATCH50X = _batch("xbatch", [[0, 100, 1000, 3000][i % 4] for i in range(50)])

# Single commits one after the other on the "many" base, then close: (what, key, size),
# with what "put" (payload(key, size)) or "del". The first commit relocates the directory
# and goes up past the end of the file; the next ones write the directory once, up or down
# in the free room, and close() moves it right after the last entry. The keys new, rewritten
# and deleted are chosen so that each kind of change meets both placements (the test checks
# it), and none is the first entry (whose death would renew the archive).
Action = tuple[str, str, int]
SEQUENCES: dict[str, tuple[Action, ...]] = {
    "seq": (
        ("put", "seq/new0", 10),
        ("put", "base/0100", 77),  # base size 13
        ("del", "base/0150", 0),
        ("put", "seq/new1", 100),
        ("put", "base/0101", 5),  # base size 257
        ("del", "seq/new0", 0),
        ("put", "seq/new2", 0),
        ("put", "base/0100", 3000),  # rewritten again
    ),
}
SEQUENCE_BASE = "many"
# Called after each action of a sequence (the parent's in-process run marks the commits).
action_done: Callable[[], None] | None = None


def apply_action(state: dict[str, bytes], action: Action) -> dict[str, bytes]:
    """The key -> value state (in the archive's order) after one action of a sequence."""
    what, key, size = action
    new = {k: v for k, v in state.items() if k != key}
    if what == "put":
        new[key] = payload(key, size)
    return new


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        # a 10-byte entry after 300 entries: the new CD overlaps the live one
        Op("small", "many", "append", (("new/small", 10),)),
        Op("big70k", "many", "append", (("new/big70k", 70 * 1024),)),
        Op("big2m", "many", "append", (("new/big2m", 2 * 1024 * 1024 + 3),)),
        Op("zero", "many", "append", (("new/zero", 0),)),
        Op("first", "empty", "append", (("new/first", 10),)),
        Op("small-comment", "many+comment", "append", (("new/small", 10),)),
        Op("batch50", "many", "batch", _BATCH50),
        Op("batch50x", "many", "batch", _BATCH50X),
        Op("batch50-comment", "many+comment", "batch", _BATCH50),
        Op("batch50x-comment", "many+comment", "batch", _BATCH50X),
        # reserve, fill, patch
        Op("reserve", "many", "reserve", (("res/entry", 1000),)),
        # reserve, fill, never patch: exit normally / SIGKILL itself
        Op("reserve-unpatched-exit", "many", "reserve-exit", (("res/entry", 1000),)),
        Op("reserve-unpatched-kill", "many", "reserve-kill", (("res/entry", 1000),)),
        # reserve, fill, append one more entry, never patch, exit normally
        Op(
            "reserve-unpatched-append",
            "many",
            "reserve-append",
            (("res/entry", 1000), ("res/after", 50)),
        ),
        # writable open of an archive ending in an unpatched reservation: the rollback,
        # with (small) and without (large) overlap of the live CD
        Op("recover-small", "many+pending-small", "open", (PENDING["many+pending-small"],)),
        Op("recover-large", "many+pending-large", "open", (PENDING["many+pending-large"],)),
        # single commits in a row (new keys, rewrites, deletes): see SEQUENCES
        *(Op(name, SEQUENCE_BASE, "sequence", ()) for name in SEQUENCES),
    )
}


def perform(store: MmapZipStore, op: Op) -> None:
    """Run ``op`` on an open writable store (the "-kill" variant stops before killing)."""
    if op.kind == "append":
        ((key, size),) = op.entries
        store[key] = payload(key, size)
    elif op.kind == "batch":
        # A small room: the batch relocates the directory several times and, for batch50x,
        # commits past the end of the file first.
        store._handle.batch_room = 1 << 16
        with store.batch():
            for key, size in op.entries:
                store[key] = payload(key, size)
    elif op.kind in ("reserve", "reserve-exit", "reserve-kill", "reserve-append"):
        key, size = op.entries[0]
        view = store.reserve_entry(key, size)
        view[:] = np.frombuffer(payload(key, size), np.uint8)
        del view
        if op.kind == "reserve":
            store.patch_entry_crc(key)
        elif op.kind == "reserve-append":
            key2, size2 = op.entries[1]
            store[key2] = payload(key2, size2)
    elif op.kind == "open":
        store.keys()
    elif op.kind == "sequence":
        for what, key, size in SEQUENCES[op.name]:
            if what == "put":
                store[key] = payload(key, size)
            else:
                del store[key]
            if action_done is not None:  # the parent's recording run marks each commit
                action_done()
    else:  # pragma: no cover - a typo in OPS
        raise ValueError(op.kind)


# Sizes of the random-time child: empty, small, > 64 KiB and > 1 MiB entries.
RANDOM_SIZES = (0, 100, 70 * 1024, 2 * 1024 * 1024)
RANDOM_WEIGHTS = (25, 40, 28, 7)
RANDOM_BASE = "few"


def random_groups(seed: int, n: int = 4000) -> list[list[tuple[str, int]]]:
    """The appends of the random-time child: groups of one entry (a plain append) or of
    2-5 entries (one batch), in order."""
    rng = random.Random(seed)
    groups = []
    for i in range(n):
        count = rng.randint(2, 5) if rng.random() < 0.2 else 1
        sizes = rng.choices(RANDOM_SIZES, RANDOM_WEIGHTS, k=count)
        if count == 1:
            groups.append([(f"r/{i:05d}", sizes[0])])
        else:
            groups.append([(f"r/{i:05d}/{j}", s) for j, s in enumerate(sizes)])
    return groups


# --- Child process --------------------------------------------------------------------------


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install_hook(step: str, nth: int) -> None:
    import dafzarr._core.zipstore.commit

    seen = {"n": 0}

    def hook(name: str) -> None:
        sys.stderr.write(f"step {name}\n")
        sys.stderr.flush()
        if name == step:
            seen["n"] += 1
            if seen["n"] == nth:
                _say(f"kill {step} #{nth}")
                _kill_self()

    dafzarr._core.zipstore.commit.step_hook = hook


def _run_op(name: str, path: str, step: str | None, nth: int) -> None:
    from dafzarr import MmapZipStore, RecoveryWarning

    op = OPS[name]
    if step is not None:
        _install_hook(step, nth)
    warnings.simplefilter("ignore", RecoveryWarning)
    store = MmapZipStore(path, "r+")
    perform(store, op)
    if op.kind == "reserve-kill":
        _say("filled")
        _kill_self()
    store.close()
    _say("done")


def _run_random(path: str, seed: int) -> None:
    from dafzarr import MmapZipStore

    store = MmapZipStore(path, "r+")
    store.keys()  # open now, so that "ready" means appending starts
    _say("ready")
    for group in random_groups(seed):
        if len(group) == 1:
            ((key, size),) = group
            store[key] = payload(key, size)
        else:
            with store.batch():
                for key, size in group:
                    store[key] = payload(key, size)
        _say("\n".join(key for key, _ in group))
    store.close()
    _say("done")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "op":
        rest = argv[1:]
        step, nth = None, 1
        if "--step" in rest:
            i = rest.index("--step")
            step = rest[i + 1]
            del rest[i : i + 2]
        if "--nth" in rest:
            i = rest.index("--nth")
            nth = int(rest[i + 1])
            del rest[i : i + 2]
        name, path = rest
        _run_op(name, path, step, nth)
        return 0
    if argv and argv[0] == "random":
        _, path, seed = argv
        _run_random(path, int(seed))
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
