"""Daf operations between data sets: copies with aligned axes, concatenation, axis
reconstruction, adapters and computation contracts."""

from __future__ import annotations

__all__: list[str] = []
