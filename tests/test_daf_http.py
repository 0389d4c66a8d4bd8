"""The read-only HTTP backend against a real ``http.server`` on 127.0.0.1."""

from __future__ import annotations

import functools
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
from dafzarr.daf._backends_http import HttpBackend
from dafzarr.errors import DafFormatError, DafReadOnlyError

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
        start_text, _, end_text = header.removeprefix("bytes=").partition("-")
        with open(path, "rb") as f:
            data = f.read()
        start, end = int(start_text), min(int(end_text), len(data) - 1)
        body = data[start : end + 1]
        self.send_response(206)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
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
    with pytest.raises(DafReadOnlyError, match=(
        f"can't open an http\\(s\\)://... ZarrDaf in mode: r\\+; the HTTP backend is "
        f"read-only: {url}"
    )):
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
    (bare / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group",
                                                "attributes": {"daf": [1, 0]}}))
    with pytest.raises(DafFormatError, match="lacks an inline `consolidated_metadata` field"):
        dafzarr.open_daf(f"{base}/bare.daf.zarr")


@pytest.mark.parametrize("ranged", [True, False])
def test_large_arrays_use_range_requests(
    tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch, ranged: bool
) -> None:
    monkeypatch.setattr(HttpBackend, "range_threshold", 64 << 10)
    monkeypatch.setattr(HttpBackend, "stripe", 16 << 10)
    values = np.random.default_rng(0).random(20_000)  # 160,000 bytes: 10 stripes
    d = dafzarr.open_daf(tmp_path / "big.daf.zarr", "w", zarr_format=3)
    d.add_axis("cell", [f"c{i}" for i in range(20_000)])
    d.set_vector("cell", "v", values)
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
