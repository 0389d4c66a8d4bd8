"""What users hand the store: keys checked and encoded as ZIP names, values seen as bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
from zarr.core.buffer import Buffer

from ...errors import InvalidArgumentError, InvalidArgumentTypeError
from ..casting import unmasked
from . import ziprecords as zf

__all__ = ["as_bytes_view", "encode_key"]


def as_bytes_view(data: Any, where: str) -> memoryview:
    """A flat unsigned-byte view of a bytes-like object or numpy array, without a copy.

    Arrays whose bytes do not hold their values are refused
    (:class:`~dafzarr.errors.InvalidArgumentTypeError` naming ``where``, the entry): a
    masked array that masks values (:func:`~dafzarr._core.casting.unmasked`) and an array of
    Python objects (references into this process).
    """
    if isinstance(data, Buffer):
        data = data.as_buffer_like()
    if isinstance(data, np.ndarray):
        data = unmasked(data, where)
        if data.dtype.hasobject:
            raise InvalidArgumentTypeError(
                f"{where}: an array of Python objects ({data.dtype}) cannot be stored: it "
                "holds references, not values; convert it to a numeric, bytes (S) or "
                "unicode (U) array first"
            )
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return memoryview(data.reshape(-1).view(np.uint8))
    try:
        mv = memoryview(data)
    except TypeError:
        raise InvalidArgumentTypeError(
            f"expected a bytes-like object or numpy array, got {type(data).__name__}"
        ) from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv


def encode_key(key: str, path: str) -> bytes:
    """The UTF-8 ZIP name of ``key``, refused when it cannot name an entry of ``path``.

    The rule is the compiled writer's (:func:`~._format.plain_key`); a refused key is told
    what is wrong with it.
    """
    if not isinstance(key, str):
        raise InvalidArgumentTypeError(f"keys are str, got {type(key).__name__}: {key!r}")
    try:
        raw: bytes | None = key.encode("utf-8")
    except UnicodeEncodeError:
        raw = None
    if raw is not None and zf.plain_key(raw):
        return raw
    if not key:
        raise InvalidArgumentError(f"{path}: empty key")
    if key.endswith("/") or "//" in key:
        raise InvalidArgumentError(f"{path}: invalid key {key!r} (empty path component)")
    reason = zf.unsafe_name_reason(key)
    if reason is not None:
        raise InvalidArgumentError(
            f"{path}: invalid key {key!r}: {reason.replace('its name', 'it')}"
        )
    if raw is None:
        raise InvalidArgumentError(f"{path}: key is not encodable as UTF-8: {key!r}")
    if len(raw) > zf.MAX_NAME:
        raise InvalidArgumentError(
            f"{path}: key is {len(raw)} bytes long in UTF-8; ZIP names are limited to "
            f"{zf.MAX_NAME} bytes: {key[:60]!r}..."
        )
    raise InvalidArgumentError(f"{path}: invalid key {key!r}")  # pragma: no cover
