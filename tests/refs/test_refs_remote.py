"""Virtual references of files on HTTP servers and in S3-compatible object stores.

Real servers on 127.0.0.1 (``http.server`` with ``Range``, moto's S3 server): the references
of a remote scan equal those of a local scan of the same files, xarray reads the data back
through them over the network, only metadata is fetched, and a server that drops
connections or answers 503 at random gives the same result.
"""

from __future__ import annotations

import errno
import functools
import gc
import http.server
import io
import os
import random
import re
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem

from benchmarks.bench_http import _Ranged
from dafzarr._core.io import HttpOptions, MemorySource
from dafzarr._core.io.blocks import BlockReader
from dafzarr._core.io.urls import open_source
from dafzarr._core.refs.scan import scan_reader
from dafzarr.errors import H5Error, HttpReadError, InvalidArgumentError
from dafzarr.refs import scan, scan_many, virtualize
from tests.helpers import ROOT as REPO
from tests.helpers._moto_s3 import moto_s3
from tests.refs.refs_common import fastparquet_deprecation_ignored, pandas_missing_chunk_workaround

ROOT = str(REPO)
FAST = HttpOptions(deadline=20, attempts=6, backoff=0.01, max_wait=0.05)


# --- files and servers ----------------------------------------------------------------------
def _write_day(path: Path, day: int, *, n_time: int = 4) -> None:
    """A NetCDF-4 file as climate archives hold them: compressed chunks, a coordinate."""
    rng = np.random.default_rng(day)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 60)
        ds.createDimension("lon", 90)
        ds.createDimension("y", 256)
        ds.createDimension("x", 512)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "hours since 2000-01-01"
        t[:] = day * 24 + np.arange(n_time) * (24 / n_time)
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-89, 89, 60)
        v = ds.createVariable(
            "tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 30, 45), zlib=True, complevel=1
        )
        v.long_name = "air temperature"
        v[:] = rng.random((n_time, 60, 90), dtype=np.float32) * 40 + 250
        big = ds.createVariable("noise", "f8", ("time", "y", "x"), chunksizes=(1, 128, 256))
        big[:] = rng.random((n_time, 256, 512))  # incompressible: metadata is a small part


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("days")
    files = []
    for day in range(6):
        path = root / f"day{day}.nc"
        _write_day(path, day)
        files.append(path)
    return files


Behaviour = Callable[["_Handler", int], bool]


class _Handler(_Ranged):
    """Files with ``Range`` (and ``HEAD``); ``misbehave(handler, n)`` may spoil answer n."""

    misbehave: Behaviour | None = None
    counter: ClassVar[list[int]] = [0]
    log: ClassVar[list[tuple[str, str, int]]] = []
    lock = threading.Lock()

    def _spoiled(self) -> bool:
        with self.lock:
            self.counter[0] += 1
            n = self.counter[0]
        return self.misbehave is not None and self.misbehave(self, n)

    def send_header(self, keyword: str, value: str) -> None:
        if keyword == "Content-Length":
            self.length = int(value)
        super().send_header(keyword, value)

    def do_GET(self) -> None:
        if not self._spoiled():
            super().do_GET()
            with self.lock:
                self.log.append((self.command, self.path, self.length))

    def do_HEAD(self) -> None:
        if not self._spoiled():
            super().do_HEAD()


@pytest.fixture
def served(days: list[Path]) -> Iterator[Callable[[Behaviour | None], tuple[str, type]]]:
    """``start(behaviour)``: a server of the day files; returns its base URL and handler."""
    servers = []

    def start(behaviour: Behaviour | None = None) -> tuple[str, type]:
        handler = type(
            "H",
            (_Handler,),
            {
                "misbehave": staticmethod(behaviour) if behaviour else None,
                "counter": [0],
                "log": [],
            },
        )
        srv = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(days[0].parent))
        )
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}", handler

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _same_scan(remote: Any, local: Any) -> None:
    """Everything a scan found is the same, but the file's own path and URL."""
    assert set(remote.variables) == set(local.variables)
    assert remote.file_size == local.file_size
    assert remote.dimensions == local.dimensions and remote.groups == local.groups
    for name, v in local.variables.items():
        r = remote.variables[name]
        for field in (
            "dtype",
            "shape",
            "chunks",
            "filters",
            "fill_value",
            "attrs",
            "dims",
            "layout",
        ):
            assert getattr(r, field) == getattr(v, field), (name, field)
        for field in ("offset", "size", "filter_mask"):
            np.testing.assert_array_equal(getattr(r, field), getattr(v, field), err_msg=name)
        assert r.raw == v.raw, name


# --- scanning over HTTP -----------------------------------------------------------------------
def test_scan_over_http_equals_a_local_scan_and_fetches_only_metadata(
    served: Any, days: list[Path]
) -> None:
    url, handler = served()
    remote = scan(f"{url}/{days[1].name}")
    local = scan(days[1], url=f"{url}/{days[1].name}")
    assert remote.url == f"{url}/{days[1].name}"
    _same_scan(remote, local)
    fetched = sum(n for method, _, n in handler.log if method == "GET")
    assert fetched < days[1].stat().st_size / 2, (fetched, days[1].stat().st_size)


def test_scan_many_over_http_prefetches_and_equals_local_scans(
    served: Any, days: list[Path]
) -> None:
    url, handler = served()
    urls = [f"{url}/{p.name}" for p in days]
    remote = scan_many(urls, progress=False)
    for r, p, u in zip(remote, days, urls, strict=True):
        assert r.url == u
        _same_scan(r, scan(p, url=u))
    gets = [n for method, _, n in handler.log if method == "GET"]
    total = sum(p.stat().st_size for p in days)
    assert sum(gets) < total / 2


def test_a_collection_of_local_and_remote_files_is_scanned_in_order(
    served: Any, days: list[Path]
) -> None:
    """The first remote file is scanned alone; the others go to helper processes queued
    ahead, local files among them: every answer comes back in the order of the sources."""
    url, _ = served()
    sources = [str(days[0]), f"{url}/{days[1].name}", f"{url}/{days[2].name}", str(days[3]),
               f"{url}/{days[4].name}", f"{url}/{days[5].name}"]  # fmt: skip
    for timeout in (None, 60):
        got = scan_many(sources, progress=False, timeout=timeout)
        for r, p, s in zip(got, days, sources, strict=True):
            expected = scan(p, url=s if "://" in s else None)
            _same_scan(r, expected)


def test_a_bad_remote_file_among_queued_ones_is_an_error_naming_it(
    served: Any, days: list[Path]
) -> None:
    junk = days[0].parent / "junk.nc"
    junk.write_bytes(b"not an HDF5 file" * 1000)
    url, _ = served()
    sources = [f"{url}/{p.name}" for p in days[:3]] + [f"{url}/junk.nc"]
    sources += [f"{url}/{p.name}" for p in days[3:]]
    try:
        with pytest.raises(H5Error, match=re.escape(f"{url}/junk.nc")):
            scan_many(sources, progress=False)
    finally:
        junk.unlink()
    assert len(scan_many([f"{url}/{p.name}" for p in days], progress=False)) == len(days)


class _Counting(_Handler):
    """Answers 50 ms late, and counts the requests in flight at once."""

    delay = 0.05
    busy: ClassVar[list[int]] = [0, 0]  # now, most

    def _count(self, step: int) -> None:
        with self.lock:
            self.busy[0] += step
            self.busy[1] = max(self.busy)

    def do_GET(self) -> None:
        self._count(1)
        try:
            super().do_GET()
        finally:
            self._count(-1)

    def do_HEAD(self) -> None:
        self._count(1)
        try:
            super().do_HEAD()
        finally:
            self._count(-1)


@pytest.mark.parametrize("in_flight", [2, 16])
def test_the_requests_in_flight_are_bounded_by_in_flight(days: list[Path], in_flight: int) -> None:
    handler = type("C", (_Counting,), {"busy": [0, 0], "counter": [0], "log": []})
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(days[0].parent))
    )
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        urls = [f"http://127.0.0.1:{srv.server_address[1]}/{p.name}" for p in days]
        got = scan_many(urls, progress=False, in_flight=in_flight)
    finally:
        srv.shutdown()
        srv.server_close()
    _same_scan(got[-1], scan(days[-1], url=urls[-1]))
    most = handler.busy[1]
    if in_flight == 2:  # two files ahead, and the one being scanned
        assert most <= 3
    else:  # the files after the first are opened at once
        assert most >= 4


@pytest.mark.parametrize("in_flight", [0, -1, 1.5, True])
def test_in_flight_must_be_a_positive_int(in_flight: object) -> None:
    with pytest.raises(InvalidArgumentError, match="in_flight must be"):
        scan_many(["http://127.0.0.1:9/x.nc"], progress=False, in_flight=in_flight)  # type: ignore[arg-type]


def test_xarray_reads_the_data_through_references_to_http(
    served: Any, days: list[Path], tmp_path: Path
) -> None:
    url, _ = served()
    out = tmp_path / "refs.parq"
    virtualize([f"{url}/{p.name}" for p in days], out, concat_dim="time", progress=False)
    want = xr.open_mfdataset(
        days,
        combine="nested",
        concat_dim="time",
        data_vars="minimal",
        coords="minimal",
        compat="override",
    ).load()
    for engine in ("pyarrow", "fastparquet"):
        with fastparquet_deprecation_ignored(), pandas_missing_chunk_workaround():
            mapper = LazyReferenceMapper(str(out), engine=engine)  # type: ignore[arg-type]
            fs = ReferenceFileSystem(
                fo=mapper,
                remote_protocol="http",
                asynchronous=True,
                remote_options={"asynchronous": True},
            )
            store = zarr.storage.FsspecStore(fs, read_only=True)
            got = xr.open_dataset(store, engine="zarr", zarr_format=2, consolidated=False).load()
        for name in ("tas", "noise", "time", "lat"):
            np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_a_server_failing_at_random_gives_the_same_scan(served: Any, days: list[Path]) -> None:
    rng = random.Random(7)
    spoiled = []

    def flaky(h: _Handler, n: int) -> bool:
        if n > 2 and rng.random() < 0.3:
            spoiled.append(n)
            if rng.random() < 0.5:
                h.send_response(503)
                h.send_header("Content-Length", "0")
                h.end_headers()
            else:  # drop the connection without an answer
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
            return True
        return False

    url, _ = served(flaky)
    urls = [f"{url}/{p.name}" for p in days]
    opts = {"headers": {"User-Agent": "dafzarr-test"}}
    got = scan_many(urls, progress=False, storage_options=opts)
    assert spoiled, "the server never failed: the test proves nothing"
    for r, p, u in zip(got, days, urls, strict=True):
        _same_scan(r, scan(p, url=u))


@pytest.mark.parametrize("good", [1, 3], ids=["at-open", "mid-scan"])
def test_a_server_that_fails_for_good_is_an_error_naming_the_url(
    served: Any, days: list[Path], good: int
) -> None:
    """The read error itself (naming the URL and the range), not HDF5's "can't read"."""

    def broken(h: _Handler, n: int) -> bool:
        if n > good:  # the HEAD and the first reads are answered, then only errors
            h.send_response(500)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return True
        return False

    url, _ = served(broken)
    target = f"{url}/{days[0].name}"
    reader = BlockReader(open_source(target, options=FAST), block_size=4096, readahead=4096)
    with pytest.raises(HttpReadError, match=re.escape(target)):
        scan_reader(reader)


class _CollectingWorkers:
    """A source whose reads wait for a worker thread that starts a garbage collection first,
    as any allocation there may (automatic collections are made rare for the test, so only
    this one happens), with h5py objects in the garbage: made on the reading thread, inside
    HDF5, just before it waits."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.where = inner.where
        self.collected = 0

    def head(self) -> Any:
        return self.inner.head()

    def read(self, start: int, stop: int, *, version: str | None = None) -> Any:
        return self.read_ranges([(start, stop)], version=version)[0]

    def read_ranges(self, ranges: Any, *, version: str | None = None) -> Any:
        import h5py

        from dafzarr._core.io.workers import call_within

        cycle: dict[str, Any] = {"id": h5py.h5p.create(h5py.h5p.FILE_ACCESS)}
        cycle["self"] = cycle  # garbage only a collection frees
        del cycle

        def in_worker() -> Any:
            if gc.isenabled():  # what an automatic collection does: nothing when disabled
                self.collected += 1
                gc.collect()
            return self.inner.read_ranges(ranges, version=version)

        return call_within(in_worker, 5)


def test_a_collection_in_a_worker_never_waits_for_the_scan(served: Any, days: list[Path]) -> None:
    """h5py holds its global lock through the whole HDF5 call that reads through the reader,
    and its objects take that lock when freed: a collection started in the worker the read
    waits for would wait for the read (until its deadline). The scan pauses them."""
    url, _ = served()
    target = f"{url}/{days[0].name}"
    source = _CollectingWorkers(open_source(target, options=FAST))
    threshold = gc.get_threshold()
    gc.set_threshold(1 << 30)
    try:
        got = scan_reader(BlockReader(source), timeout=None)
    finally:
        gc.set_threshold(*threshold)
    _same_scan(got, scan(days[0], url=target))
    assert source.collected == 0
    assert gc.isenabled()


def test_collection_paused_nests_across_threads() -> None:
    from dafzarr._core.io.blocks import collection_paused

    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collection_paused():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with collection_paused():
        t.start()
        assert inside.wait(10) and not gc.isenabled()
    assert not gc.isenabled()  # the other thread is still inside
    leave.set()
    t.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # disabled before: left disabled
    finally:
        gc.enable()


def test_a_missing_object_and_bad_options_are_clear_errors(served: Any) -> None:
    url, _ = served()
    with pytest.raises(FileNotFoundError, match=r"nothing\.nc"):
        scan(f"{url}/nothing.nc")
    with pytest.raises(InvalidArgumentError, match="colour"):
        scan(f"{url}/day0.nc", storage_options={"colour": "blue"})
    with pytest.raises(InvalidArgumentError, match="ftp"):
        scan("ftp://example.org/x.nc")
    with pytest.raises(InvalidArgumentError, match="remote URLs only"):
        scan("day0.nc", storage_options={"anon": True})


# --- scanning in S3 --------------------------------------------------------------------------
def test_scan_many_in_s3_equals_local_scans_and_xarray_reads_through_them(
    days: list[Path], tmp_path: Path
) -> None:
    import obstore

    with moto_s3() as s3:
        store = s3.new_store()
        for p in days:
            obstore.put(store, f"nc/{p.name}", p.read_bytes())
        bucket = store.config["bucket"]
        options = {
            "key": "testing",
            "secret": "testing",
            "endpoint_url": s3.endpoint,
            "client_kwargs": {"region_name": "us-east-1"},
        }
        urls = [f"s3://{bucket}/nc/{p.name}" for p in days]
        got = scan_many(urls, progress=False, storage_options=options)
        for r, p, u in zip(got, days, urls, strict=True):
            assert r.url == u
            _same_scan(r, scan(p, url=u))
        # the same through an obstore store the caller made
        one = scan(f"nc/{days[2].name}", url=urls[2], store=store)
        _same_scan(one, got[2])
        out = tmp_path / "s3.parq"
        virtualize(urls, out, concat_dim="time", progress=False, storage_options=options)
        got = {}
        for engine in ("pyarrow", "fastparquet"):
            mapper = LazyReferenceMapper(str(out), engine=engine)  # type: ignore[arg-type]
            fs = ReferenceFileSystem(
                fo=mapper,
                remote_protocol="s3",
                asynchronous=True,
                remote_options={
                    "key": "testing",
                    "secret": "testing",
                    "asynchronous": True,
                    "client_kwargs": {"endpoint_url": s3.endpoint, "region_name": "us-east-1"},
                },
            )
            with warnings.catch_warnings(), fastparquet_deprecation_ignored():
                warnings.simplefilter("ignore", DeprecationWarning)  # botocore's datetime use
                got[engine] = xr.open_dataset(
                    zarr.storage.FsspecStore(fs, read_only=True),
                    engine="zarr",
                    zarr_format=2,
                    consolidated=False,
                ).load()
    want = xr.open_mfdataset(
        days,
        combine="nested",
        concat_dim="time",
        data_vars="minimal",
        coords="minimal",
        compat="override",
    ).load()
    for engine, xs in got.items():
        for name in ("tas", "noise", "time", "lat"):
            np.testing.assert_array_equal(
                xs[name].values, want[name].values, err_msg=f"{engine}: {name}"
            )


# --- the command line --------------------------------------------------------------------------
def test_refs_build_reads_urls(served: Any, days: list[Path], tmp_path: Path) -> None:
    url, _ = served()
    out = tmp_path / "cli.parq"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "dafzarr",
            "refs",
            "build",
            str(out),
            *[f"{url}/{p.name}" for p in days],
            "--concat-dim",
            "time",
            "--quiet",
            "--storage-options",
            '{"headers": {"User-Agent": "x"}}',
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert res.returncode == 0, res.stderr
    assert (out / ".zmetadata").exists()
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "dafzarr",
            "refs",
            "build",
            str(tmp_path / "bad.parq"),
            f"{url}/{days[0].name}",
            "--storage-options",
            "[1]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert bad.returncode != 0 and "JSON object" in bad.stderr
    assert not (tmp_path / "bad.parq").exists()


# --- the block reader ----------------------------------------------------------------------
def test_the_block_reader_reads_as_a_file_does() -> None:
    data = np.random.default_rng(1).integers(0, 256, 3_000_000, dtype=np.uint8).tobytes()
    reader = BlockReader(MemorySource(data), block_size=4096, max_cached=64 * 4096)
    plain = io.BytesIO(data)
    rng = random.Random(3)
    for _ in range(2000):
        pos = rng.choice([0, len(data) - 10, rng.randrange(len(data) + 100)])
        n = rng.choice([1, 7, 4096, 5000, 300_000, rng.randrange(20_000)])
        assert reader.seek(pos) == plain.seek(pos)
        assert reader.read(n) == plain.read(n), (pos, n)
        assert reader.tell() == plain.tell()
    assert reader.seek(-5, io.SEEK_END) == len(data) - 5
    assert reader.read() == data[-5:]
    with pytest.raises(ValueError, match="negative"):
        reader.seek(-1)


def test_the_block_reader_prefetches_a_learned_layout_in_one_request() -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    first = BlockReader(MemorySource(data), block_size=4096)
    for pos in (0, 4096 * 3, 4096 * 4, len(data) - 100):
        first.seek(pos)
        first.read(50)
    layout = first.layout()
    assert layout.from_start == (0, 3, 4) and layout.from_end == (0,)
    other = data + b"x" * 8192  # a file laid out alike, two blocks longer
    second = BlockReader(MemorySource(other), block_size=4096)
    second.prefetch(layout.blocks(len(other)))
    assert second.requests == 2  # blocks 0-4 (a small gap is fetched too), the last block
    before = second.requests
    for pos in (0, 4096 * 3, len(other) - 100):
        second.seek(pos)
        assert second.read(50) == other[pos : pos + 50]
    assert second.requests == before  # every read served from the prefetched blocks


def test_a_replaced_object_is_not_mixed_with_the_old_one(
    served: Any, days: list[Path], tmp_path: Path
) -> None:
    url, _ = served()
    copy = days[0].parent / "replaced.nc"
    copy.write_bytes(days[0].read_bytes())
    try:
        source = open_source(f"{url}/replaced.nc", options=FAST)
        reader = BlockReader(source, block_size=4096)
        reader.read(10)
        copy.write_bytes(days[1].read_bytes()[: copy.stat().st_size - 1])  # another size
        reader.seek(1 << 20)
        with pytest.raises((FileNotFoundError, HttpReadError)) as info:
            reader.read(10)
        if isinstance(info.value, FileNotFoundError):
            assert info.value.errno == errno.ESTALE
    finally:
        copy.unlink()


def test_a_block_reader_goes_to_another_process_with_its_blocks(
    served: Any, days: list[Path]
) -> None:
    """A scan in a helper process starts from the blocks fetched here; what it read comes
    back as a layout."""
    import pickle

    url, _ = served()
    reader = BlockReader(
        open_source(f"{url}/{days[0].name}", options=FAST), block_size=4096, readahead=4096
    )
    reader.prefetch(range(8))
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.read(8 * 4096) == days[0].read_bytes()[: 8 * 4096]
    assert copy.requests == 0  # served from the blocks that came along
    copy.seek(20 * 4096)
    assert copy.read(10) == days[0].read_bytes()[20 * 4096 : 20 * 4096 + 10]
    assert copy.requests == 1  # a miss: fetched by the copy itself
    before = reader.requests
    reader.learn(copy.stats())
    assert 20 in reader.layout().from_start and reader.requests == before + 1


def test_the_sources_of_one_store_sent_to_a_process_share_one_store(
    served: Any, days: list[Path]
) -> None:
    """Building an HTTP store (its client and TLS roots) costs milliseconds: a helper that
    receives the readers of a collection builds it once, and reads through it still."""
    import pickle

    url, _ = served()
    sources = [open_source(f"{url}/{p.name}", options=FAST) for p in days[:3]]
    copies = [pickle.loads(pickle.dumps(s)) for s in sources]
    assert copies[0].store is copies[1].store is copies[2].store
    assert copies[0].store is not sources[0].store
    for copy, p in zip(copies, days, strict=False):
        assert copy.where.endswith(p.name) and copy.options == FAST
        assert bytes(copy.read(0, 100)) == p.read_bytes()[:100]
    other, _ = served()
    elsewhere = pickle.loads(pickle.dumps(open_source(f"{other}/{days[0].name}")))
    assert elsewhere.store is not copies[0].store


def test_a_store_that_cannot_reach_the_helper_process_is_a_clear_error(
    days: list[Path],
) -> None:
    """obstore's memory store cannot be pickled: the scan under a deadline says so and how
    to scan without one."""
    import obstore
    from obstore.store import MemoryStore

    store = MemoryStore()
    obstore.put(store, "d.nc", days[0].read_bytes())
    with pytest.raises(InvalidArgumentError, match="timeout=None"):
        scan("d.nc", store=store)
    _same_scan(scan("d.nc", store=store, timeout=None), scan(days[0]))
