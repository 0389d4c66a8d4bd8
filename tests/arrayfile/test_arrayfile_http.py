"""ArrayFile read over HTTP (obstore's HTTPStore) from a real ``http.server`` on 127.0.0.1
that answers ranges and WebDAV listings, and misbehaves on purpose."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dafzarr import ArrayFile, FileConfig, HttpReadError, RefusedEntryWarning

obstore_store = pytest.importorskip("obstore.store")

BASE = np.arange(2000.0)
Behaviour = Callable[["_Handler", bytes, str], bool]


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files with ``Range`` (bounded and suffix) and one-level ``PROPFIND`` listings."""

    behaviour: Behaviour | None = None
    extra_hrefs: tuple[str, ...] = ()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.translate_path(self.path)
        header = self.headers.get("Range")
        if header is None or not os.path.isfile(path):
            super().do_GET()
            return
        data = Path(path).read_bytes()
        first, _, last = header.removeprefix("bytes=").partition("-")
        if first == "":
            start, end = max(0, len(data) - int(last)), len(data) - 1
        else:
            start, end = int(first), min(int(last), len(data) - 1)
        behaviour = type(self).behaviour
        if behaviour is not None and first != "" and behaviour(self, data, header):
            return
        self.reply(data[start : end + 1], f"bytes {start}-{end}/{len(data)}")

    def reply(self, body: bytes, content_range: str) -> None:
        self.send_response(206)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Range", content_range)
        self.end_headers()
        self.wfile.write(body)

    def do_PROPFIND(self) -> None:
        folder = Path(self.translate_path(self.path))
        root = Path(self.directory)
        hrefs = [f"/{p.relative_to(root)}" for p in sorted(folder.iterdir()) if p.is_file()]
        hrefs += list(self.extra_hrefs)
        stamp = "<D:getlastmodified>Mon, 01 Jan 2024 00:00:00 GMT</D:getlastmodified>"
        items = "".join(
            f"<D:response><D:href>{h}</D:href><D:propstat><D:prop>"
            f"<D:getcontentlength>1</D:getcontentlength>{stamp}<D:resourcetype/>"
            f'<D:getetag>"e{i}"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status>'
            "</D:propstat></D:response>"
            for i, h in enumerate(hrefs)
        )
        body = (
            '<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">'
            f"<D:response><D:href>{self.path}</D:href><D:propstat><D:prop>{stamp}"
            "<D:resourcetype><D:collection/></D:resourcetype></D:prop>"
            f"<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>{items}"
            "</D:multistatus>"
        ).encode()
        self.send_response(207)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    """``d/x.af`` (BASE, one layer), and ``x.1.af`` outside ``d``: a sidecar of a copy."""
    cfg = FileConfig(codec=None)
    with ArrayFile.create(tmp_path / "x.af", config=cfg) as f:
        f.define_array("a", "f8", ["x"], [2000])
        f.write_array("a", [0], BASE)
        f.flush()
        f.compact()  # one base object, no sidecar
    (tmp_path / "d").mkdir()
    shutil.copy(tmp_path / "x.af", tmp_path / "d" / "x.af")
    with ArrayFile.open(tmp_path / "x.af", config=cfg) as f:
        f.write_array("a", [0], -BASE[:10])
        f.flush()  # x.1.af: would overwrite the first 10 values of d/x.af too
    assert (tmp_path / "x.1.af").exists()
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(behaviour: Behaviour | None = None, extra: list[str] | None = None) -> Any:
        handler = type(
            "Handler",
            (_Handler,),
            {
                "behaviour": staticmethod(behaviour) if behaviour else None,
                "extra_hrefs": tuple(extra or ()),
            },
        )
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path))
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        return obstore_store.HTTPStore.from_url(url, client_options={"allow_http": True})

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_reads_over_http(served: Any) -> None:
    with ArrayFile.open((served(), "d/x.af")) as f:
        np.testing.assert_array_equal(f.read_array("a"), BASE)


def test_listed_names_outside_the_folder_are_refused(served: Any) -> None:
    store = served(extra=["/d/../x.1.af", "/etc/x.2.af"])
    with pytest.warns(RefusedEntryWarning) as caught:
        f = ArrayFile.open((store, "d/x.af"))
    message = str(caught[0].message)
    assert "'x.1.af' (it is not in d, the level listed)" in message
    assert "'etc/x.2.af' (it is not in d, the level listed)" in message
    with f:
        assert f.num_layers == 1
        np.testing.assert_array_equal(f.read_array("a"), BASE)


def test_oversize_range_answer_is_an_error(served: Any) -> None:
    def longer(h: _Handler, data: bytes, header: str) -> bool:
        first, _, last = header.removeprefix("bytes=").partition("-")
        start, end = int(first), int(last)
        h.reply(data[start : end + 1] + b"\0" * 8, f"bytes {start}-{end}/{len(data)}")
        return True

    with (
        ArrayFile.open((served(longer), "d/x.af")) as f,
        pytest.raises(
            HttpReadError,
            match=r"HTTPStore\(\"http://127\.0\.0\.1:\d+/\"\) d/x\.af: "
            r"the answer to Range bytes=\d+-\d+ has more than \d+ bytes",
        ),
    ):
        f.read_array("a")


def test_wrong_content_range_is_an_error(served: Any) -> None:
    def shifted(h: _Handler, data: bytes, header: str) -> bool:
        first, _, last = header.removeprefix("bytes=").partition("-")
        start, end = int(first) + 8, int(last) + 8
        h.reply(data[start : end + 1], f"bytes {start}-{end}/{len(data)}")
        return True

    with (
        ArrayFile.open((served(shifted), "d/x.af")) as f,
        pytest.raises(
            HttpReadError,
            match=r"d/x\.af: the answer to Range bytes=\d+-\d+ is for bytes \d+-\d+ "
            r"\(Content-Range\)",
        ),
    ):
        f.read_array("a")
