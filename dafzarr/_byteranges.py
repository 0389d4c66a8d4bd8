"""Byte ranges of zarr-python's ``get`` requests (kept here for older imports; see :mod:`._io`)."""

from __future__ import annotations

from ._io import byte_range_bounds

__all__ = ["byte_range_bounds"]
