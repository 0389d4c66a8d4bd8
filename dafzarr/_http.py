"""Reads over HTTP(S): the one place dafzarr talks to web servers, through urllib3.

Every read goes through :class:`HttpClient`, which does not take a server's word for it:

* a ranged GET (``Range: bytes=a-b``) answered ``206`` must carry exactly that
  ``Content-Range`` and exactly ``b - a + 1`` bytes of body, else :class:`HttpReadError`;
* a ranged GET answered ``200`` (a server that ignores ``Range``) is served by reading the
  object from its start only up to the end of the range, then dropping the connection; a
  range ending past :attr:`HttpOptions.max_skip` bytes is an error instead (never gigabytes
  read to serve a few bytes). A caller that would rather have the whole object then
  (:meth:`HttpClient.get_range_or_whole`) gives the largest size it accepts;
* a whole-object GET reads at most the limit its caller gives; a longer body (announced by
  ``Content-Length`` or sent) is an error, and so is one shorter than its ``Content-Length``;
* ``429``, ``502``, ``503``, ``504``, refused or reset connections and bodies cut short are
  retried up to :attr:`HttpOptions.attempts` times, waiting ``backoff``, ``2 * backoff``, ...
  (or the server's ``Retry-After``), each wait at most :attr:`HttpOptions.max_wait`;
* one request, retries and the whole body included, ends within
  :attr:`HttpOptions.deadline` seconds, or raises :class:`HttpDeadlineError`.

Connections are pooled per host and reused across requests, data sets and threads.
"""

from __future__ import annotations

import contextlib
import email.utils
import re
import threading
import time
from dataclasses import dataclass

import urllib3
from urllib3.exceptions import HTTPError as _Urllib3Error
from urllib3.exceptions import LocationValueError, SSLError

from .errors import HttpDeadlineError, HttpReadError

__all__ = ["HttpClient", "HttpOptions", "shared_client"]

#: Answers worth asking again (the server is overloaded or a proxy failed on the way).
RETRY_STATUSES = frozenset({429, 502, 503, 504})

_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$")
_READ_SIZE = 1 << 20
_DRAIN_LIMIT = 64 << 10


@dataclass(frozen=True)
class HttpOptions:
    """How patient and how trusting reads over HTTP(S) are.

    Attributes
    ----------
    deadline
        Seconds one request may take in all: connecting, every retry and wait, the whole body.
    connect_timeout
        Seconds to wait for one connection.
    read_timeout
        Seconds to wait for the next bytes from the server (also capped by the deadline).
    attempts
        Tries of one request, the first included, before a transient failure is final.
    backoff
        Seconds to wait before the first retry; doubled before each following one.
    max_wait
        The longest single wait between tries, a server's ``Retry-After`` included.
    max_skip
        The most bytes read from a server that answers a ranged GET with the whole object.
    max_body
        The largest body a whole-object GET accepts (chunks of arrays read through zarr).
    """

    deadline: float = 300.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    attempts: int = 5
    backoff: float = 0.25
    max_wait: float = 10.0
    max_skip: int = 64 << 20
    max_body: int = 2 << 30


class _Transient(Exception):
    """A failure that another try may not meet."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    """Seconds asked by a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class HttpClient:
    """GETs of whole objects or byte ranges, checked, retried and bounded (see module doc)."""

    def __init__(self, options: HttpOptions | None = None) -> None:
        self.options = options or HttpOptions()
        self._pool = urllib3.PoolManager(num_pools=16, maxsize=8, block=False)
        self._count_lock = threading.Lock()
        self.requests = 0  # GETs sent, retries included (for tests and diagnostics)

    def get(self, url: str, *, limit: int | None = None) -> bytes | None:
        """The whole object at ``url`` (at most ``limit`` bytes), or ``None`` on 404."""
        cap = self.options.max_body if limit is None else limit
        return self._retrying(url, None, cap)

    def get_range(self, url: str, start: int, stop: int) -> bytes | None:
        """Exactly the bytes ``[start, stop)`` of the object at ``url``, or ``None`` on 404."""
        if not 0 <= start < stop:
            raise ValueError(f"invalid byte range [{start}, {stop}) for {url}")
        return self._retrying(url, (start, stop), -1)

    def get_range_or_whole(
        self, url: str, start: int, stop: int, *, whole_limit: int
    ) -> tuple[bytes, bool] | None:
        """The bytes ``[start, stop)``, and ``True``; or, from a server that ignores
        ``Range``, the whole object (at most ``whole_limit`` bytes), and ``False``."""
        if not 0 <= start < stop:
            raise ValueError(f"invalid byte range [{start}, {stop}) for {url}")
        honoured: list[bool] = []
        body = self._retrying(url, (start, stop), whole_limit, honoured)
        return None if body is None else (body, honoured[-1])

    # --- the request loop -------------------------------------------------------------------

    def _retrying(
        self, url: str, byte_range: tuple[int, int] | None, limit: int,
        honoured: list[bool] | None = None,
    ) -> bytes | None:
        opts = self.options
        deadline = time.monotonic() + opts.deadline
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._once(url, byte_range, limit, deadline, honoured)
            except _Transient as exc:
                failure = exc
            wait = opts.backoff * 2 ** (attempt - 1)
            if failure.retry_after is not None:
                wait = failure.retry_after
            wait = min(wait, opts.max_wait)
            if attempt >= opts.attempts:
                raise HttpReadError(
                    f"can't read {url}: {failure.what} ({_tries(attempt)})"
                ) from None
            if time.monotonic() + wait >= deadline:
                raise HttpDeadlineError(
                    f"can't read {url} within {opts.deadline:g} s: {failure.what} "
                    f"({_tries(attempt)})"
                ) from None
            time.sleep(wait)

    def _once(
        self, url: str, byte_range: tuple[int, int] | None, limit: int, deadline: float,
        honoured: list[bool] | None,
    ) -> bytes | None:
        opts = self.options
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Transient("the deadline passed")
        headers = {"Accept-Encoding": "identity"}  # lengths and ranges count stored bytes
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range[0]}-{byte_range[1] - 1}"
        timeout = urllib3.Timeout(
            connect=min(opts.connect_timeout, left), read=min(opts.read_timeout, left)
        )
        with self._count_lock:
            self.requests += 1
        try:
            resp = self._pool.request(
                "GET", url, headers=headers, preload_content=False, timeout=timeout,
                retries=urllib3.Retry(total=None, connect=0, read=0, status=0, other=0,
                                      redirect=5),
            )
        except (SSLError, LocationValueError) as exc:
            raise HttpReadError(f"can't read {url}: {exc}") from None
        except _Urllib3Error as exc:
            reason = getattr(exc, "reason", None) or exc
            if isinstance(reason, SSLError):
                raise HttpReadError(f"can't read {url}: {reason}") from None
            raise _Transient(f"no answer ({reason})") from None
        complete = False
        try:
            body = self._answer(resp, url, byte_range, limit, deadline, honoured)
            complete = True
            return body
        finally:
            if not complete or resp.length_remaining:
                resp.close()  # never hand back a connection with unread bytes on it
            resp.release_conn()

    def _answer(
        self, resp: urllib3.BaseHTTPResponse, url: str, byte_range: tuple[int, int] | None,
        limit: int, deadline: float, honoured: list[bool] | None,
    ) -> bytes | None:
        status = resp.status
        if status == 404:
            self._drain(resp, url, deadline)
            return None
        if status in RETRY_STATUSES:
            self._drain(resp, url, deadline)
            raise _Transient(f"HTTP {status}", _retry_after(resp.headers.get("Retry-After")))
        length = _content_length(resp, url)
        if byte_range is not None and status == 206:
            start, stop = byte_range
            _check_content_range(resp.headers.get("Content-Range"), url, start, stop)
            if length is not None and length != stop - start:
                raise HttpReadError(
                    f"{url}: the answer to Range bytes={start}-{stop - 1} announces "
                    f"{length} bytes (Content-Length), not {stop - start}"
                )
            body = self._read(resp, url, stop - start + 1, deadline)
            if len(body) != stop - start:
                how = "more than" if len(body) > stop - start else "only"
                raise HttpReadError(
                    f"{url}: the answer to Range bytes={start}-{stop - 1} has {how} "
                    f"{min(len(body), stop - start)} bytes, not {stop - start}"
                )
            if honoured is not None:
                honoured.append(True)
            return body
        if status != 200:
            raise HttpReadError(f"can't read {url}: HTTP {status} {resp.reason or ''}".rstrip())
        if byte_range is None:
            return self._whole(resp, url, length, limit, deadline)
        start, stop = byte_range
        if honoured is not None:  # the caller takes the whole object instead
            honoured.append(False)
            return self._whole(resp, url, length, limit, deadline)
        # The server ignored Range and sends the whole object: keep [start, stop), read no
        # further than stop, and never more than max_skip bytes.
        if stop > self.options.max_skip:
            raise HttpReadError(
                f"{url}: the server ignored Range bytes={start}-{stop - 1} and sent the whole "
                f"object; serving the range would read {stop} bytes, more than the "
                f"{self.options.max_skip} allowed (HttpOptions.max_skip)"
            )
        if length is not None and length < stop:
            raise HttpReadError(
                f"{url}: the object has {length} bytes (Content-Length), so it has no "
                f"bytes [{start}, {stop})"
            )
        head = self._read(resp, url, stop, deadline)
        if len(head) < stop:
            raise HttpReadError(
                f"{url}: the object ends at byte {len(head)}, before the range "
                f"[{start}, {stop}) asked for"
            )
        return head[start:stop]

    def _whole(
        self, resp: urllib3.BaseHTTPResponse, url: str, length: int | None, limit: int,
        deadline: float,
    ) -> bytes:
        if length is not None and length > limit:
            raise HttpReadError(
                f"{url}: the body announces {length} bytes (Content-Length), more than the "
                f"{limit} allowed"
            )
        body = self._read(resp, url, limit + 1, deadline)
        if len(body) > limit:
            raise HttpReadError(f"{url}: the body is longer than the {limit} bytes allowed")
        return body

    def _drain(self, resp: urllib3.BaseHTTPResponse, url: str, deadline: float) -> None:
        """Read a short error page, so that its connection can serve the next request."""
        remaining = resp.length_remaining
        if remaining is not None and 0 < remaining <= _DRAIN_LIMIT:
            with contextlib.suppress(_Transient, HttpDeadlineError):
                self._read(resp, url, remaining, deadline)

    def _read(
        self, resp: urllib3.BaseHTTPResponse, url: str, most: int, deadline: float
    ) -> bytes:
        """Up to ``most`` bytes of the body, each wait bounded by the deadline."""
        parts: list[bytes] = []
        have = 0
        sock = getattr(resp.connection, "sock", None)
        while have < most:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HttpDeadlineError(
                    f"can't read {url} within {self.options.deadline:g} s: the body stalled "
                    f"after {have} bytes"
                )
            if sock is not None:  # no single wait outlasts the deadline
                sock.settimeout(min(self.options.read_timeout, left))
            try:
                chunk = resp.read1(min(_READ_SIZE, most - have))
            except _Urllib3Error as exc:
                raise _Transient(f"the body broke off after {have} bytes ({exc})") from None
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)


def _tries(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


def _content_length(resp: urllib3.BaseHTTPResponse, url: str) -> int | None:
    text = resp.headers.get("Content-Length")
    if text is None:
        return None
    if not text.strip().isdigit():
        raise HttpReadError(f"{url}: invalid Content-Length {text!r}")
    return int(text)


def _check_content_range(text: str | None, url: str, start: int, stop: int) -> None:
    asked = f"bytes={start}-{stop - 1}"
    if text is None:
        raise HttpReadError(f"{url}: a 206 answer to Range {asked} without Content-Range")
    m = _CONTENT_RANGE.match(text.strip())
    if m is None:
        raise HttpReadError(f"{url}: invalid Content-Range {text!r} for Range {asked}")
    first, last, total = int(m[1]), int(m[2]), m[3]
    if (first, last) != (start, stop - 1) or (total != "*" and int(total) < stop):
        raise HttpReadError(
            f"{url}: Content-Range {text!r} is not the range asked for ({asked})"
        )


_SHARED: dict[HttpOptions, HttpClient] = {}
_SHARED_LOCK = threading.Lock()


def shared_client(options: HttpOptions | None = None) -> HttpClient:
    """The process-wide client for ``options`` (one connection pool per set of options)."""
    options = options or HttpOptions()
    with _SHARED_LOCK:
        client = _SHARED.get(options)
        if client is None:
            client = _SHARED[options] = HttpClient(options)
        return client
