"""Writer and reader processes for ``test_cached_client``.

``python _cached_client_child.py ROLE KIND PATH SECONDS``: ROLE ``writer`` writes
generations into PATH (the server's view) until SECONDS passed or until the file
``PATH.stop`` exists, then prints the number of generations committed; ROLE ``reader``
opens PATH (the client's view) read-only again and again for SECONDS, checks every value
it reads against what some committed generation held, and prints a JSON summary:
``states`` (generations seen whole, by generation), ``errors`` (DafzarrError class
names, counted), ``torn`` (descriptions of reads that were neither). KIND is ``zip``
(MmapZipStore), ``daf-dir`` or ``daf-zip`` (a ZarrDaf data set).

A generation ``g`` of the store holds the keys ``k{i}`` for which ``(g + i) % 5 != 0``
(so each commit deletes one key and brings another back), each valued
:func:`zip_value` ``(g, i)``: its key, its generation, a payload whose length depends on
both, and the SHA-256 of all that. A generation of a data set holds vectors ``a`` and
``b`` on axis ``cell``, each ``vector_value(g, name)`` (set one after the other, so a
reader of a ZIP, which sees the archive as it was when it opened, may see ``a`` one
generation ahead of ``b``; a reader of a directory reads each property as it is when read).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import sys
import time
from typing import Any

import numpy as np

KEYS = 12
CELLS = 3000


def zip_keys(g: int) -> set[str]:
    """The keys generation ``g`` of the store holds."""
    return {f"k{i}" for i in range(KEYS) if (g + i) % 5 != 0}


def zip_value(g: int, i: int) -> bytes:
    """The value of key ``k{i}`` in generation ``g``."""
    body = f"k{i}|{g}|".encode() + bytes([(g * 7 + i) % 251]) * (100 + ((g * 131 + i * 17) % 40000))
    return body + hashlib.sha256(body).digest()


def vector_value(g: int, name: str) -> np.ndarray[Any, Any]:
    """Vector ``name`` of generation ``g``: ``[g, g*K + 1 + name offset, ...]``."""
    out = np.arange(CELLS, dtype=np.int64) * 1_000_003 + g * 7 + (name == "b")
    out[0] = g
    return out


def _write_zip(path: str, stop: float) -> int:
    from dafzarr import MmapZipStore

    g = 0
    while time.monotonic() < stop and not os.path.exists(path + ".stop"):
        # A few generations on each writable open, then close and open again.
        # renew_limit=0: no commit replaces the archive by a renamed copy (a reader holding
        # it open while it is replaced may lose it, see docs/guide/filesystems.rst).
        with MmapZipStore(path, "w" if g == 0 else "r+", renew_limit=0) as store:
            for _ in range(5):
                g += 1
                with store.batch():
                    for i in range(KEYS):
                        key = f"k{i}"
                        if key in zip_keys(g):
                            store[key] = zip_value(g, i)
                        elif key in store:
                            del store[key]
                    store["gen"] = str(g).encode()
    return g


def _write_daf(path: str, stop: float) -> int:
    from dafzarr import open_daf

    g = 0
    with open_daf(path, "w") as daf:
        daf.add_axis("cell", [f"c{i}" for i in range(CELLS)])
        while time.monotonic() < stop and not os.path.exists(path + ".stop"):
            g += 1
            daf.set_vector("cell", "a", vector_value(g, "a"), overwrite=True)
            daf.set_vector("cell", "b", vector_value(g, "b"), overwrite=True)
    return g


def _read_zip(path: str) -> str | int:
    from dafzarr import MmapZipStore

    with MmapZipStore(path, "r") as store:
        keys = set(store)
        if not keys:
            return 0  # the empty archive the writer's mode "w" made
        g = int(bytes(store["gen"]))
        if keys != zip_keys(g) | {"gen"}:
            return f"generation {g} lists {sorted(keys)}"
        # A random half of the keys: the pages of the others stay out of the client's cache.
        for key in random.sample(sorted(keys - {"gen"}), KEYS // 2 - 1):
            value = bytes(store[key])
            if value != zip_value(g, int(key[1:])):
                return f"generation {g}: {key} holds {value[:20]!r}... ({len(value)} bytes)"
    return g


def _read_daf(path: str, snapshot: bool) -> str | int:
    from dafzarr import open_daf

    with open_daf(path, "r") as daf:
        if not daf.has_axis("cell") or not daf.has_vector("cell", "b"):
            return 0
        a = np.asarray(daf.get_np_vector("cell", "a"))
        b = np.asarray(daf.get_np_vector("cell", "b"))
    ga, gb = int(a[0]), int(b[0])
    if not np.array_equal(a, vector_value(ga, "a")):
        return f"vector a of generation {ga} holds other values"
    if not np.array_equal(b, vector_value(gb, "b")):
        return f"vector b of generation {gb} holds other values"
    if snapshot and ga not in (gb, gb + 1):
        return f"vector a of generation {ga} beside b of generation {gb}"
    return gb


def _read(kind: str, path: str, stop: float) -> dict[str, Any]:
    from dafzarr.errors import DafzarrError

    states: collections.Counter[int] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    torn: list[str] = []
    reads = 0
    while time.monotonic() < stop:
        reads += 1
        try:
            seen = _read_zip(path) if kind == "zip" else _read_daf(path, kind == "daf-zip")
        except DafzarrError as exc:
            errors[type(exc).__name__] += 1
            continue
        if isinstance(seen, str):
            torn.append(seen)
        else:
            states[seen] += 1
    return {
        "reads": reads,
        "states": len(states),
        "newest": max(states, default=-1),
        "errors": dict(errors),
        "torn": torn[:10],
        "torn_count": len(torn),
    }


def main() -> None:
    role, kind, path, seconds = sys.argv[1:]
    import dafzarr  # noqa: F401  (imported before the clock starts)

    stop = time.monotonic() + float(seconds)
    if role == "writer":
        print(_write_zip(path, stop) if kind == "zip" else _write_daf(path, stop))
    else:
        print(json.dumps(_read(kind, path, stop)))


if __name__ == "__main__":
    main()
