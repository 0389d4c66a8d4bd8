"""The byte sources of ``dafzarr._core.io``: one contract for a local file, bytes in memory and
obstore objects (memory, local, S3 on a real moto server, HTTP on a real ``http.server``),
and the checks an HTTP source adds against a server on 127.0.0.1 that misbehaves on purpose."""

from __future__ import annotations

import errno
import http.server
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import obstore
import pytest
from obstore.store import LocalStore, MemoryStore

from dafzarr import HttpDeadlineError, HttpOptions, HttpReadError
from dafzarr._core.io import (
    ByteSource,
    FileSource,
    MemorySource,
    ObjectSource,
    byte_range_bounds,
    http_store,
)
from dafzarr._core.io.object import CONCURRENCY
from dafzarr.errors import InvalidArgumentError
from tests.helpers import ROOT
from tests.helpers._moto_s3 import S3Server, moto_s3
from tests.helpers.common import HttpReplies

DATA = bytes(range(256)) * 1000  # 256,000 bytes
FAST = HttpOptions(backoff=0.01, max_wait=0.05)

Behaviour = Callable[["_Handler", bytes, "tuple[int, int] | None"], bool]


class _Handler(HttpReplies, http.server.BaseHTTPRequestHandler):
    """Serves ``objects`` with ``Range`` (bounded and suffix), unless ``behaviour`` answers."""

    protocol_version = "HTTP/1.1"
    objects: dict[str, bytes]
    behaviour: Behaviour | None
    requests: list[str | None]
    active: list[int]  # [now, most] requests in flight
    lock: threading.Lock
    delay: float

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        cls = type(self)
        header = self.headers.get("Range")
        with cls.lock:
            cls.requests.append(header)
            cls.active[0] += 1
            cls.active[1] = max(cls.active)
        try:
            if cls.delay:
                time.sleep(cls.delay)
            self._answer(header)
        finally:
            with cls.lock:
                cls.active[0] -= 1

    def do_HEAD(self) -> None:
        data = type(self).objects.get(self.path.lstrip("/"))
        self.send_response(404 if data is None else 200)
        self.send_header("Content-Length", "0" if data is None else str(len(data)))
        self.end_headers()

    def _answer(self, header: str | None) -> None:
        data = type(self).objects.get(self.path.lstrip("/"))
        if data is None:
            self.reply(404, b"not found")
            return
        wanted: tuple[int, int] | None = None
        if header is not None:
            first, _, last = header.removeprefix("bytes=").partition("-")
            if first == "":
                wanted = (max(0, len(data) - int(last)), len(data))
            else:
                wanted = (int(first), min(int(last) + 1, len(data)))
        behaviour = type(self).behaviour
        if behaviour is not None and behaviour(self, data, wanted):
            return
        if wanted is None:
            self.reply(200, data)
        else:
            a, b = wanted
            self.reply(206, data[a:b], f"bytes {a}-{b - 1}/{len(data)}")


@pytest.fixture
def http_server() -> Iterator[Callable[..., tuple[str, type[_Handler]]]]:
    """Start servers of ``objects``; yields ``start(objects, behaviour, delay)``."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(
        objects: dict[str, bytes], behaviour: Behaviour | None = None, delay: float = 0.0
    ) -> tuple[str, type[_Handler]]:
        handler = type(
            "Handler",
            (_Handler,),
            {
                "objects": objects,
                "behaviour": staticmethod(behaviour) if behaviour else None,
                "requests": [],
                "active": [0, 0],
                "lock": threading.Lock(),
                "delay": delay,
            },
        )
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", handler

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


KINDS = ["file", "memory", "obstore-memory", "obstore-local", "obstore-s3", "http"]


@pytest.fixture(params=KINDS)
def make(
    request: pytest.FixtureRequest, tmp_path: Path, http_server: Any
) -> Iterator[Callable[[bytes], ByteSource]]:
    """A function giving a source of the given bytes, of each kind."""
    kind = request.param
    opened: list[FileSource] = []

    def build(data: bytes) -> ByteSource:
        if kind == "file":
            path = tmp_path / f"o{len(opened)}"
            path.write_bytes(data)
            opened.append(FileSource(str(path)))
            return opened[-1]
        if kind == "memory":
            return MemorySource(data)
        if kind == "http":
            url, _ = http_server({"o": data})
            return ObjectSource(http_store(url, FAST), "o", options=FAST)
        if kind == "obstore-memory":
            store: Any = MemoryStore()
        elif kind == "obstore-local":
            store = LocalStore(str(tmp_path))
        else:
            store = request.getfixturevalue("s3").new_store()
        obstore.put(store, "o", data)
        return ObjectSource(store, "o", options=FAST)

    yield build
    for src in opened:
        src.close()


# --- The contract, for every kind -------------------------------------------------------


def test_reads_are_exact(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    assert isinstance(src, ByteSource)
    head = src.head()
    assert head.size == src.size() == len(DATA) and head.version
    assert bytes(src.read(1000, 70_000)) == DATA[1000:70_000]
    assert bytes(src.read(5, 5)) == b""
    assert bytes(src.read(0, len(DATA))) == DATA
    tail, tail_head = src.read_tail(300)
    assert bytes(tail) == DATA[-300:] and tail_head.size == len(DATA)
    whole, _ = src.read_tail(10 * len(DATA))
    assert bytes(whole) == DATA
    assert bytes(src.read_all(len(DATA))) == DATA


def test_read_ranges_in_the_order_asked(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    ranges = [(a, a + 1000 + a % 7) for a in range(200_000, 0, -9_973)] + [(3, 3)]
    got = src.read_ranges(ranges)
    assert [bytes(g) for g in got] == [DATA[a:b] for a, b in ranges]


def test_a_range_past_the_end_is_an_error(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    for start, stop in [(len(DATA) - 10, len(DATA) + 10), (len(DATA) + 5, len(DATA) + 10)]:
        with pytest.raises((EOFError, HttpReadError), match=rf"(?:\[|=){start}\b"):
            src.read(start, stop)
    with pytest.raises((EOFError, HttpReadError)):
        src.read_ranges([(0, 10), (len(DATA) - 1, len(DATA) + 1)])


def test_an_invalid_range_is_an_error(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    with pytest.raises(ValueError, match=r"invalid byte range \[10, 5\)"):
        src.read(10, 5)
    with pytest.raises(ValueError, match=r"invalid byte range \[-1, 5\)"):
        src.read_ranges([(-1, 5)])


def test_a_whole_read_over_its_limit_is_an_error(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    with pytest.raises(
        (ValueError, HttpReadError), match=f"{len(DATA)} bytes, more than the (limit=)?1000 allowed"
    ):
        src.read_all(1000)


def test_another_version_is_refused(make: Callable[[bytes], ByteSource]) -> None:
    src = make(DATA)
    # (http.server sends no ETag: over HTTP the size in the version tells the objects apart)
    with pytest.raises(FileNotFoundError) as caught:
        src.read(0, 10, version='"another"|None|10')
    assert caught.value.errno == errno.ESTALE


@pytest.mark.parametrize("kind", ["obstore-memory", "obstore-s3"])
def test_a_replaced_object_is_refused(request: pytest.FixtureRequest, kind: str) -> None:
    store = MemoryStore() if kind == "obstore-memory" else request.getfixturevalue("s3").new_store()
    obstore.put(store, "o", DATA)
    src = ObjectSource(store, "o", options=FAST)
    version = src.head().version
    obstore.put(store, "o", DATA[::-1])
    with pytest.raises(FileNotFoundError) as caught:
        src.read_ranges([(0, 10), (10, 20)], version=version)
    assert caught.value.errno == errno.ESTALE


@pytest.mark.parametrize("kind", ["obstore-memory", "obstore-s3", "http"])
def test_a_missing_object_is_file_not_found(
    request: pytest.FixtureRequest, http_server: Any, kind: str
) -> None:
    if kind == "http":
        url, _ = http_server({})
        src = ObjectSource(http_store(url, FAST), "none", options=FAST)
    else:
        store = (
            MemoryStore() if kind == "obstore-memory" else request.getfixturevalue("s3").new_store()
        )
        src = ObjectSource(store, "none", options=FAST)
    for read in (
        lambda: src.read(0, 10),
        lambda: src.read_all(10),
        src.head,
        lambda: src.read_tail(10),
    ):
        with pytest.raises(FileNotFoundError) as caught:
            read()
        assert caught.value.errno == errno.ENOENT and caught.value.filename == src.where


def test_a_file_source_keeps_its_generation(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(DATA)
    src = FileSource(str(path))
    try:
        (tmp_path / "g").write_bytes(DATA[::-1])
        os.replace(tmp_path / "g", path)  # the name now points to other bytes
        assert bytes(src.read(0, 10)) == DATA[:10]
    finally:
        src.close()


def test_byte_range_bounds() -> None:
    from zarr.abc.store import RangeByteRequest, SuffixByteRequest

    assert byte_range_bounds(10, RangeByteRequest(2, 50)) == (2, 10)
    assert byte_range_bounds(10, SuffixByteRequest(3)) == (7, 10)


# --- HTTP: what the server gets wrong -------------------------------------------------------


def _source(
    start: Any, behaviour: Behaviour | None = None, options: HttpOptions = FAST, delay: float = 0.0
) -> tuple[ObjectSource, type[_Handler]]:
    url, handler = start({"o": DATA}, behaviour, delay)
    return ObjectSource(http_store(url, options), "o", options=options), handler


def test_read_ranges_run_concurrently(http_server: Any) -> None:
    src, handler = _source(http_server, delay=0.2)
    ranges = [(i * 1000, i * 1000 + 500) for i in range(3 * CONCURRENCY)]
    assert [bytes(b) for b in src.read_ranges(ranges)] == [DATA[a:b] for a, b in ranges]
    assert 1 < handler.active[1] <= CONCURRENCY
    assert len(handler.requests) == len(ranges)


def test_short_and_long_bodies_are_errors(http_server: Any) -> None:
    def short(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None:
            return False
        a, b = wanted
        h.reply(206, data[a : b - 5], f"bytes {a}-{b - 1}/{len(data)}")
        return True

    def long(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None:
            return False
        a, b = wanted
        h.reply(206, data[a : b + 10], f"bytes {a}-{b - 1}/{len(data)}")
        return True

    src, _ = _source(http_server, short)
    with pytest.raises(
        HttpReadError,
        match=r"127\.0\.0\.1:\d+/o: the answer to Range "
        r"bytes=100-109 has only 5 bytes, not 10",
    ):
        src.read(100, 110)
    with pytest.raises(HttpReadError, match=r"bytes=1000-1009 has only 5 bytes, not 10"):
        src.read_ranges([(1000, 1010), (2000, 2010)])
    src, _ = _source(http_server, long)
    with pytest.raises(
        HttpReadError,
        match=r"/o: the answer to Range bytes=100-109 has "
        r"more than 10 bytes, not 10",
    ):
        src.read(100, 110)


def test_the_first_failing_range_in_order_raises(http_server: Any) -> None:
    def late_ones_fail(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None or wanted[0] < 5000:
            return False
        time.sleep(0.3 if wanted[0] == 5000 else 0.0)  # the first failure finishes last
        h.reply(206, b"", f"bytes {wanted[0]}-{wanted[1] - 1}/{len(data)}")
        return True

    src, _ = _source(http_server, late_ones_fail)
    with pytest.raises(HttpReadError, match=r"bytes=5000-5009 has only 0 bytes"):
        src.read_ranges([(0, 10), (5000, 5010), (6000, 6010), (7000, 7010)])


def test_wrong_or_missing_content_range_is_an_error(http_server: Any) -> None:
    def shifted(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None:
            return False
        a, b = wanted
        h.reply(206, data[a + 1 : b + 1], f"bytes {a + 1}-{b}/{len(data)}")
        return True

    def without(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None:
            return False
        h.reply(206, data[wanted[0] : wanted[1]])
        return True

    src, _ = _source(http_server, shifted)
    with pytest.raises(
        HttpReadError,
        match=r"/o: the answer to Range bytes=100-109 is for "
        r"bytes 101-110 \(Content-Range\)",
    ):
        src.read(100, 110)
    src, _ = _source(http_server, without)
    with pytest.raises(
        HttpReadError,
        match=r"/o: a 206 answer to Range bytes=100-109 without "
        r"Content-Range",
    ):
        src.read(100, 110)


def test_a_server_ignoring_range_is_read_up_to_the_range_end(http_server: Any) -> None:
    def whole(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        h.reply(200, data)
        return True

    src, handler = _source(http_server, whole)
    assert bytes(src.read(100, 110)) == DATA[100:110]
    assert src.ranges_ignored
    assert handler.requests == ["bytes=100-109", None]  # later ranges go straight to GET
    assert [bytes(b) for b in src.read_ranges([(0, 5), (7, 9)])] == [DATA[0:5], DATA[7:9]]
    tail, head = src.read_tail(4)
    assert bytes(tail) == DATA[-4:] and head.size == len(DATA)
    src, _ = _source(http_server, whole, HttpOptions(max_skip=1000, backoff=0.01))
    with pytest.raises(
        HttpReadError,
        match=r"/o: the server ignored Range bytes=995-1004 "
        r"and sent the whole object; serving the range would read 1005 bytes, "
        r"more than the 1000 allowed \(HttpOptions.max_skip\)",
    ):
        src.read(995, 1005)


def test_a_body_cut_short_is_asked_again(http_server: Any) -> None:
    def reset_first(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        if wanted is None or len(type(h).requests) > 1:
            return False
        a, b = wanted
        h.send_response(206)
        h.send_header("Content-Length", str(b - a))
        h.send_header("Content-Range", f"bytes {a}-{b - 1}/{len(data)}")
        h.end_headers()
        h.wfile.write(data[a : a + 10])
        h.wfile.flush()
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
        h.close_connection = True
        return True

    src, handler = _source(http_server, reset_first)
    assert bytes(src.read(0, 100_000)) == DATA[:100_000]
    assert len(handler.requests) == 2


def test_a_deadline_ends_each_range(http_server: Any) -> None:
    src, _ = _source(http_server, delay=3.0, options=HttpOptions(deadline=0.5))
    began = time.monotonic()
    with pytest.raises(
        HttpDeadlineError,
        match=r"can't read http://127\.0\.0\.1:\d+/o within "
        r"0\.5 s: no complete answer to Range bytes=0-9",
    ):
        src.read_ranges([(0, 10), (10, 20)])
    assert time.monotonic() - began < 2.5


def test_no_server_is_a_dafzarr_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    options = HttpOptions(attempts=2, backoff=0.01, connect_timeout=1.0)
    src = ObjectSource(http_store(f"http://127.0.0.1:{port}", options), "o", options=options)
    with pytest.raises(HttpReadError, match=rf"127\.0\.0\.1:{port}/o"):
        src.read(0, 10)


def test_options_map_onto_obstore() -> None:
    opts = HttpOptions(
        deadline=20, connect_timeout=2, read_timeout=3, attempts=4, backoff=0.5, max_wait=4
    )
    client = opts.client_options()
    assert client["connect_timeout"] == timedelta(seconds=2)
    assert client["read_timeout"] == timedelta(seconds=3)
    assert client["timeout"] >= timedelta(seconds=20)
    retry = opts.retry_config()
    assert retry["max_retries"] == 3 and retry["retry_timeout"] == timedelta(seconds=20)
    assert retry["backoff"] == {
        "init_backoff": timedelta(seconds=0.5),
        "max_backoff": timedelta(seconds=4),
        "base": 2,
    }
    store = http_store("http://127.0.0.1:1", opts)
    assert store.retry_config == retry
    assert http_store("http://127.0.0.1:1", opts) is store  # one pool per URL and options
    for bad in ({"attempts": 0}, {"deadline": 0}, {"backoff": -1}):
        with pytest.raises(InvalidArgumentError, match="HttpOptions"):
            HttpOptions(**bad)


def test_connections_are_reused(http_server: Any) -> None:
    ports: set[int] = set()

    def note(h: _Handler, data: bytes, wanted: tuple[int, int] | None) -> bool:
        ports.add(h.client_address[1])
        return False

    src, _ = _source(http_server, note)
    for i in range(20):
        src.read(i, i + 10)
    assert len(ports) <= 3  # a pooled connection is not always back in the pool at once


def test_an_abandoned_request_does_not_delay_the_exit(tmp_path: Path) -> None:
    """A read given up at its deadline leaves its request to a daemon worker: the process
    ends at once, not when the server or obstore's timeouts end the request."""
    script = tmp_path / "child.py"
    script.write_text(
        "import socket, sys, threading\n"
        "from dafzarr import HttpDeadlineError, HttpOptions\n"
        "from dafzarr._core.io import ObjectSource, http_store\n"
        "listener = socket.create_server(('127.0.0.1', 0))\n"
        "held = []\n"
        "def accept():\n"
        "    while True:\n"
        "        held.append(listener.accept())  # and never answer\n"
        "threading.Thread(target=accept, daemon=True).start()\n"
        "url = f'http://127.0.0.1:{listener.getsockname()[1]}'\n"
        "options = HttpOptions(deadline=0.5, read_timeout=60)\n"
        "try:\n"
        "    ObjectSource(http_store(url, options), 'o', options=options).read(0, 10)\n"
        "except HttpDeadlineError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )
    import subprocess
    import sys

    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr
    assert "within 0.5 s: no complete answer to Range bytes=0-9" in proc.stdout
    assert time.monotonic() - began < 30  # the request itself would wait 60 s


@pytest.mark.parametrize("kind", ["local", "memory", "obstore"])
def test_arrayfile_backends_read_through_the_sources(tmp_path: Path, kind: str) -> None:
    from dafzarr._core.arrayfile.objects import LocalStorage, MemoryStorage, ObstoreStorage

    backend: Any
    if kind == "local":
        backend, key = LocalStorage(), str(tmp_path / "x.af")
    elif kind == "memory":
        backend, key = MemoryStorage(), "x.af"
    else:
        backend, key = ObstoreStorage(MemoryStore()), "x.af"
    version = backend.put(key, [DATA[:1000], DATA[1000:]], create_only=True)
    tail = backend.tail(key, 100)
    assert (bytes(tail.data), tail.size, tail.version) == (DATA[-100:], len(DATA), version)
    ranges = [(0, 10), (5000, 9000), (len(DATA) - 3, len(DATA))]
    got = backend.read_ranges(key, version, ranges)
    assert [bytes(g) for g in got] == [DATA[a:b] for a, b in ranges]
    with pytest.raises((EOFError, HttpReadError)):
        backend.read(key, version, len(DATA) - 3, len(DATA) + 3)  # never a short answer
    backend.put(key, [DATA[::-1]], create_only=False)
    if kind == "local":  # a local reader keeps the generation it opened
        got = backend.read_ranges(key, version, ranges)
        assert [bytes(g) for g in got] == [DATA[a:b] for a, b in ranges]
    else:
        with pytest.raises(FileNotFoundError) as caught:
            backend.read_ranges(key, version, ranges)  # the object was replaced
        assert caught.value.errno == errno.ESTALE
    backend.close()


def test_a_child_forked_after_reads_refuses_at_once(http_server: Any) -> None:
    """obstore's runtime loses its threads in a fork: a child forked after reads gets a clear
    error at once, never a read that waits for an answer that cannot come."""
    src, _ = _source(http_server)
    assert bytes(src.read(0, 10)) == DATA[:10]  # obstore has run in this process
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            src.read(20, 40)
        except HttpReadError as exc:
            code = 0 if "forked after it had run" in str(exc) and src.where in str(exc) else 2
        finally:
            os._exit(code)
    until = time.monotonic() + 30
    while time.monotonic() < until:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's read hung")
