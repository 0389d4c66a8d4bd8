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
  :class:`~dafzarr.errors.HttpDeadlineError` (requests run in worker threads, see
  :mod:`._workers`);
* every failure is a ``HttpReadError`` naming the object and the range; a missing object is
  :class:`FileNotFoundError`, an object replaced since its version was seen is
  ``FileNotFoundError`` with ``errno.ESTALE``.
"""

from __future__ import annotations

import functools
import os
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import obstore
from obstore.store import HTTPStore

from ...errors import HttpDeadlineError, HttpReadError
from .obstore_errors import STORE_ERRORS, RangeIgnored, asked_range, store_error, tries
from .options import HttpOptions
from .source import BytesLike, Head, check_ranges, replaced, wrong_length
from .workers import DeadlinePassed, ForkedAfterUse, call_within, map_within

__all__ = ["ObjectSource", "http_store", "object_version", "same_object"]

_T = TypeVar("_T")

#: Range requests of one ``read_ranges`` call in flight at once.
CONCURRENCY = 8
_STREAM_CHUNK = 8 << 20


@functools.lru_cache(maxsize=64)
def http_store(url: str, options: HttpOptions) -> HTTPStore:
    """The shared obstore store for the objects under ``url`` read with ``options`` (one
    connection pool per base URL and set of options, reused across threads)."""
    return HTTPStore.from_url(
        url,
        client_options=options.client_options(),  # type: ignore[arg-type]
        retry_config=options.retry_config(),  # type: ignore[arg-type]
    )


class _BodyBroke(Exception):
    """The body of an answer ended with an error (a reset or stalled connection)."""


class _GaveUp(Exception):
    """The caller's deadline passed: an abandoned request stops here."""


class ObjectSource:
    """The object ``path`` of the obstore ``store``, read with ``options`` (see module doc).

    ``where`` names it in messages (default: the URL for an HTTP store, else the store and
    path). :attr:`ranges_ignored` becomes true once the server answered a range with the
    whole object; later ranges then go straight to the whole-object fallback.
    """

    def __init__(
        self,
        store: Any,
        path: str,
        *,
        options: HttpOptions | None = None,
        where: str | None = None,
    ) -> None:
        self.store = store
        self.path = path
        self.options = options or HttpOptions()
        if where is None:
            base = store.url if isinstance(store, HTTPStore) else None
            where = f"{base.rstrip('/')}/{path}" if base else f"{store!r} {path}"
        self.where = where
        self.ranges_ignored = False

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its store's state: a process that receives many sources of one store
        (a helper scanning the files of a collection) builds that store once."""
        return _revived, (
            pickle.dumps(self.store),
            self.path,
            self.options,
            self.where,
            self.ranges_ignored,
        )

    # --- the blocking API ---------------------------------------------------------------------

    def head(self) -> Head:
        return self._within(lambda _until: self._head(), "HEAD")

    def size(self) -> int:
        return self.head().size

    def read(self, start: int, stop: int, *, version: str | None = None) -> BytesLike:
        check_ranges(self.where, [(start, stop)])
        return self._within(
            lambda until: self._range(start, stop, version, until), asked_range(start, stop)
        )

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, version: str | None = None
    ) -> list[BytesLike]:
        """Every range, up to :data:`CONCURRENCY` requests at once, each checked and with its
        own deadline; the first failing range (in the order asked) raises."""
        check_ranges(self.where, ranges)
        seconds = self.options.deadline

        def task(start: int, stop: int) -> Callable[[], BytesLike]:
            return self._given_up_as_error(
                lambda until: self._range(start, stop, version, until), asked_range(start, stop)
            )

        try:
            return map_within([task(a, b) for a, b in ranges], seconds, CONCURRENCY)
        except DeadlinePassed as exc:
            a, b = ranges[exc.index]
            raise self._deadline_error(asked_range(a, b)) from None
        except ForkedAfterUse as exc:
            raise HttpReadError(f"can't read {self.where}: {exc}") from None

    def read_tail(self, n: int) -> tuple[BytesLike, Head]:
        return self._within(lambda until: self._tail(n, until), f"Range bytes=-{n}")

    def read_all(self, limit: int) -> BytesLike:
        return self._within(lambda until: self._whole(limit, until), "a GET of the whole object")

    def read_or_whole(
        self, start: int, stop: int, *, whole_limit: int
    ) -> tuple[BytesLike, Head | None]:
        """The bytes ``[start, stop)`` and the head of the object they come from (pass its
        version to the reads of the rest, so that they come from the same object); or, from
        a server that ignores ``Range``, the whole object (at most ``whole_limit`` bytes)
        and ``None``."""
        check_ranges(self.where, [(start, stop)])

        def attempt(until: float) -> tuple[BytesLike, Head | None]:
            if not self.ranges_ignored and start < stop:
                try:
                    return self._answer(start, stop, None, until)
                except RangeIgnored:
                    self.ranges_ignored = True
            return self._whole(whole_limit, until), None

        return self._within(attempt, asked_range(start, stop))

    # --- one request: deadline and errors ----------------------------------------------------

    def _within(self, fn: Callable[[float], _T], asked: str) -> _T:
        """``fn(until)`` in a worker, given up at the deadline."""
        try:
            return call_within(self._given_up_as_error(fn, asked), self.options.deadline)
        except DeadlinePassed:
            raise self._deadline_error(asked) from None
        except ForkedAfterUse as exc:
            raise HttpReadError(f"can't read {self.where}: {exc}") from None

    def _given_up_as_error(self, fn: Callable[[float], _T], asked: str) -> Callable[[], _T]:
        """``fn`` with the deadline counted from when a worker starts it; a request that
        stops because the deadline passed raises the deadline error."""
        seconds = self.options.deadline

        def call() -> _T:
            try:
                return fn(time.monotonic() + seconds)
            except _GaveUp:
                raise self._deadline_error(asked) from None

        return call

    def _deadline_error(self, asked: str) -> HttpDeadlineError:
        return HttpDeadlineError(
            f"can't read {self.where} within {self.options.deadline:g} s: no complete "
            f"answer to {asked} (HttpOptions.deadline)"
        )

    def _get(self, options: dict[str, Any], asked: str) -> Any:
        """One GET through obstore (retried there); its failures as dafzarr errors."""
        try:
            return obstore.get(self.store, self.path, options=options)  # type: ignore[arg-type]
        except STORE_ERRORS as exc:
            raise store_error(exc, self.where, asked) from None

    def _retrying(self, once: Callable[[], _T], until: float) -> _T:
        """``once()``, tried again when a body breaks off (obstore retries only requests)."""
        opts = self.options
        attempt = 0
        while True:
            attempt += 1
            try:
                return once()
            except _BodyBroke as exc:
                if attempt >= opts.attempts:
                    raise HttpReadError(
                        f"can't read {self.where}: {exc} ({tries(attempt)})"
                    ) from None
            wait = min(opts.backoff * 2 ** (attempt - 1), opts.max_wait)
            if time.monotonic() + wait >= until:
                raise _GaveUp
            time.sleep(wait)

    def _collect(self, result: Any, most: int, until: float) -> BytesLike:
        """At most ``most`` bytes of a body (one past what is wanted shows a long answer);
        reading stops once the caller's deadline passed."""
        parts: list[Any] = []
        have = 0
        try:
            for chunk in result.stream(min_chunk_size=min(most, _STREAM_CHUNK)):
                parts.append(chunk)
                have += len(chunk)
                if have >= most:
                    break
                if time.monotonic() >= until:
                    raise _GaveUp
        except STORE_ERRORS as exc:
            first_line = str(exc).split("\n", 1)[0]
            raise _BodyBroke(f"the body broke off after {have} bytes ({first_line})") from None
        if len(parts) == 1:
            return memoryview(parts[0])
        return b"".join(parts)

    def _body(self, result: Any) -> BytesLike:
        """The whole body of an answer whose length is bounded already."""
        try:
            return memoryview(result.bytes())
        except STORE_ERRORS as exc:
            first_line = str(exc).split("\n", 1)[0]
            raise _BodyBroke(f"the body broke off ({first_line})") from None

    # --- the reads ----------------------------------------------------------------------------

    def _head(self) -> Head:
        try:
            meta = obstore.head(self.store, self.path)
        except STORE_ERRORS as exc:
            raise store_error(exc, self.where, "HEAD") from None
        return Head(int(meta["size"]), object_version(meta))

    def _range(
        self,
        start: int,
        stop: int,
        version: str | None,
        until: float,
        *,
        fallback: bool = True,
    ) -> BytesLike:
        if start == stop:
            return b""
        if self.ranges_ignored and fallback:
            return self._skip_to(start, stop, until)
        try:
            return self._answer(start, stop, version, until)[0]
        except RangeIgnored:
            if not fallback:
                raise
            self.ranges_ignored = True
            return self._skip_to(start, stop, until)

    def _answer(
        self, start: int, stop: int, version: str | None, until: float
    ) -> tuple[BytesLike, Head]:
        """One range request (``RangeIgnored`` when the server sends the whole object): the
        body, and the head of the object that answered."""
        options: dict[str, Any] = {"range": (start, stop)}
        etag, modified, size = _version_parts(version)
        if etag is not None:
            options["if_match"] = etag

        def once() -> tuple[BytesLike, Head]:
            result = self._get(options, asked_range(start, stop))
            # Servers without ETags: the size and the modification time tell.
            if size is not None and str(result.meta["size"]) != size:
                raise replaced(self.where)
            answered = _modified(result.meta)
            if etag is None and None not in (modified, answered) and answered != modified:
                raise replaced(self.where)
            first, end = result.range
            if (first, end) != (start, stop):
                raise HttpReadError(
                    f"{self.where}: the answer to {asked_range(start, stop)} is for bytes "
                    f"{first}-{end - 1}, not the range asked for"
                )
            body = self._collect(result, stop - start + 1, until)
            if len(body) != stop - start:
                raise HttpReadError(wrong_length(self.where, start, stop, len(body)))
            return body, Head(int(result.meta["size"]), object_version(result.meta))

        return self._retrying(once, until)

    def _skip_to(self, start: int, stop: int, until: float) -> BytesLike:
        """``[start, stop)`` from the whole object, read from its start up to ``stop``."""
        limit = self.options.max_skip
        if stop > limit:
            raise HttpReadError(
                f"{self.where}: the server ignored {asked_range(start, stop)} and sent the "
                f"whole object; serving the range would read {stop} bytes, more than the "
                f"{limit} allowed (HttpOptions.max_skip)"
            )

        def once() -> BytesLike:
            result = self._get({}, "a GET of the whole object")
            head = self._collect(result, stop, until)
            if len(head) < stop:
                raise HttpReadError(
                    f"{self.where}: the object ends at byte {len(head)}, before the range "
                    f"[{start}, {stop}) asked for"
                )
            return memoryview(head)[start:stop]

        return self._retrying(once, until)

    def _whole(self, limit: int, until: float) -> BytesLike:
        def once() -> BytesLike:
            result = self._get({}, "a GET of the whole object")
            size = int(result.meta["size"])
            if size > limit:
                raise HttpReadError(
                    f"{self.where}: the body announces {size} bytes, more than the {limit} allowed"
                )
            if isinstance(self.store, HTTPStore):
                # obstore refuses an answer without Content-Length, and the body ends at
                # it: at most the size just checked, so read it in one call.
                body = self._body(result)
            else:
                body = self._collect(result, limit + 1, until)
            if len(body) > limit:
                raise HttpReadError(
                    f"{self.where}: the body is longer than the {limit} bytes allowed"
                )
            return body

        return self._retrying(once, until)

    def _tail(self, n: int, until: float) -> tuple[BytesLike, Head]:
        if n <= 0:
            return b"", self._head()

        def once() -> tuple[BytesLike, Head]:
            result = self._get({"range": {"suffix": n}}, f"Range bytes=-{n}")
            size = int(result.meta["size"])
            first, stop = result.range
            body = self._collect(result, n + 1, until)
            if (first, stop) != (max(0, size - n), size) or len(body) != stop - first:
                raise HttpReadError(
                    f"{self.where}: the last {n} bytes of a {size}-byte object were asked "
                    f"for; the answer covers [{first}, {stop}) with {len(body)} bytes"
                )
            return body, Head(size, object_version(result.meta))

        try:
            return self._retrying(once, until)
        except RangeIgnored:
            self.ranges_ignored = True
            whole = self._whole(self.options.max_skip, until)
            size = len(whole)
            return memoryview(whole)[max(0, size - n) :], Head(size, f"None|None|{size}")


#: Stores rebuilt from their pickled state in this process (building one, an HTTP client
#: with its TLS roots, takes milliseconds), by process and state; a few at most.
_REVIVED: dict[tuple[int, bytes], Any] = {}
_REVIVED_MAX = 32


def _revived(
    state: bytes, path: str, options: HttpOptions, where: str, ranges_ignored: bool
) -> ObjectSource:
    """An :class:`ObjectSource` unpickled: its store is the one this process built from the
    same state, if any (a store is shared by threads; one inherited through ``fork`` is not
    reused)."""
    key = (os.getpid(), state)
    store = _REVIVED.get(key)
    if store is None:
        store = pickle.loads(state)
        if len(_REVIVED) >= _REVIVED_MAX:
            _REVIVED.clear()
        _REVIVED[key] = store
    source = ObjectSource(store, path, options=options, where=where)
    source.ranges_ignored = ranges_ignored
    return source


def object_version(meta: Any) -> str:
    """The version token of an object (from obstore's metadata): ``etag|version|size``, and
    for a server that sends no ETag, ``None|version|modified|size`` with the modification
    time (whole seconds since the epoch, as HTTP's ``Last-Modified`` gives it) when known,
    so that a replacement of the same size is told apart too."""
    etag = meta.get("e_tag")
    modified = _modified(meta) if etag is None else None
    middle = "" if modified is None else f"|{modified}"
    return f"{etag}|{meta.get('version')}{middle}|{meta['size']}"


def _modified(meta: Any) -> int | None:
    """An answer's modification time, or None when the server sent none (obstore then
    reports the epoch)."""
    when = meta.get("last_modified")
    if when is None:
        return None
    seconds = int(when.timestamp())
    return seconds if seconds > 0 else None


def same_object(a: str, b: str) -> bool:
    """Whether version tokens ``a`` and ``b`` may name one object: the same ETag (or none)
    and size, and the same modification time where both tokens carry one."""
    etag_a, modified_a, size_a = _version_parts(a)
    etag_b, modified_b, size_b = _version_parts(b)
    return (etag_a, size_a) == (etag_b, size_b) and (
        modified_a is None or modified_b is None or modified_a == modified_b
    )


def _version_parts(version: str | None) -> tuple[str | None, int | None, str | None]:
    """The ETag, modification time and size a version token pins (each None if unknown).

    Tokens of three fields (``etag|version|size``) carry no modification time."""
    if version is None:
        return None, None, None
    fields = version.split("|")
    etag = fields[0] if fields[0] != "None" else None
    size = fields[-1] if len(fields) > 1 and fields[-1] != "None" else None
    modified = int(fields[2]) if len(fields) == 4 and fields[2].isdigit() else None
    return etag, modified, size
