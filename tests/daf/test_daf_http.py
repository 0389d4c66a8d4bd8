"""The read-only HTTP backend against a real ``http.server`` on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr._core.daf.backends_http import HttpBackend
from dafzarr.errors import DafFormatError, DafReadOnlyError, HttpReadError

from .test_daf_format import check_example, fill_example


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves files (ignoring ``Range``), without logging to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Ranged(_Quiet):
    """Honours single ``Range: bytes=a-b`` requests with 206 responses."""

    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Range") or "")
        header = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not header or not os.path.isfile(path):
            super().do_GET()
            return
        self._send_range(path, header, {})

    def _send_range(self, path: str, header: str, extra: dict[str, str]) -> None:
        """A 206 answer to ``Range: bytes=a-b`` with the ``extra`` headers."""
        start_text, _, end_text = header.removeprefix("bytes=").partition("-")
        with open(path, "rb") as f:
            data = f.read()
        start, end = int(start_text), min(int(end_text), len(data) - 1)
        body = data[start : end + 1]
        self.send_response(206)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(handler: type[_Quiet] = _Quiet) -> str:
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path))
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_served_daf_reads(tmp_path: Path, serve: Any, zarr_format: int) -> None:
    d = fill_example(dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", zarr_format=zarr_format))
    d.set_vector("cell", "mask", sp.csr_matrix(np.array([[True, False, True]])))
    d.set_vector("gene", "label", np.array(["é", ""]))
    d.set_vector("gene", "sparse_text", np.array(["", "x"]))
    d.set_matrix("cell", "gene", "text", np.array([["a", "b"], ["c", "d"], ["e", "f"]]))
    d.set_scalar("zero", 0)
    d.close()
    base = serve()
    r = dafzarr.open_daf(f"{base}/x.daf.zarr")
    assert r.read_only and r.path == f"{base}/x.daf.zarr"
    check_example(r)
    assert r.get_np_vector("cell", "mask").tolist() == [True, False, True]
    assert list(r.get_np_vector("gene", "label")) == ["é", ""]
    assert r.get_np_matrix("gene", "cell", "text")[1, 2] == "f"
    assert r.get_scalar("zero") == 0
    assert r.vectors_set("cell") == {"score", "mask"}
    with pytest.raises(DafReadOnlyError):
        r.set_scalar("x", 1)


def test_http_errors(tmp_path: Path, serve: Any) -> None:
    base = serve()
    url = f"{base}/none.daf.zarr"
    with pytest.raises(
        DafReadOnlyError,
        match=(
            f"can't open an http\\(s\\)://... ZarrDaf in mode: r\\+; the HTTP backend is "
            f"read-only: {url}"
        ),
    ):
        dafzarr.open_daf(url, "r+")
    with pytest.raises(FileNotFoundError, match=f"failed to fetch remote zarr group: {url}"):
        dafzarr.open_daf(url)
    array = tmp_path / "array.daf.zarr"
    array.mkdir()
    (array / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "array"}))
    with pytest.raises(DafFormatError, match="not a zarr group"):
        dafzarr.open_daf(f"{base}/array.daf.zarr")
    bare = tmp_path / "bare.daf.zarr"
    bare.mkdir()
    (bare / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"daf": [1, 0]}})
    )
    with pytest.raises(DafFormatError, match="lacks an inline `consolidated_metadata` field"):
        dafzarr.open_daf(f"{base}/bare.daf.zarr")


def _big_vector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> Any:
    """``big.daf.zarr`` with a 160,000-byte vector ``v`` (returned), which the backend, with
    its thresholds lowered, reads as 10 stripes of 16 KiB."""
    monkeypatch.setattr(HttpBackend, "range_threshold", 64 << 10)
    monkeypatch.setattr(HttpBackend, "stripe", 16 << 10)
    values = np.random.default_rng(seed).random(20_000)
    d = dafzarr.open_daf(tmp_path / "big.daf.zarr", "w", zarr_format=3)
    d.add_axis("cell", [f"c{i}" for i in range(20_000)])
    d.set_vector("cell", "v", values)
    d.close()
    return values


@pytest.mark.parametrize("ranged", [True, False])
def test_large_arrays_use_range_requests(
    tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch, ranged: bool
) -> None:
    values = _big_vector(tmp_path, monkeypatch, 0)
    d = dafzarr.open_daf(tmp_path / "big.daf.zarr", "r+")
    d.set_vector("cell", "zeros", np.zeros(20_000))  # elided: 404 means fill
    d.close()
    _Ranged.seen = []
    base = serve(_Ranged if ranged else _Quiet)
    r = dafzarr.open_daf(f"{base}/big.daf.zarr")
    assert np.array_equal(r.get_np_vector("cell", "v"), values)
    assert not np.any(r.get_np_vector("cell", "zeros"))
    if ranged:
        ranges = [h for h in _Ranged.seen if h]
        assert len(ranges) == 10 + 1  # 10 stripes, plus the probe of the elided chunk
        assert "bytes=0-16383" in ranges


class _Replacing(_Ranged):
    """Ranged answers with a validator (an ``ETag`` honouring ``If-Match`` with 412, or only
    ``Last-Modified``); the file at ``swap_path`` is replaced by another of the same size
    right after the first range of it is served, as a publisher may do at any moment."""

    validator = "etag"
    swap_path = ""
    swap_data = b""

    def _stamp(self, path: str) -> tuple[str, str]:
        with open(path, "rb") as f:
            etag = f'"{hashlib.sha256(f.read()).hexdigest()[:16]}"'
        return etag, self.date_time_string(int(os.path.getmtime(path)))

    def do_GET(self) -> None:
        header = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not header or not os.path.isfile(path):
            super().do_GET()
            return
        etag, modified = self._stamp(path)
        wanted = self.headers.get("If-Match")
        if self.validator == "etag" and wanted is not None and wanted != etag:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        extra = {"Last-Modified": modified}
        if self.validator == "etag":
            extra["ETag"] = etag
        self._send_range(path, header, extra)
        if path == type(self).swap_path:
            type(self).swap_path = ""
            new = path + ".new"
            with open(new, "wb") as f:
                f.write(type(self).swap_data)
            when = os.path.getmtime(path) + 10
            os.utime(new, (when, when))
            os.replace(new, path)


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
def test_a_chunk_replaced_while_its_stripes_are_read_is_refused(
    tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch, validator: str
) -> None:
    # The stripes of one chunk must all come from the object that answered the first one:
    # a chunk replaced in between (same size) fails the read instead of mixing two versions.
    values = _big_vector(tmp_path, monkeypatch, 1)
    chunks = [
        p
        for p in (tmp_path / "big.daf.zarr").rglob("*")
        if p.is_file() and p.stat().st_size == values.nbytes
    ]
    assert len(chunks) == 1
    base = serve(_Replacing)
    monkeypatch.setattr(_Replacing, "validator", validator)
    monkeypatch.setattr(_Replacing, "seen", [], raising=False)
    r = dafzarr.open_daf(f"{base}/big.daf.zarr")
    monkeypatch.setattr(_Replacing, "swap_path", str(chunks[0]))
    monkeypatch.setattr(_Replacing, "swap_data", (values * 2).tobytes())
    with pytest.raises(HttpReadError, match="was replaced while read"):
        r.get_np_vector("cell", "v")
    assert _Replacing.swap_path == ""  # the replacement happened
    # A fresh read sees the new chunk whole.
    assert np.array_equal(r.get_np_vector("cell", "v"), values * 2)


def test_served_julia_fixtures(fixtures_dir: Path) -> None:
    """The Julia-written stores (flat and packed) read over HTTP as from disk."""
    from .test_daf_format import check_example

    root = fixtures_dir / "julia-daf"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        check_example(dafzarr.open_daf(f"{base}/daf030-flat.daf.zarr"))
        packed = dafzarr.open_daf(f"{base}/zpk/gz.daf.zarr")
        assert packed.get_scalar("name") == "packed!"
        assert packed.get_np_vector("cell", "label")[1199] == "v1200"
        assert packed.get_np_matrix("cell", "gene", "sparse").nnz == 2000
    finally:
        server.shutdown()
        server.server_close()
