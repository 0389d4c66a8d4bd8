"""ZarrDaf over HTTP(S), read-only: metadata from one GET, chunks fetched when read."""

from __future__ import annotations

import errno
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...errors import DafReadOnlyError, HttpReadError
from ..io import HttpOptions, ObjectSource, http_store
from .backends import DafBackend, children_of, readonly
from .names import METADATA_NAMES

__all__ = ["HttpBackend"]


class HttpBackend(DafBackend):
    """A read-only daf served over HTTP(S): metadata from one GET, chunks fetched lazily.

    Every GET goes through :class:`~dafzarr._core.io.ObjectSource` over one obstore
    ``HTTPStore`` per data set (checked ranges, bounded bodies, retries, a total deadline per
    request)."""

    kind = "http"
    read_only = True

    #: Flat arrays at least this large are fetched as concurrent ``Range`` requests of
    #: ``stripe`` bytes each (from a server that ignores ``Range``, the whole object, read only
    #: if no longer than the array).
    range_threshold = 8 << 20
    stripe = 4 << 20

    def __init__(self, url: str, *, options: HttpOptions | None = None) -> None:
        self.url = url.rstrip("/")
        self.options = options or HttpOptions()
        self.store = http_store(self.url, self.options)
        self.meta: dict[str, bytes] = {}

    def source(self, key: str) -> ObjectSource:
        """The object ``<url>/<key>``."""
        return ObjectSource(self.store, key, options=self.options, where=f"{self.url}/{key}")

    def fetch(self, key: str, *, limit: int | None = None) -> bytes | None:
        """GET ``<url>/<key>`` (a 404 is ``None``, a missing chunk); other errors raise."""
        try:
            body = self.source(key).read_all(self.options.max_body if limit is None else limit)
        except FileNotFoundError:
            return None
        return body if isinstance(body, bytes) else bytes(body)

    def mmap_as(
        self, key: str, dtype: np.dtype[Any], shape: tuple[int, ...], *, populate: bool = False
    ) -> np.ndarray[Any, Any] | None:
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.range_threshold:
            return super().mmap_as(key, dtype, shape)
        source = self.source(key)
        try:
            first, head = source.read_or_whole(0, min(self.stripe, nbytes), whole_limit=nbytes)
        except FileNotFoundError:
            return None
        if head is None:  # the server ignores Range: the whole object, no longer than the array
            return super()._as_array(first, dtype, shape)
        if head.size != nbytes:  # not the array's raw bytes (as from ``_as_array``)
            return None
        out = np.empty(nbytes, np.uint8)
        out[: len(first)] = np.frombuffer(first, np.uint8)
        ranges = [(a, min(a + self.stripe, nbytes)) for a in range(len(first), nbytes, self.stripe)]
        try:  # every stripe from the object that answered the first one
            bodies = source.read_ranges(ranges, version=head.version)
        except FileNotFoundError as exc:
            what = "was replaced" if exc.errno == errno.ESTALE else "vanished (HTTP 404)"
            raise HttpReadError(f"{source.where}: the object {what} while read") from None
        for (a, b), body in zip(ranges, bodies, strict=True):
            out[a:b] = np.frombuffer(body, np.uint8)
        return readonly(out.view(dtype).reshape(shape))

    def get(self, key: str) -> Any:
        if key in self.meta:
            return self.meta[key]
        if key.rsplit("/", 1)[-1] in METADATA_NAMES:
            return None  # consolidated metadata is complete
        return self.fetch(key)

    def exists(self, key: str) -> bool:
        if key in self.meta:
            return True
        if key.rsplit("/", 1)[-1] in METADATA_NAMES:
            return False
        return self.fetch(key) is not None

    def put(self, items: Iterable[tuple[str, Any]]) -> None:
        raise DafReadOnlyError(f"the HTTP backend is read-only: {self.url}")

    def children(self, prefix: str) -> list[str]:
        return children_of(self.meta, prefix)

    def keys_under(self, prefix: str) -> list[str]:
        head = prefix + "/" if prefix else ""
        return [k for k in self.meta if k.startswith(head)]

    def describe(self) -> str:
        return self.url
