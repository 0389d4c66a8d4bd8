"""The sizes that bound every decode: when a claim must be proven first, and the pieces."""

from __future__ import annotations

__all__ = ["INPUT_PIECE", "PIECE", "PROOF_RATIO", "PROOF_SLACK", "needs_proof"]

PROOF_RATIO = 4
"""A claimed size above this many times the compressed size (plus :data:`PROOF_SLACK`) is
allocated only once the data has shown, decoding in pieces, that it produces that size."""

PROOF_SLACK = 256 << 10
"""Small blocks decode at once whatever their ratio (a chunk of zeros, a short document)."""

PIECE = 64 << 10
"""Output per decoder call: the transient memory of a decode, beside its result."""

INPUT_PIECE = 64 << 10
"""Compressed bytes handed to a decoder at a time, so that it never holds a copy of the rest."""


def needs_proof(size: int, compressed: int) -> bool:
    """Whether a claim of ``size`` decoded bytes from ``compressed`` bytes is too large to
    allocate on the claim alone (see :data:`PROOF_RATIO`)."""
    return size > PROOF_RATIO * compressed + PROOF_SLACK
