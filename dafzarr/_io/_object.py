"""An object of an obstore store (HTTP(S), S3, GCS, Azure, local, memory) as a byte source.

obstore carries the requests (connection pools, timeouts, retries of failed requests); this
module does not take the answers on trust:

* every body is counted against the range asked for: a short or long answer raises
  :class:`~dafzarr.errors.HttpReadError` (obstore hands over what the server sent), and a
  body is never read further than one byte past what was asked or allowed;
* an answer for other bytes than asked (``Content-Range``) raises ``HttpReadError``;
* a server that ignores ``Range`` has the range served from a GET of the whole object, read
  from its start and no further than the end of the range; a range ending past
  :attr:`HttpOptions.max_skip` bytes is an error instead;
* a body cut short is asked for again, up to :attr:`HttpOptions.attempts` tries;
* each request, retries included, ends within :attr:`HttpOptions.deadline` seconds or raises
  :class:`~dafzarr.errors.HttpDeadlineError` (the request is cancelled);
* every failure is a ``HttpReadError`` naming the object and the range; a missing object is
  :class:`FileNotFoundError`, an object replaced since its version was seen is
  ``FileNotFoundError`` with ``errno.ESTALE``.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import obstore
from obstore.exceptions import BaseError, NotSupportedError, PreconditionError
from obstore.store import HTTPStore

from ..errors import HttpDeadlineError, HttpReadError
from ._loop import DeadlinePassed, run, within
from ._options import HttpOptions
from ._source import Buffer, Head, check_ranges, replaced, wrong_length

__all__ = ["ObjectSource", "http_store"]

T = TypeVar("T")

#: Range requests of one ``read_ranges`` call in flight at once.
CONCURRENCY = 8
_STREAM_CHUNK = 8 << 20

#: What obstore raises: its own errors, and builtin ones (``FileNotFoundError``,
#: ``PermissionError``, ``ValueError``, ``TimeoutError`` ...).
_STORE_ERRORS = (BaseError, OSError, ValueError, RuntimeError)

_UNEXPECTED_RANGE = re.compile(r"Requested (\d+)\.\.(\d+), got (\d+)\.\.(\d+)")
_STATUS = re.compile(r"status code: (\d{3})([^:\n]*)")
_RETRIES = re.compile(r"after (\d+) retries")


@functools.lru_cache(maxsize=64)
def http_store(url: str, options: HttpOptions) -> HTTPStore:
    """The shared obstore store for the objects under ``url`` read with ``options`` (one
    connection pool per base URL and set of options, reused across threads)."""
    return HTTPStore.from_url(
        url,
        client_options=options.client_options(),  # type: ignore[arg-type]
        retry_config=options.retry_config(),  # type: ignore[arg-type]
    )


class _RangeIgnored(Exception):
    """The server answered a ranged GET with the whole object (``200``)."""


class _BodyBroke(Exception):
    """The body of an answer ended with an error (a reset or stalled connection)."""


def _tries(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


def _asked(start: int, stop: int) -> str:
    return f"Range bytes={start}-{stop - 1}"


class ObjectSource:
    """The object ``path`` of the obstore ``store``, read with ``options`` (see module doc).

    ``where`` names it in messages (default: the URL for an HTTP store, else the store and
    path). :attr:`ranges_ignored` becomes true once the server answered a range with the
    whole object; later ranges then go straight to the whole-object fallback.
    """

    def __init__(
        self, store: Any, path: str, *, options: HttpOptions | None = None,
        where: str | None = None,
    ) -> None:
        self.store = store
        self.path = path
        self.options = options or HttpOptions()
        if where is None:
            base = getattr(store, "url", None) if isinstance(store, HTTPStore) else None
            where = f"{base.rstrip('/')}/{path}" if base else f"{store!r} {path}"
        self.where = where
        self.ranges_ignored = False

    # --- the blocking API ---------------------------------------------------------------------

    def head(self) -> Head:
        return run(self._guarded(self._head, "the object's size"))

    def size(self) -> int:
        return self.head().size

    def read(self, start: int, stop: int, *, version: str | None = None) -> Buffer:
        check_ranges(self.where, [(start, stop)])
        return run(self._guarded(lambda: self._range(start, stop, version), _asked(start, stop)))

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, version: str | None = None
    ) -> list[Buffer]:
        """Every range, up to :data:`CONCURRENCY` requests at once, each checked and with its
        own deadline; the first failing range (in the order asked) raises."""
        check_ranges(self.where, ranges)
        return run(self._ranges(list(ranges), version))

    def read_tail(self, n: int) -> tuple[Buffer, Head]:
        return run(self._guarded(lambda: self._tail(n), f"Range bytes=-{n}"))

    def read_all(self, limit: int) -> Buffer:
        return run(self._guarded(lambda: self._whole(limit), "a GET of the whole object"))

    def read_or_whole(self, start: int, stop: int, *, whole_limit: int) -> tuple[Buffer, bool]:
        """The bytes ``[start, stop)`` and ``True``; or, from a server that ignores ``Range``,
        the whole object (at most ``whole_limit`` bytes) and ``False``."""
        check_ranges(self.where, [(start, stop)])

        async def attempt() -> tuple[Buffer, bool]:
            if not self.ranges_ignored:
                try:
                    return await self._range(start, stop, None, fallback=False), True
                except _RangeIgnored:
                    self.ranges_ignored = True
            return await self._whole(whole_limit), False

        return run(self._guarded(attempt, _asked(start, stop)))

    # --- one request: deadline and errors ----------------------------------------------------

    async def _guarded(self, make: Callable[[], Awaitable[T]], asked: str) -> T:
        """``make()`` within the deadline, every failure a dafzarr error naming the object."""
        try:
            return await within(make(), self.options.deadline)
        except DeadlinePassed:
            raise HttpDeadlineError(
                f"can't read {self.where} within {self.options.deadline:g} s: no complete "
                f"answer to {asked} (HttpOptions.deadline)"
            ) from None

    async def _ranges(
        self, ranges: list[tuple[int, int]], version: str | None
    ) -> list[Buffer]:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(start: int, stop: int) -> Buffer:
            async with gate:
                return await self._guarded(
                    lambda: self._range(start, stop, version), _asked(start, stop)
                )

        done = await asyncio.gather(*(one(a, b) for a, b in ranges), return_exceptions=True)
        for item in done:
            if isinstance(item, BaseException):
                raise item
        return done  # type: ignore[return-value]

    async def _get(self, options: dict[str, Any], asked: str) -> Any:
        """One GET through obstore (retried there); its failures as dafzarr errors."""
        try:
            return await obstore.get_async(
                self.store, self.path, options=options  # type: ignore[arg-type]
            )
        except _STORE_ERRORS as exc:
            raise self._request_error(exc, asked) from None

    def _request_error(self, exc: Exception, asked: str) -> Exception:
        text = str(exc)
        if isinstance(exc, FileNotFoundError):
            return FileNotFoundError(errno.ENOENT, "no such object", self.where)
        if isinstance(exc, NotSupportedError) and "Range request not supported" in text:
            return _RangeIgnored()
        if isinstance(exc, PreconditionError):
            return replaced(self.where)
        m = _UNEXPECTED_RANGE.search(text)
        if m is not None:
            a, b, c, d = (int(x) for x in m.groups())
            return HttpReadError(
                f"{self.where}: the answer to {_asked(a, b)} is for bytes {c}-{d - 1} "
                f"(Content-Range), not the range asked for"
            )
        if "Content-Range header not present" in text:
            return HttpReadError(f"{self.where}: a 206 answer to {asked} without "
                                 "Content-Range")
        if "Content-Length Header missing" in text:
            return HttpReadError(f"{self.where}: the answer to {asked} has no Content-Length, "
                                 "so its length cannot be checked")
        status = _STATUS.search(text)
        if status is not None:
            retries = _RETRIES.search(text)
            tries = f" ({_tries(int(retries[1]) + 1)})" if retries else ""
            reason = "" if retries else status[2].rstrip()
            which = f", answering {asked}" if asked.startswith("Range") else ""
            return HttpReadError(
                f"can't read {self.where}: HTTP {status[1]}{reason}{tries}{which}"
            )
        first_line = text.split("\n", 1)[0].strip() or type(exc).__name__
        return HttpReadError(f"can't read {self.where} ({asked}): {first_line}")

    async def _retrying(self, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``, tried again when a body breaks off (obstore retries only requests)."""
        opts = self.options
        attempt = 0
        while True:
            attempt += 1
            try:
                return await make()
            except _BodyBroke as exc:
                if attempt >= opts.attempts:
                    raise HttpReadError(
                        f"can't read {self.where}: {exc} ({_tries(attempt)})"
                    ) from None
            await asyncio.sleep(min(opts.backoff * 2 ** (attempt - 1), opts.max_wait))

    async def _collect(self, result: Any, most: int) -> Buffer:
        """At most ``most`` bytes of a body (one past what is wanted shows a long answer)."""
        parts: list[Any] = []
        have = 0
        try:
            async for chunk in result.stream(min_chunk_size=min(most, _STREAM_CHUNK)):
                parts.append(chunk)
                have += len(chunk)
                if have >= most:
                    break
        except _STORE_ERRORS as exc:
            first_line = str(exc).split("\n", 1)[0]
            raise _BodyBroke(f"the body broke off after {have} bytes ({first_line})") from None
        if len(parts) == 1:
            return memoryview(parts[0])
        return b"".join(parts)

    async def _body(self, result: Any) -> Buffer:
        """The whole body of an answer whose length is bounded already."""
        try:
            return memoryview(await result.bytes_async())
        except _STORE_ERRORS as exc:
            first_line = str(exc).split("\n", 1)[0]
            raise _BodyBroke(f"the body broke off ({first_line})") from None

    # --- the reads ----------------------------------------------------------------------------

    async def _head(self) -> Head:
        try:
            meta = await obstore.head_async(self.store, self.path)
        except _STORE_ERRORS as exc:
            raise self._request_error(exc, "HEAD") from None
        return Head(int(meta["size"]), _version(meta))

    async def _range(
        self, start: int, stop: int, version: str | None, *, fallback: bool = True
    ) -> Buffer:
        if start == stop:
            return b""
        if self.ranges_ignored and fallback:
            return await self._skip_to(start, stop)
        options: dict[str, Any] = {"range": (start, stop)}
        etag = None if version is None else version.split("|", 1)[0]
        if etag not in (None, "None"):
            options["if_match"] = etag

        async def once() -> Buffer:
            result = await self._get(options, _asked(start, stop))
            first, end = result.range
            if (first, end) != (start, stop):
                raise HttpReadError(
                    f"{self.where}: the answer to {_asked(start, stop)} is for bytes "
                    f"{first}-{end - 1}, not the range asked for"
                )
            body = await self._collect(result, stop - start + 1)
            if len(body) != stop - start:
                raise HttpReadError(wrong_length(self.where, start, stop, len(body)))
            return body

        try:
            return await self._retrying(once)
        except _RangeIgnored:
            if not fallback:
                raise
            self.ranges_ignored = True
            return await self._skip_to(start, stop)

    async def _skip_to(self, start: int, stop: int) -> Buffer:
        """``[start, stop)`` from the whole object, read from its start up to ``stop``."""
        limit = self.options.max_skip
        if stop > limit:
            raise HttpReadError(
                f"{self.where}: the server ignored {_asked(start, stop)} and sent the "
                f"whole object; serving the range would read {stop} bytes, more than the "
                f"{limit} allowed (HttpOptions.max_skip)"
            )

        async def once() -> Buffer:
            result = await self._get({}, "a GET of the whole object")
            head = await self._collect(result, stop)
            if len(head) < stop:
                raise HttpReadError(
                    f"{self.where}: the object ends at byte {len(head)}, before the range "
                    f"[{start}, {stop}) asked for"
                )
            return memoryview(head)[start:stop]

        return await self._retrying(once)

    async def _whole(self, limit: int) -> Buffer:
        async def once() -> Buffer:
            result = await self._get({}, "a GET of the whole object")
            size = int(result.meta["size"])
            if size > limit:
                raise HttpReadError(
                    f"{self.where}: the body announces {size} bytes, more than the {limit} "
                    "allowed"
                )
            if isinstance(self.store, HTTPStore):
                # obstore refuses an answer without Content-Length, and the body ends at
                # it: at most the size just checked, so read it in one call.
                body = await self._body(result)
            else:
                body = await self._collect(result, limit + 1)
            if len(body) > limit:
                raise HttpReadError(
                    f"{self.where}: the body is longer than the {limit} bytes allowed"
                )
            return body

        return await self._retrying(once)

    async def _tail(self, n: int) -> tuple[Buffer, Head]:
        if n <= 0:
            head = await self._head()
            return b"", head

        async def once() -> tuple[Buffer, Head]:
            result = await self._get({"range": {"suffix": n}}, f"Range bytes=-{n}")
            size = int(result.meta["size"])
            first, stop = result.range
            body = await self._collect(result, n + 1)
            if (first, stop) != (max(0, size - n), size) or len(body) != stop - first:
                raise HttpReadError(
                    f"{self.where}: the last {n} bytes of a {size}-byte object were asked "
                    f"for; the answer covers [{first}, {stop}) with {len(body)} bytes"
                )
            return body, Head(size, _version(result.meta))

        try:
            return await self._retrying(once)
        except _RangeIgnored:
            self.ranges_ignored = True
            whole = await self._whole(self.options.max_skip)
            size = len(whole)
            return memoryview(whole)[max(0, size - n) :], Head(size, f"None|None|{size}")


def _version(meta: Any) -> str:
    """The version token of an object: its ETag, version and size."""
    return f"{meta.get('e_tag')}|{meta.get('version')}|{meta['size']}"
