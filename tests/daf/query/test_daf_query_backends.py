"""The same Daf queries on the same data stored in memory, in a directory, in a ZIP, in a data
set of a multi-data-set ZIP (``file.zip#/group``) and served read-only over HTTP (a directory
behind ``http.server`` on 127.0.0.1): identical answers, dtypes, storage (sparse stays sparse)
and entry names."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dafzarr
from tests.daf.daf_helpers import BACKENDS, Backend

CELLS = ["c1", "c2", "c3", "c4", "c5"]
GENES = ["g1", "g2", "g3"]
TYPE = np.array(["T", "B", "", "T", "NK"], dtype=object)
UMIS = np.array([[0, 2, 0], [1, 0, 0], [0, 0, 0], [3, 1, 4], [0, 0, 5]], dtype=np.int32)


def fill(d: Any) -> Any:
    d.set_scalar("organism", "zebrafish")
    d.set_scalar("threshold", 0.25)
    d.add_axis("cell", CELLS)
    d.add_axis("gene", GENES)
    d.add_axis("type", ["B", "NK", "T"])
    d.add_axis("empty", [])
    d.set_vector("cell", "age", np.array([30, 4, 18, 77, 42], dtype=np.int64))
    d.set_vector("cell", "is_doublet", np.array([False, True, False, False, True]))
    d.set_vector("cell", "type", TYPE)
    d.set_vector("type", "color", np.array(["blue", "green", "red"], dtype=object))
    d.set_vector("gene", "is_marker", np.array([True, False, True]))
    d.set_vector("empty", "score", np.zeros(0, dtype=np.float32))
    d.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(UMIS), relayout=False)
    d.set_matrix("cell", "gene", "dense", UMIS.astype(np.float32) / 2)
    d.set_matrix(
        "cell", "cell", "distance", np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0)))
    )
    return d


QUERIES = [
    ". ?",
    "@ ?",
    "@ cell : ?",
    "@ cell @ gene :: ?",
    ". organism",
    ". threshold",
    "@ cell",
    "@ cell : age",
    "@ cell [ ! is_doublet & age > 20 ] : type",
    "@ cell : type ?? : color",
    "@ cell : type ?? gray : color",
    "@ cell @ gene :: UMIs",
    "@ gene @ cell :: UMIs",
    "@ cell [ type = T | type = NK ] @ gene [ is_marker ] :: UMIs",
    "@ cell @ gene :: dense % Log eps 1",
    "@ cell @ gene :: UMIs >| Sum",
    "@ cell @ gene :: dense >- Mean",
    "@ cell : age / type >> Mean",
    "@ cell : type =@ * is_doublet",
    "@ cell @ gene :: UMIs -/ type =@ >- Sum || 0",
    "@ cell :: UMIs @ gene = g2",
    "@ cell :: distance @| c3",
    ":: UMIs @ cell = c4 @ gene = g3",
    "@ empty : score",
    "@ empty @ gene :: nothing || 0",
    "@ cell @ gene :: nothing || 0",
    "@ cell : nothing || 0",
    "@ cell [ type ~ \\^T ] : age >> Sum",
    "@ cell : index",
]


def _answers(d: Any) -> list[Any]:
    return [(d.get_np_query(q, cache=False), d.get_pd_query(q, cache=False)) for q in QUERIES]


def _same(got: Any, want: Any, query: str) -> None:
    if sp.issparse(want):
        assert sp.issparse(got) and got.format == want.format, query
        assert got.dtype == want.dtype and got.shape == want.shape, query
        assert np.array_equal(got.toarray(), want.toarray()), query
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and not sp.issparse(got), query
        assert got.dtype == want.dtype or {got.dtype.kind, want.dtype.kind} <= set("OUT"), (
            query,
            got.dtype,
            want.dtype,
        )
        assert got.shape == want.shape and got.tolist() == want.tolist(), query
    elif isinstance(want, pd.Series | pd.DataFrame):
        assert type(got) is type(want) and got.equals(want), query
        assert list(got.index) == list(want.index) and got.index.name == want.index.name
        if isinstance(want, pd.DataFrame):
            assert list(got.columns) == list(want.columns), query
            assert got.columns.name == want.columns.name, query
    else:
        assert type(got) is type(want) and got == want, (query, got, want)


@pytest.fixture(scope="module")
def reference() -> list[Any]:
    return _answers(fill(dafzarr.memory_daf("reference")))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("rel", "zarr_format"),
    [(rel, fmt) for _, rel, fmt in BACKENDS],
    ids=[name for name, _, _ in BACKENDS],
)
def test_queries_on_every_backend(
    tmp_path: Path, rel: str | None, zarr_format: int, reference: list[Any]
) -> None:
    backend = Backend(tmp_path, rel, zarr_format)
    reader = backend.reader(fill(backend.writer()))
    try:
        for query, got, want in zip(QUERIES, _answers(reader), reference, strict=True):
            _same(got[0], want[0], query)
            _same(got[1], want[1], query)
    finally:
        reader.close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_queries_over_http(
    tmp_path: Path, served: str, zarr_format: int, reference: list[Any]
) -> None:
    fill(dafzarr.open_daf(tmp_path / "cells.daf.zarr", "w", zarr_format=zarr_format)).close()
    reader = dafzarr.open_daf(f"{served}/cells.daf.zarr")
    try:
        assert reader.read_only
        for query, got, want in zip(QUERIES, _answers(reader), reference, strict=True):
            _same(got[0], want[0], query)
            _same(got[1], want[1], query)
    finally:
        reader.close()
