"""Regions and chunks of an array: checked regions, the chunks a region touches, and the
slices that map one onto the other."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import InvalidArgumentError, OutOfBoundsError
from .records import Meta

__all__ = ["chunks_in", "clipped", "region"]


def clipped(meta: Meta, coord: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of chunk ``coord``, cut at the array's edge."""
    return tuple(
        min(c * cs + cs, s) - c * cs
        for c, cs, s in zip(coord, meta.chunk_shape, meta.shape, strict=True)
    )


def region(
    meta: Meta, start: Sequence[int] | None, shape: Sequence[int] | None, *, write: bool = False
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(start, shape) of a region of the array (default: all of it), or ``IndexError``."""
    nd = len(meta.shape)
    st = (0,) * nd if start is None else tuple(int(s) for s in start)
    if len(st) != nd:
        raise InvalidArgumentError(f"array {meta.name!r}: start {st} has {len(st)} axes, not {nd}")
    sh = (
        tuple(s - a for s, a in zip(meta.shape, st, strict=True))
        if shape is None
        else tuple(int(s) for s in shape)
    )
    if len(sh) != nd:
        raise InvalidArgumentError(f"array {meta.name!r}: shape {sh} has {len(sh)} axes, not {nd}")
    for a, n, s in zip(st, sh, meta.shape, strict=True):
        if a < 0 or n < 0 or a + n > s:
            what = "data" if write else "region"
            raise OutOfBoundsError(
                f"array {meta.name!r}: {what} at {st} of shape {sh} does not fit in {meta.shape}"
            )
    return st, sh


def chunks_in(
    meta: Meta, start: tuple[int, ...], shape: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], tuple[Any, ...], tuple[Any, ...]]]:
    """(chunk coord, slice of the region, slice of the clipped chunk) for each chunk hit."""
    if any(n == 0 for n in shape):
        return
    if not shape:  # 0-d: index with ``...`` so object arrays yield arrays, not elements
        yield (), (Ellipsis,), (Ellipsis,)
        return
    ranges = [
        range(a // c, (a + n - 1) // c + 1)
        for a, n, c in zip(start, shape, meta.chunk_shape, strict=True)
    ]
    for coord in itertools.product(*ranges):
        dst = []
        src = []
        for c, cs, a, n in zip(coord, meta.chunk_shape, start, shape, strict=True):
            lo = max(c * cs, a)
            hi = min(c * cs + cs, a + n)
            dst.append(slice(lo - a, hi - a))
            src.append(slice(lo - c * cs, hi - c * cs))
        yield coord, tuple(dst), tuple(src)
