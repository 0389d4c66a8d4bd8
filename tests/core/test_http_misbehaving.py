"""Reads over HTTP against a real ``http.server`` on 127.0.0.1 that misbehaves on purpose.

Each test makes the server break one rule (a wrong ``Content-Range``, a short or oversize
body, ``200`` for a range, ``503``, a reset or stalled connection, unsafe names in the
consolidated listing) and checks what ``dafzarr.open_daf("http://...")`` does about it.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dafzarr
from dafzarr import HttpDeadlineError, HttpOptions, HttpReadError, RefusedEntryWarning
from dafzarr._core.daf.backends_http import HttpBackend
from tests.helpers.common import HttpReplies

N = 20_000  # float64 values: 160,000 bytes, fetched as 10 ranges of 16 KiB
VALUES = np.random.default_rng(0).random(N)
FAST = HttpOptions(backoff=0.01, max_wait=0.05)

Behaviour = Callable[["_Handler", int, bytes, str | None], bool]


class _Handler(HttpReplies, http.server.SimpleHTTPRequestHandler):
    """Serves files, honouring ``Range``, unless ``behaviour`` answers the request itself."""

    behaviour: Behaviour | None = None
    requests: list[str]
    sent: list[int]
    stop: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        with type(self).lock:
            self.requests.append(self.path)
            index = len(self.requests)
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            super().do_GET()
            return
        data = Path(path).read_bytes()
        header = self.headers.get("Range")
        behaviour = type(self).behaviour
        if behaviour is not None and behaviour(self, index, data, header):
            return
        if header is None:
            self.reply(200, data)
            return
        start, end = _parse(header, len(data))
        self.reply(206, data[start : end + 1], f"bytes {start}-{end}/{len(data)}")

    lock = threading.Lock()

    def reply(
        self, status: int, body: bytes, content_range: str | None = None, length: int | None = None
    ) -> None:
        super().reply(status, body, content_range, length)
        self.sent.append(len(body))


def _parse(header: str, size: int) -> tuple[int, int]:
    start_text, _, end_text = header.removeprefix("bytes=").partition("-")
    return int(start_text), min(int(end_text), size - 1)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A daf with one 160,000-byte vector, and a function serving it with a behaviour."""
    monkeypatch.setattr(HttpBackend, "range_threshold", 64 << 10)
    monkeypatch.setattr(HttpBackend, "stripe", 16 << 10)
    d = dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", zarr_format=3)
    d.add_axis("cell", [f"c{i}" for i in range(N)])
    d.set_vector("cell", "v", VALUES)
    d.close()
    servers: list[http.server.ThreadingHTTPServer] = []
    stop = threading.Event()

    def start(behaviour: Behaviour | None = None) -> tuple[str, type[_Handler]]:
        handler = type(
            "Handler",
            (_Handler,),
            {
                "behaviour": staticmethod(behaviour) if behaviour else None,
                "requests": [],
                "sent": [],
                "stop": stop,
                "lock": threading.Lock(),
            },
        )
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path))
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/x.daf.zarr", handler

    yield start
    stop.set()
    for server in servers:
        server.shutdown()
        server.server_close()


def _read_v(url: str, options: HttpOptions = FAST) -> np.ndarray[Any, Any]:
    return dafzarr.open_daf(url, http=options).get_np_vector("cell", "v")


def test_wrong_content_range_is_an_error(served: Any) -> None:
    def shifted(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header != "bytes=16384-32767":  # one range of ten, answered with other bytes
            return False
        start, end = _parse(header, len(data))
        h.reply(206, data[start + 8 : end + 9], f"bytes {start + 8}-{end + 8}/{len(data)}")
        return True

    url, _ = served(shifted)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the answer to Range bytes=16384-32767 "
        r"is for bytes 16392-32775 \(Content-Range\), not the range asked for",
    ):
        _read_v(url)


def test_short_body_is_an_error(served: Any) -> None:
    def short(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header is None:
            return False
        start, end = _parse(header, len(data))
        h.reply(206, data[start:end], f"bytes {start}-{end}/{len(data)}")  # one byte short
        return True

    url, _ = served(short)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the answer to Range bytes=0-16383 "
        r"has only 16383 bytes, not 16384",
    ):
        _read_v(url)


def test_oversize_body_is_an_error(served: Any) -> None:
    def longer(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header != "bytes=0-16383":
            return False
        start, end = _parse(header, len(data))
        body = data[start : end + 1] + b"\0" * 100  # more than asked, without announcing it
        h.reply(206, body, f"bytes {start}-{end}/{len(data)}", length=None)
        h.close_connection = True
        return True

    def endless(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header is None:
            return False
        h.send_response(206)
        h.send_header("Content-Range", f"bytes 0-16383/{len(data)}")
        h.end_headers()  # no Content-Length: the body runs until the connection closes
        block = b"\0" * (1 << 20)
        with_errors = 0
        while not h.stop.is_set() and with_errors < 256:
            try:
                h.wfile.write(block)
            except OSError:
                break
            h.sent.append(len(block))
            with_errors += 1
        h.close_connection = True
        return True

    url, _ = served(longer)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the answer to Range "
        r"bytes=0-16383 has more than 16384 bytes, not 16384",
    ):
        _read_v(url)
    url, handler = served(endless)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the answer to Range "
        r"bytes=0-16383 has no Content-Length, so its length cannot be checked",
    ):
        _read_v(url)
    assert sum(handler.sent) < 64 << 20  # never the 256 MiB the server offered


def test_whole_object_for_a_range_of_a_small_object(served: Any) -> None:
    def ignore_range(h: _Handler, _i: int, data: bytes, _header: str | None) -> bool:
        h.reply(200, data)
        return True

    url, handler = served(ignore_range)
    assert np.array_equal(_read_v(url), VALUES)
    chunk = [p for p in handler.requests if p.endswith("/cell/v/c/0")]
    # The refused range, then one GET of the whole object, which serves the array: no
    # range is asked again.
    assert len(chunk) == 2


def test_whole_object_for_a_range_of_a_huge_object(served: Any) -> None:
    def huge(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if not h.path.endswith("/cell/v/c/0"):  # the range and the whole-object GET
            return False
        h.send_response(200)
        h.send_header("Content-Length", str(512 << 20))  # "the object" has 512 MiB
        h.end_headers()
        block = b"\0" * (1 << 20)
        for _ in range(512):
            if h.stop.is_set():
                break
            try:
                h.wfile.write(block)
            except OSError:
                break
            h.sent.append(len(block))
        h.close_connection = True
        return True

    url, handler = served(huge)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the body announces 536870912 bytes, "
        r"more than the 160000 allowed",
    ):
        _read_v(url)
    assert sum(handler.sent) < 64 << 20  # the server offered 512 MiB


def test_whole_object_for_later_ranges_is_cut_within_max_skip(served: Any) -> None:
    def first_range_only(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header is None or header == "bytes=0-16383":
            return False
        h.reply(200, data)  # another replica, which ignores Range
        return True

    url, _ = served(first_range_only)
    assert np.array_equal(_read_v(url), VALUES)
    with pytest.raises(
        HttpReadError,
        match=r"/cell/v/c/0: the server ignored Range "
        r"bytes=49152-65535 and sent the whole object; serving the range would "
        r"read 65536 bytes, more than the 50000 allowed",
    ):
        _read_v(url, HttpOptions(max_skip=50_000))


def test_trickled_body_hits_the_total_deadline(served: Any) -> None:
    def trickle(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header is None:
            return False
        start, end = _parse(header, len(data))
        h.send_response(206)
        h.send_header("Content-Length", str(end + 1 - start))
        h.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        h.end_headers()
        until = time.monotonic() + 3  # then the connection closes, the body unfinished
        for i in range(start, end + 1):  # one byte every 50 ms: no single read times out
            if h.stop.wait(0.05) or time.monotonic() > until:
                break
            try:
                h.wfile.write(data[i : i + 1])
                h.wfile.flush()
            except OSError:
                break
        h.close_connection = True
        return True

    url, _ = served(trickle)
    began = time.monotonic()
    with pytest.raises(HttpDeadlineError, match=r"x\.daf\.zarr/vectors/cell/v/c/0 within 1 s"):
        _read_v(url, HttpOptions(deadline=1.0, read_timeout=0.5))
    assert time.monotonic() - began < 5


def test_503_twice_then_ok_is_retried(served: Any) -> None:
    def busy(h: _Handler, i: int, _data: bytes, _header: str | None) -> bool:
        if i > 2:
            return False
        h.send_response(503)
        h.send_header("Retry-After", "0")
        h.send_header("Content-Length", "0")
        h.end_headers()
        return True

    url, handler = served(busy)
    assert np.array_equal(_read_v(url), VALUES)
    assert handler.requests[:3] == ["/x.daf.zarr/zarr.json"] * 3


def test_503_forever_is_a_bounded_error(served: Any) -> None:
    def busy(h: _Handler, _i: int, _data: bytes, _header: str | None) -> bool:
        h.send_response(503)
        h.send_header("Retry-After", "3600")  # capped by HttpOptions.max_wait
        h.send_header("Content-Length", "0")
        h.end_headers()
        return True

    url, handler = served(busy)
    began = time.monotonic()
    with pytest.raises(
        HttpReadError,
        match=r"can't read http://127\.0\.0\.1:\d+/x\.daf\.zarr/"
        r"zarr\.json: HTTP 503 \(4 attempts\)",
    ):
        dafzarr.open_daf(url, http=HttpOptions(attempts=4, max_wait=0.1))
    assert time.monotonic() - began < 10
    assert len(handler.requests) == 4


def _reset(h: _Handler, body: bytes, announced: int) -> None:
    h.send_response(200)
    h.send_header("Content-Length", str(announced))
    h.end_headers()
    h.wfile.write(body)
    h.wfile.flush()
    # SO_LINGER 0: closing sends a TCP reset instead of a clean end of stream.
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.connection.close()
    h.close_connection = True


def test_connection_reset_mid_body_is_retried(served: Any) -> None:
    def reset_first(h: _Handler, i: int, data: bytes, _header: str | None) -> bool:
        if i != 1:
            return False
        _reset(h, data[: len(data) // 2], len(data))
        return True

    url, handler = served(reset_first)
    assert np.array_equal(_read_v(url), VALUES)
    assert handler.requests[:2] == ["/x.daf.zarr/zarr.json"] * 2


def test_stalled_body_hits_the_total_deadline(served: Any) -> None:
    def stall(h: _Handler, _i: int, data: bytes, header: str | None) -> bool:
        if header is None:
            return False
        h.send_response(206)
        h.send_header("Content-Length", "16384")
        h.send_header("Content-Range", f"bytes 0-16383/{len(data)}")
        h.end_headers()
        h.wfile.write(data[:100])
        h.wfile.flush()
        h.stop.wait(30)  # then the test ends
        h.close_connection = True
        return True

    url, _ = served(stall)
    began = time.monotonic()
    with pytest.raises(
        HttpDeadlineError,
        match=r"can't read http://127\.0\.0\.1:\d+/"
        r"x\.daf\.zarr/vectors/cell/v/c/0 within 1 s",
    ):
        _read_v(url, HttpOptions(deadline=1.0, backoff=0.01))
    assert time.monotonic() - began < 5


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_unsafe_names_in_the_listing_are_refused(
    tmp_path: Path, served: Any, zarr_format: int
) -> None:
    d = dafzarr.open_daf(tmp_path / "n.daf.zarr", "w", zarr_format=zarr_format)
    d.set_scalar("kept", 1)
    d.close()
    root = tmp_path / "n.daf.zarr"
    if zarr_format == 2:
        doc = json.loads((root / ".zmetadata").read_text())
        listing = doc["metadata"]
        bad = ["../outside/.zarray", "/etc/.zarray", "axes/../../x/.zarray", "a\\b/.zgroup"]
        for key in bad:
            listing[key] = {"zarr_format": 2}
        (root / ".zmetadata").write_text(json.dumps(doc))
    else:
        doc = json.loads((root / "zarr.json").read_text())
        listing = doc["consolidated_metadata"]["metadata"]
        bad = ["..", "/etc", "axes/../..", "axes/./cell", "axes//cell"]
        for key in bad:
            listing[key] = {"zarr_format": 3, "node_type": "group", "attributes": {}}
        (root / "zarr.json").write_text(json.dumps(doc))
    url, _ = served()
    with pytest.warns(RefusedEntryWarning) as caught:
        r = dafzarr.open_daf(url.replace("x.daf.zarr", "n.daf.zarr"))
    message = str(caught[0].message)
    assert "whose names are unsafe are not served" in message
    for key in bad[:5]:
        assert repr(key) in message
    backend = r._backend
    assert isinstance(backend, HttpBackend)
    assert not any(".." in k or k.startswith("/") or "\\" in k for k in backend.meta)
    assert r.get_scalar("kept") == 1
