"""The compression methods dafzarr reads, each registered once, by name and ZIP method id.

A :class:`Method` says how its data decodes (in pieces, in one call) and what bounds its
output before decoding: the most bytes one compressed byte can produce, and whether the data
states its own decoded size. :func:`lookup` and :func:`zip_method` find one;
:func:`register` adds one (as numcodecs' ``register_codec`` does).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgumentError
from . import streams, zstd
from . import whole as _whole

__all__ = [
    "DEFLATE64_MAX_RATIO",
    "DEFLATE_MAX_RATIO",
    "METHODS",
    "Method",
    "lookup",
    "register",
    "zip_method",
]

DEFLATE_MAX_RATIO = 1032
"""Bytes a DEFLATE stream emits per compressed byte, at most (258 bytes per two bits)."""

DEFLATE64_MAX_RATIO = 29_128
"""Bytes a DEFLATE64 stream emits per compressed byte, at most (65,538 bytes per 18 bits)."""

MAX_RATIO_SLACK = 1 << 16
"""Added to the DEFLATE ratio bounds: one match and the odd bits of a short stream."""


@dataclass(frozen=True)
class Method:
    """A compression method: how its data decodes and what bounds its output.

    Attributes
    ----------
    name
        Registry key (``"deflate"``, ``"zstd"``, ...).
    title
        Name in messages (``"DEFLATE"``); with the ZIP method id, :attr:`zip_label`.
    zip_id
        Its ZIP compression method id, or None.
    pieces
        ``pieces(data, limit)``: the output in bounded pieces, stopping once past ``limit``
        bytes (None: the method decodes only in one call).
    whole
        ``whole(data, size)``: one call that allocates at most ``size`` bytes (None: fill one
        buffer from :attr:`pieces`).
    after_proof
        A faster one call that may allocate past the size, used only once decoding in
        pieces has proven it; returns None when it cannot (then :attr:`pieces` fill a buffer).
    max_ratio, ratio_slack
        A claim above ``max_ratio * compressed + ratio_slack`` bytes is impossible (None: the
        method has no useful bound; BZIP2's runs compress about a million to one).
    bound
        The most the data's own headers allow it to decode to (zstd's frame and block
        headers), checked before decoding.
    stated
        The decoded size the data states about itself, or None; read when the caller does
        not know the size, and when a claim must be proven.
    size_provable
        Whether :attr:`stated` is the exact decoded size (LZ4's sequences add up to it;
        blosc's header is taken at its word), so that no decoding in pieces is needed to
        prove a large claim.
    requires
        A package the method needs that dafzarr does not require (DEFLATE64: ``inflate64``).
    """

    name: str
    title: str
    zip_id: int | None = None
    pieces: Callable[[Any, int], Iterator[Any]] | None = None
    whole: Callable[[Any, int], Any] | None = None
    after_proof: Callable[[Any, int], Any] | None = None
    max_ratio: int | None = None
    ratio_slack: int = 0
    bound: Callable[[Any], int] | None = None
    stated: Callable[[Any], int | None] | None = None
    size_provable: bool = False
    requires: str | None = None

    @property
    def zip_label(self) -> str:
        """``'8 (DEFLATE)'``: the method as ZIP messages name it (its title without an id)."""
        return self.title if self.zip_id is None else f"{self.zip_id} ({self.title})"

    def available(self) -> bool:
        """Whether the package the method needs (if any) is installed."""
        return self.requires is None or importlib.util.find_spec(self.requires) is not None


METHODS: dict[str, Method] = {}
"""Every registered method, by name."""

_BY_ZIP_ID: dict[int, Method] = {}


def register(method: Method) -> None:
    """Add ``method`` to the registry (a name or ZIP id registered twice is an error)."""
    if method.name in METHODS or (method.zip_id is not None and method.zip_id in _BY_ZIP_ID):
        raise InvalidArgumentError(f"compression method {method.name!r} is already registered")
    METHODS[method.name] = method
    if method.zip_id is not None:
        _BY_ZIP_ID[method.zip_id] = method


def lookup(name: str) -> Method | None:
    """The method registered as ``name``, or None."""
    return METHODS.get(name)


def zip_method(method_id: int) -> Method | None:
    """The method registered under ZIP compression method id ``method_id``, or None."""
    return _BY_ZIP_ID.get(method_id)


def zip_methods() -> list[Method]:
    """The methods with a ZIP method id, by id."""
    return [_BY_ZIP_ID[i] for i in sorted(_BY_ZIP_ID)]


def _stored(data: Any, size: int) -> Any:
    return data


def _stored_size(data: Any) -> int:
    return memoryview(data).nbytes


for _method in (
    Method("stored", "STORED", 0, whole=_stored, stated=_stored_size, size_provable=True),
    Method(
        "deflate",
        "DEFLATE",
        8,
        pieces=streams.inflate,
        after_proof=streams.inflate_whole,
        max_ratio=DEFLATE_MAX_RATIO,
        ratio_slack=MAX_RATIO_SLACK,
    ),
    Method(
        "deflate64",
        "DEFLATE64",
        9,
        pieces=streams.deflate64_pieces,
        max_ratio=DEFLATE64_MAX_RATIO,
        ratio_slack=MAX_RATIO_SLACK,
        requires="inflate64",
    ),
    Method("bzip2", "BZIP2", 12, pieces=streams.bunzip2),
    Method(
        "zstd",
        "ZSTD",
        93,
        pieces=zstd.stream,
        whole=_whole.zstd_whole,
        bound=zstd.max_output,
        stated=zstd.stated_size,
    ),
    Method(
        "gzip",
        "GZIP",
        pieces=streams.gunzip,
        max_ratio=DEFLATE_MAX_RATIO,
        ratio_slack=MAX_RATIO_SLACK,
    ),
    Method(
        "lz4",
        "LZ4",
        whole=_whole.lz4_whole,
        max_ratio=_whole.LZ4_MAX_RATIO,
        stated=_whole.lz4_size,
        size_provable=True,
    ),
    Method(
        "blosc",
        "BLOSC",
        whole=_whole.blosc_whole,
        stated=_whole.blosc_size,
        size_provable=True,
    ),
):
    register(_method)
