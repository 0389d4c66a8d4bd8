"""Suites a to c of ``python -m benchmarks.bench_refs``: scanning one variable of many chunks,
writing the references, and many daily files into one store (the suite base too)."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import h5py
import numpy as np

from dafzarr import _h5chunks, refs
from dafzarr._core.examples import write_daily_netcdf

from . import common as c

warnings.filterwarnings("ignore")


_ratio_target = c.ratio_target


class _TempDirSuite(c.TempDirSuite):
    temp_prefix = "dafzarr-bench-refs-"


# --- (a) one variable, 100,000 chunks ---------------------------------------------------------
def _make_many_chunks(path: str, rows: int) -> None:
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "a", shape=(rows, 1000), chunks=(1, 10), dtype="f4", compression="gzip", shuffle=True
        )
        d[:] = np.random.default_rng().random((rows, 1000), dtype="f4")


def _kerchunk_translate(path: str) -> dict[str, Any]:
    from kerchunk.hdf import SingleHdf5ToZarr

    return dict(SingleHdf5ToZarr(path, inline_threshold=0).translate())


def _kerchunk_translate_file(f: Any, url: str) -> dict[str, Any]:
    from kerchunk.hdf import SingleHdf5ToZarr

    return dict(SingleHdf5ToZarr(f, url, inline_threshold=0).translate())


def _vz_registry() -> Any:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def _vz_open(path: str) -> Any:
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    return open_virtual_dataset(
        url=path, registry=_vz_registry(), parser=HDFParser(), loadable_variables=[]
    )


def _size_chunks(s: Any) -> str:
    return f"{s.nchunks:,} chunks"


class ScanVariable(_TempDirSuite):
    """Chunk index of one variable: every peer produces (key, offset, size) for all chunks."""

    label = "a"
    baseline = ("kerchunk SingleHdf5ToZarr", "H5Dchunk_iter -> numpy (C walk)")
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        rows = 100 if c.quick() else 1000
        self.nchunks = rows * 100
        self.path = self.p("many.h5")
        _make_many_chunks(self.path, rows)
        got = refs.scan(self.path)["a"]
        kc = _kerchunk_translate(self.path)["refs"]
        for key in ("a/0.0", f"a/{rows - 1}.99"):
            i = np.ravel_multi_index(tuple(int(x) for x in key[2:].split(".")), got.grid)
            if kc[key][1:] != [int(got.offset[i]), int(got.size[i])]:
                raise AssertionError(f"{key}: dafzarr and kerchunk disagree")

    @c.bench(
        "scan 1 variable",
        "dafzarr refs.scan",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=_ratio_target("kerchunk SingleHdf5ToZarr", 30),
    )
    def time_dafzarr_scan(self) -> None:
        refs.scan(self.path)

    @c.bench(
        "scan 1 variable",
        "dafzarr refs.scan (vs C walk)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=_ratio_target("H5Dchunk_iter -> numpy (C walk)", 2, within=True),
    )
    def time_dafzarr_scan_again(self) -> None:
        refs.scan(self.path)

    @c.bench(
        "scan 1 variable",
        "H5Dchunk_iter -> numpy (C walk)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_c_walk(self) -> None:
        n = self.nchunks
        with h5py.File(self.path, "r") as f:
            o, z, m = np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint32)
            _h5chunks.chunk_index(f["a"].id, (1, 10), (n // 100, 100), o, z, m)

    @c.bench(
        "scan 1 variable",
        "h5py chunk_iter (Python callback)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_h5py_chunk_iter(self) -> None:
        out: list[Any] = []
        with h5py.File(self.path, "r") as f:
            f["a"].id.chunk_iter(out.append)

    @c.bench(
        "scan 1 variable",
        "kerchunk SingleHdf5ToZarr",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_kerchunk(self) -> None:
        _kerchunk_translate(self.path)

    @c.bench(
        "scan 1 variable",
        "VirtualiZarr HDFParser",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_virtualizarr(self) -> None:
        _vz_open(self.path).close()


# --- (b) writing the references ---------------------------------------------------------------
class WriteParquet(_TempDirSuite):
    """kerchunk-Parquet of one 100,000-chunk variable."""

    label = "b"
    baseline = ("kerchunk refs_to_dataframe",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        rows = 100 if c.quick() else 1000
        self.nchunks = rows * 100
        path = self.p("many.h5")
        _make_many_chunks(path, rows)
        self.scanned = refs.scan(path)
        self.kc = _kerchunk_translate(path)

    def prepare(self, name: str) -> None:
        c.remove(self.p("out_dafzarr"))
        c.remove(self.p("out_kerchunk"))

    @c.bench(
        "write parquet",
        "dafzarr write_parquet",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=lambda s, p: (f"< 0.1 s: {s.median:.3f} s", s.median < 0.1),
    )
    def time_dafzarr(self) -> None:
        c.remove(self.p("out_dafzarr"))
        refs.write_parquet(self.scanned, self.p("out_dafzarr"))

    @c.bench(
        "write parquet",
        "kerchunk refs_to_dataframe",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_kerchunk(self) -> None:
        from kerchunk.df import refs_to_dataframe

        refs_to_dataframe(self.kc, self.p("out_kerchunk"))


# --- (c) many daily files -> one store -----------------------------------------------------------
class ManyFiles(_TempDirSuite):
    """Daily files (2 chunked variables of 4 chunks + 3 coordinates each) -> one parquet store."""

    label = "c"
    baseline = ("kerchunk Single+MultiZarrToZarr+parquet",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 2, True: 2}

    def setup(self) -> None:
        self._mktemp()
        self.nfiles = 40 if c.quick() else 1000
        self.files = [self.p(f"day{d:05d}.nc") for d in range(self.nfiles)]
        for d, p in enumerate(self.files):
            write_daily_netcdf(p, d, shape=(180, 360), variables=("sst", "anom"))
        vds = refs.virtualize(self.files, None, progress=False)
        if vds.arrays["sst"].zarray["shape"] != [self.nfiles, 180, 360]:
            raise AssertionError("dafzarr composed the wrong shape")

    def prepare(self, name: str) -> None:
        for out in ("out_dafzarr", "out_dafzarr2", "out_kerchunk", "out_vz"):
            c.remove(self.p(out))

    @c.bench(
        "files -> store",
        "dafzarr virtualize",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
        target=_ratio_target("kerchunk Single+MultiZarrToZarr+parquet", 10),
    )
    def time_dafzarr(self) -> None:
        c.remove(self.p("out_dafzarr"))
        refs.virtualize(self.files, self.p("out_dafzarr"), progress=False)

    @c.bench(
        "files -> store",
        "dafzarr virtualize workers=2",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_dafzarr_workers(self) -> None:
        c.remove(self.p("out_dafzarr2"))
        refs.virtualize(self.files, self.p("out_dafzarr2"), workers=2, progress=False)

    @c.bench(
        "files -> store",
        "kerchunk Single+MultiZarrToZarr+parquet",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_kerchunk(self) -> None:
        from kerchunk.combine import MultiZarrToZarr
        from kerchunk.df import refs_to_dataframe

        singles = [_kerchunk_translate(p) for p in self.files]
        combined = MultiZarrToZarr(
            singles, concat_dims=["time"], identical_dims=["lat", "lon"], remote_protocol="file"
        ).translate()
        refs_to_dataframe(combined, self.p("out_kerchunk"))

    @c.bench(
        "files -> store",
        "VirtualiZarr open_virtual_mfdataset+parquet",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_virtualizarr(self) -> None:
        from virtualizarr import open_virtual_mfdataset
        from virtualizarr.parsers import HDFParser

        vds = open_virtual_mfdataset(
            self.files, registry=_vz_registry(), parser=HDFParser(), concat_dim="time",
            combine="nested", data_vars="minimal", coords="minimal", compat="override",
            loadable_variables=["time", "lat", "lon"],
        )  # fmt: skip
        vds.vz.to_kerchunk(self.p("out_vz"), format="parquet")
