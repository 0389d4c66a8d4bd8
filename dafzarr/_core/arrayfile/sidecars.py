"""The objects of a file set on its backend: naming, discovery, and reading and writing
layers (``{stem}.af``, ``{stem}.N.af``) and statistics (``{stem}.stats``).

A new sidecar takes the number after the highest one known, with a create-only put: another
writer's sidecar is never replaced (the next number is tried). The base is replaced whole.

A compaction (by any process) replaces the base, then deletes the sidecars it merged, oldest
first. :func:`load_layers` reads the base, then the listing and the sidecars, then checks that
the base is still the one read: when it is not, or a listed sidecar is gone, it reads again, so
an open sees the file set as it was before or after a compaction, never a mix.
"""

from __future__ import annotations

import os
import posixpath
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import (
    CorruptArrayFileError,
    CorruptFooterError,
    FormatLimitError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StatisticsWarning,
    UnstableFileSetError,
)
from . import format as fmt
from . import segments as seg
from .allocator import SealedBlock
from .footer import FooterEntry, build_footer, check_stats_entries, corrupt, layer_from_footer
from .objects import ArrayFileStorage, LocalStorage, ObstoreStorage, Tail
from .records import Layer
from .types import U32_MAX

__all__ = [
    "discover",
    "load_layer",
    "load_layers",
    "load_stats",
    "resolve_target",
    "sidecar_number",
    "write_layer",
    "write_stats",
]

_TAIL_READ = 64 * 1024  # one suffix read per layer covers footers up to this size
# how often an open reads a file set that changes under it before it gives up, and the
# longest pause between two attempts (pauses double from 1 ms: about 1.5 s in all)
LOAD_ATTEMPTS = 20
_LONGEST_PAUSE = 0.1


def resolve_target(target: Any) -> tuple[ArrayFileStorage, str, str]:
    """(backend, key of the base object, hint written into sidecars)."""
    if isinstance(target, tuple):
        if len(target) != 2 or not isinstance(target[1], str):
            raise InvalidArgumentTypeError(
                "an object-store target is a tuple (obstore_store, 'key.af')"
            )
        store, key = target
        key = key.lstrip("/")
        if not key.endswith(".af"):
            raise InvalidArgumentError(f"an ArrayFile key must end in '.af': {key!r}")
        return ObstoreStorage(store), key, key
    if not isinstance(target, (str, os.PathLike)):
        raise InvalidArgumentTypeError(
            f"target must be a path ending in '.af' or (obstore_store, key), not {target!r}"
        )
    path = os.path.abspath(os.fspath(target))
    if not path.endswith(".af"):
        raise InvalidArgumentError(f"an ArrayFile path must end in '.af': {path!r}")
    return LocalStorage(path), path, os.path.basename(path)


def sidecar_number(stem_base: str, name: str) -> int | None:
    """N when ``name`` is ``{stem}.{N}.af`` with N a non-zero u32 (the crate's rule)."""
    if not (name.startswith(stem_base + ".") and name.endswith(".af")):
        return None
    mid = name[len(stem_base) + 1 : -3]
    if not mid.isascii() or not mid.isdigit():
        return None
    n = int(mid)
    return n if 0 < n <= U32_MAX else None


def discover(backend: ArrayFileStorage, key: str) -> list[tuple[int, str]]:
    """(number, key) of every sidecar next to base ``key``, in number order."""
    stem_base = posixpath.basename(key[:-3])
    found = []
    try:
        siblings = backend.siblings(key)
    except FileNotFoundError:
        return []
    for k in siblings:
        n = sidecar_number(stem_base, posixpath.basename(k))
        if n is not None:
            found.append((n, k))
    found.sort()
    return found


def _read_tail_object(
    backend: ArrayFileStorage, key: str, magic: bytes
) -> tuple[memoryview, int, Tail]:
    """The payload before the trailer, where it starts, and the suffix read."""
    tail = backend.tail(key, _TAIL_READ)
    try:
        n = fmt.split_trailer(tail.data, magic, tail.size)
    except CorruptFooterError as exc:
        raise corrupt(key, f"truncated or not an array-format object ({exc})") from exc
    have = len(tail.data) - 12
    if n > have:
        head = backend.read(key, tail.version, tail.size - 12 - n, tail.size - 12 - have)
        payload = memoryview(bytes(head) + bytes(tail.data[: len(tail.data) - 12]))
    else:
        payload = memoryview(tail.data)[have - n : have]
    return payload, tail.size - 12 - n, tail


def load_layer(backend: ArrayFileStorage, key: str, number: int) -> Layer:
    """Read and check the layer stored as ``key``."""
    payload, data_end, tail = _read_tail_object(backend, key, fmt.FOOTER_MAGIC)
    version = tail.version
    try:
        footer = fmt.decode_footer(payload)
    except CorruptFooterError as exc:
        raise corrupt(key, str(exc)) from exc
    layer = layer_from_footer(key, number, version, footer, data_end=data_end)
    lo, hi = layer.gap
    tail_start = tail.size - len(tail.data)
    if hi > lo >= tail_start:  # the suffix read already holds the segment table
        layer.segments = seg.decode_table(
            memoryview(tail.data)[lo - tail_start : hi - tail_start], layer.blocks
        )
    return layer


def load_layers(backend: ArrayFileStorage, key: str, base: Layer | None = None) -> list[Layer]:
    """The base ``key`` and its sidecars, oldest first, as one state of the file set.

    ``base``: the base layer already in hand (a compaction's new base), used by the first
    attempt. An attempt fails when a listed sidecar is gone by the time it is read, or when
    the base was replaced while the sidecars were read (a listing taken after a compaction
    would miss what it merged); it is then made again, up to :data:`LOAD_ATTEMPTS` times
    (:class:`~dafzarr.errors.UnstableFileSetError`, naming the object at fault).
    """
    fault = ""
    for attempt in range(LOAD_ATTEMPTS):
        if attempt:
            time.sleep(min(0.001 * 2**attempt, _LONGEST_PAUSE))
        layers = [base if base is not None and not attempt else load_layer(backend, key, 0)]
        try:
            for number, skey in discover(backend, key):
                fault = skey
                layers.append(load_layer(backend, skey, number))
        except FileNotFoundError:
            for layer in layers[1:]:
                backend.release(layer.key)
            continue  # merged by a compaction and deleted since it was listed
        fault = key
        if backend.unchanged(key, layers[0].version):
            return layers
    what = (
        "was replaced while its sidecars were read"
        if fault == key
        else f"was listed next to {key} but was gone when read"
    )
    raise UnstableFileSetError(
        f"{fault}: {what}, {LOAD_ATTEMPTS} times in a row (another process compacting the "
        "file set without pause, or a file system that lists objects it cannot read)"
    )


def write_layer(
    backend: ArrayFileStorage,
    key: str,
    hint: str,
    layers: Sequence[Layer],
    entries: list[FooterEntry],
    blocks: list[SealedBlock],
    codec: str | None,
    *,
    base: bool,
) -> Layer:
    """Write a new base (replacing ``key``) or the next sidecar above ``layers``."""
    footer, segment_table, segments = build_footer(
        entries, blocks, codec, layers[-1].footer, "" if base else hint
    )
    stored_parts = [b[0] for b in blocks]
    if segment_table:
        stored_parts.append(segment_table)

    def parts(data: bytes) -> Iterator[Any]:
        yield from stored_parts
        yield data

    if base:
        data = fmt.encode_footer(footer)
        version = backend.put(key, parts(data), create_only=False)
        return layer_from_footer(key, 0, version, footer, segments=segments)
    number = max(layer.number for layer in layers) + 1
    stem = key[:-3]
    while True:
        if number > U32_MAX:
            raise FormatLimitError(f"{key}: sidecar numbers are exhausted; compact")
        footer["overlay_index"] = number
        data = fmt.encode_footer(footer)
        skey = f"{stem}.{number}.af"
        try:
            version = backend.put(skey, parts(data), create_only=True)
        except FileExistsError:
            number += 1  # another writer took this number: never replace its sidecar
            continue
        return layer_from_footer(skey, number, version, footer, segments=segments)


def load_stats(backend: ArrayFileStorage, key: str) -> tuple[int, list[dict[str, Any]]]:
    """(generation, entries) of the statistics object ``key``.

    A missing one means no statistics; an unreadable one too (as the format's reference
    implementation reads it), with a :class:`StatisticsWarning` for the caller's caller.
    """
    try:
        payload, _, _ = _read_tail_object(backend, key, fmt.STATS_MAGIC)
        gen, entries = fmt.decode_stats(payload)
        check_stats_entries(entries)
    except FileNotFoundError:
        return 0, []
    except (CorruptArrayFileError, CorruptFooterError, OSError) as exc:
        reason = str(exc).removeprefix(f"{key}: ")
        warnings.warn(
            f"{key}: the statistics sidecar is unreadable and is ignored (statistics are "
            f"reported missing; the data are not affected): {reason}",
            StatisticsWarning,
            stacklevel=3,
        )
        return 0, []
    return gen, entries


def write_stats(
    backend: ArrayFileStorage, key: str, entries: list[dict[str, Any]], generation: int
) -> None:
    """Replace the statistics object ``key``."""
    backend.put(key, [fmt.encode_stats(entries, generation=generation)], create_only=False)
