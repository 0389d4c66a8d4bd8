"""Every compressed read of dafzarr: one registry of methods, one bounded decode.

ZIP entries (:func:`dafzarr._core.zipstore.methods.decode_entry`), ArrayFile blocks and segments, and the inner chunks of
Daf packed arrays all decode through :func:`decode`, which never allocates more than the
compressed data can prove it decodes to (the rules are in :mod:`._decode`). The methods are
registered once, in :mod:`._registry`:

========== ======= ======================= ============= ==================================
name       ZIP id  decoder                 most ratio    size provable from the data
========== ======= ======================= ============= ==================================
stored     0       (the bytes themselves)  1             yes
deflate    8       zlib                    1032          no
deflate64  9       inflate64 (optional)    29,128        no
bzip2      12      bz2                     none          no
zstd       93      numcodecs + zstandard   frame headers no (bounded by its headers)
gzip               zlib                    1032          no
lz4                lz4.block               255           yes (its sequences add up to it)
blosc              numcodecs               none          yes (its header, taken as is)
========== ======= ======================= ============= ==================================

Decoding in bounded pieces uses the libraries' own limits: zlib's and bz2's ``max_length``,
``zstandard``'s stream reader (which reads across zstd frames and returns at most the bytes
asked for; numcodecs' ``Zstd`` decodes a frame of unknown size whole, with no output limit),
and inflate64 fed 256 bytes at a time (it has no output limit). One-call decodes into a
buffer of a proven size use zlib, numcodecs' zstd (one frame at a time, into slices of the
output) and ``lz4.block``.
"""

from __future__ import annotations

from .decode import decode
from .limits import PIECE, PROOF_RATIO, PROOF_SLACK, needs_proof
from .registry import (
    DEFLATE64_MAX_RATIO,
    DEFLATE_MAX_RATIO,
    METHODS,
    Method,
    lookup,
    register,
    zip_method,
    zip_methods,
)
from .whole import LZ4_MAX_RATIO
from .zstd import frames, max_output

__all__ = [
    "DEFLATE64_MAX_RATIO",
    "DEFLATE_MAX_RATIO",
    "LZ4_MAX_RATIO",
    "METHODS",
    "PIECE",
    "PROOF_RATIO",
    "PROOF_SLACK",
    "Method",
    "decode",
    "frames",
    "lookup",
    "max_output",
    "needs_proof",
    "register",
    "zip_method",
    "zip_methods",
]
