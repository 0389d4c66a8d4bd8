"""Child process of the reader tests (``test_zipstore_readers.py``).

Usage::

    python tests/zipstore/_commit_child.py PATH

Opens the archive at ``PATH`` writable and commits until its standard input closes,
alternating the two
placements of the commit protocol: a small entry, whose new directory overlaps the live one
(the directory is relocated past the end of the file and copied back down), and an entry
larger than the directory (written below it; the truncate is the commit point). Every tenth
commit rewrites a key and every fifteenth deletes one. Prints ``ready`` once open and, at
the end, the number of commits made.
"""

from __future__ import annotations

import select
import sys
import zlib


def payload(key: str, version: int) -> bytes:
    """The bytes of one version of a key: the key, the version and a CRC-checked size."""
    size = 40 if zlib.crc32(key.encode()) % 2 else 300_000
    unit = f"{key}@{version};".encode()
    return (unit * (size // len(unit) + 1))[:size]


def main(path: str) -> None:
    from dafzarr import MmapZipStore

    with MmapZipStore(path, "r+") as store:
        print("ready", flush=True)
        i = 0
        while not select.select([sys.stdin], [], [], 0.002)[0]:  # until stdin closes
            i += 1
            key = f"c/{i}"
            store[key] = payload(key, 0)
            if i % 10 == 9:
                old = f"c/{i - 5}"
                if old in store:
                    store[old] = payload(old, 1)
            if i % 15 == 14:
                store.delete_sync(f"c/{i - 7}")
    print(i, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
