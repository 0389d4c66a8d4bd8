"""The base data sets, mutating operations and snapshots that the failure harnesses share.

``_io_error_child`` (an I/O error injected into each system call of an operation) and
``_crash_state_child`` (the states a power loss may leave) run the same kinds of
operations on MmapZipStore archives, ZarrDaf data sets and ArrayFile file sets; each
picks its own sizes and names from here. No import of this module is relative: the
children run as scripts too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dafzarr import ArrayFile, MmapZipStore, open_daf

# --- MmapZipStore --------------------------------------------------------------------------


def payload(seed: int, n: int) -> bytes:
    """``n`` random bytes, the same for the same ``seed``."""
    return np.random.default_rng(seed).bytes(n)


def zip_read(path: str, writable: bool) -> dict[str, bytes]:
    """Every entry of the archive, opened read-only or writable (which recovers)."""
    with MmapZipStore(path, "r+" if writable else "r") as s:
        return {k: bytes(s[k]) for k in s}


def set_entry(key: str, value: bytes) -> Callable[[MmapZipStore], None]:
    """The body that writes ``value`` as ``key``."""

    def body(s: MmapZipStore) -> None:
        s[key] = value

    return body


def delete_entry(key: str) -> Callable[[MmapZipStore], None]:
    """The body that deletes ``key``."""

    def body(s: MmapZipStore) -> None:
        del s[key]

    return body


def batch(writes: dict[str, bytes], deleted: str) -> Callable[[MmapZipStore], None]:
    """The body that writes ``writes`` and deletes ``deleted`` in one batch."""

    def body(s: MmapZipStore) -> None:
        with s.batch():
            for key, value in writes.items():
                s[key] = value
            del s[deleted]

    return body


def compact(s: MmapZipStore) -> None:
    """Compact the archive."""
    s.compact()


# --- ZarrDaf -------------------------------------------------------------------------------


def daf_base_of(cells: list[str]) -> Callable[[str], None]:
    """The base that creates a data set with the axis ``cell`` of ``cells`` and the
    vector ``age`` (0, 1, ...)."""

    def base(path: str) -> None:
        with open_daf(path, "w") as d:
            d.add_axis("cell", cells)
            d.set_vector("cell", "age", np.arange(len(cells), dtype=np.int32))

    return base


def daf_contents(d: Any) -> dict[str, Any]:
    """Every axis and vector of the open data set ``d``."""
    out: dict[str, Any] = {}
    for axis in sorted(d.axes_set()):
        out[f"axis {axis}"] = [str(x) for x in d.axis_np_entries(axis)]
        for name in sorted(d.vectors_set(axis)):
            out[f"vector {axis} {name}"] = d.get_np_vector(axis, name).tolist()
    return out


def set_vector(d: Any) -> None:
    """A new vector ``score`` of ``cell``."""
    d.set_vector("cell", "score", np.linspace(0, 1, d.axis_length("cell")))


def fill(d: Any) -> None:
    """A new vector ``filled`` of ``cell``, written in place."""
    n = d.axis_length("cell")
    with d.empty_dense_vector("cell", "filled", np.float64) as v:
        v[:] = np.arange(n) * 0.5


def delete_vector(d: Any) -> None:
    """The vector ``age`` deleted."""
    d.delete_vector("cell", "age")


# --- ArrayFile -----------------------------------------------------------------------------


def af_base(path: str) -> None:
    """A file set with one flushed array and a second sidecar."""
    with ArrayFile.create(path) as f:
        f.define_array("x", "u4", ["i"], [64])
        f.write_array("x", [0], np.arange(64, dtype=np.uint32))
        f.flush()
        f.write_array("x", [0], np.arange(8, dtype=np.uint32) + 1000)
        f.flush()


def af_flush(f: ArrayFile) -> None:
    """A new array and a change to ``x``, flushed."""
    f.define_array("y", "f8", ["i"], [32])
    f.write_array("y", [0], np.linspace(0, 1, 32))
    f.write_array("x", [8], np.arange(4, dtype=np.uint32) + 7)
    f.flush()


def af_compact(f: ArrayFile) -> None:
    """Compact the file set."""
    f.compact()


def af_snapshot(path: str) -> Any:
    """Every array of the file set."""
    with ArrayFile.open(path) as f:
        return {n: f.read_array(n).tolist() for n in sorted(f.list_arrays())}
