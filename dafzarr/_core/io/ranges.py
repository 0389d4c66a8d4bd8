"""Byte ranges of zarr-python's ``get`` requests, resolved against a value's length."""

from __future__ import annotations

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from ...errors import InvalidArgumentTypeError

__all__ = ["byte_range_bounds"]


def byte_range_bounds(n: int, byte_range: ByteRequest | None) -> tuple[int, int]:
    """``(start, stop)`` of ``byte_range`` within a value of ``n`` bytes (clamped to it)."""
    if byte_range is None:
        return 0, n
    if isinstance(byte_range, RangeByteRequest):
        start = min(max(byte_range.start, 0), n)
        return start, min(max(byte_range.end, start), n)
    if isinstance(byte_range, OffsetByteRequest):
        return min(max(byte_range.offset, 0), n), n
    if isinstance(byte_range, SuffixByteRequest):
        return max(n - byte_range.suffix, 0), n
    raise InvalidArgumentTypeError(f"Unexpected byte_range, got {byte_range}.")
