"""Copying a Daf data set between backends and layouts (``dafzarr daf convert``)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from ._zarrdaf import ZarrDaf

__all__ = ["copy_daf"]


class _Progress:
    """A one-line progress report on a stream (stderr by default)."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.done = 0
        self.t0 = time.perf_counter()

    def step(self, what: str) -> None:
        self.done += 1
        if self.stream is not None:
            pct = 100 * self.done // self.total
            elapsed = time.perf_counter() - self.t0
            self.stream.write(f"\r[{pct:3d}%] {self.done}/{self.total} {elapsed:6.1f}s {what:<40.40}")
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def _copy_node(src: ZarrDaf, dst: ZarrDaf, path: str) -> None:
    """Copy one stored property (an array, or a sparse group of arrays) as it is stored."""
    items: list[tuple[str, Any]] = []
    if src._node_kind(path) == "array":
        info = src._array_info(path)
        items += dst._array_items(path, src._read_array(path), info.dtype)
    else:
        for part in ("nzind", "colptr", "rowval", "nzval"):
            child = f"{path}/{part}"
            if src._node_kind(child) == "array":
                info = src._array_info(child)
                items += dst._array_items(child, src._read_array(child), info.dtype)
        items += dst._layout.group_docs(path).items()
    dst._write(items)


def copy_daf(source: ZarrDaf, destination: ZarrDaf, *, progress: bool | TextIO = False) -> None:
    """Copy every scalar, axis, vector and matrix of ``source`` into ``destination``.

    Properties keep their element types, index types and sparsity, and both stored layouts
    of a matrix are copied as they are (no relayout is computed). ``progress=True`` reports
    on stderr (or pass a stream).
    """
    stream = sys.stderr if progress is True else (progress or None)
    axes = sorted(source.axes_set())
    vectors = [(a, v) for a in axes for v in sorted(source.vectors_set(a))]
    matrices = [
        (r, c, m)
        for r in axes
        for c in axes
        for m in sorted(source.matrices_set(r, c, relayout=False))
    ]
    scalars = sorted(source.scalars_set())
    bar = _Progress(len(scalars) + len(axes) + len(vectors) + len(matrices), stream)
    for name in scalars:
        destination.set_scalar(name, source.get_scalar(name))
        bar.step(f"scalar {name}")
    for axis in axes:
        destination.add_axis(axis, source.axis_np_entries(axis))
        bar.step(f"axis {axis}")
    for axis, name in vectors:
        _copy_node(source, destination, f"vectors/{axis}/{name}")
        bar.step(f"vector {axis}/{name}")
    for rows, cols, name in matrices:
        _copy_node(source, destination, f"matrices/{rows}/{cols}/{name}")
        bar.step(f"matrix {rows},{cols}/{name}")
