"""Child process of the compaction and packing crash tests (``test_zipstore_compact_crash.py``).

Usage::

    python tests/zipstore/_compact_child.py compact ARCHIVE LOG
    python tests/zipstore/_compact_child.py pack DIRECTORY OUT LOG
    python tests/zipstore/_compact_child.py clear ARCHIVE LOG
    python tests/zipstore/_compact_child.py renew ARCHIVE LOG

``compact`` compacts ``ARCHIVE`` in place for ever, alternating an open store's
``compact()`` and ``MmapZipStore.compact(path)``; ``pack`` packs ``DIRECTORY`` into ``OUT``
for ever (``force=True``); ``clear`` writes keys ``k0``..``k19`` holding the run's number
and then deletes them all (which starts a fresh archive), for ever; ``renew`` rewrites keys
``k0``..``k9`` (binary values of the run, ``k0`` the first entry) in one batch and then ``k0``
alone, each commit leaving dead binary bytes first (which renews the archive), for ever. ``ready`` is written to ``LOG`` (unbuffered) once the imports are
done, and ``done N`` after each completed run, so the parent kills at instants inside runs.
"""

from __future__ import annotations

import os
import sys


def renew_value(run: int, i: int) -> bytes:
    """The value of key ``k{i}`` in run ``run`` of ``renew`` (binary: not plain text)."""
    return (b"\xfe" + str(run).encode()) * (1 + i * 3000)


def main(argv: list[str]) -> None:
    from dafzarr import MmapZipStore

    mode = argv[0]
    fd = os.open(argv[-1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b"ready\n")
    n = 0
    while True:
        if mode == "compact":
            if n % 2:
                MmapZipStore.compact(argv[1])
            else:
                with MmapZipStore(argv[1], "r+") as store:
                    store.compact()
        elif mode == "clear":
            with MmapZipStore(argv[1], "r+") as store, store.batch():
                for i in range(20):
                    store[f"k{i}"] = f"{n}".encode() * (1 + i * 5000)
            with MmapZipStore(argv[1], "r+") as store:
                store.delete_dir_sync("")
        elif mode == "renew":
            with MmapZipStore(argv[1], "r+") as store:
                with store.batch():
                    for i in range(10):
                        store[f"k{i}"] = renew_value(n, i)
                store["k0"] = renew_value(n, 0) + b"!"
        else:
            MmapZipStore.pack(argv[1], argv[2], force=True)
        os.write(fd, f"done {n}\n".encode())
        n += 1


if __name__ == "__main__":
    main(sys.argv[1:])
