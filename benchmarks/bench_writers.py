"""Benchmarks of zarr's own writers (through xarray) on MmapZipStore, zarr's LocalStore and
zarr's ZipStore.

Run from the project root::

    python -m benchmarks.bench_writers [--quick] [--only x,y]

Suites (each runs the peers alternately on the same data in the same process):

x. ``xarray.Dataset.to_zarr`` of a 1 GiB float32 variable in 1,000 chunks of 1 MiB (quick:
   64 MiB in 64 chunks), no compressor, so the store's own cost is what differs. zarr writes
   the chunks concurrently from its event loop; xarray then rewrites the group's metadata and
   consolidates it. ``ZipStore`` leaves duplicate names for every rewritten metadata key.
y. 100 appends along ``time`` (``to_zarr(mode="a", append_dim="time")``) of a 1 MiB slice
   each (quick: 20) to a store that already holds 16 slices: time per append. Each append
   rewrites the array's metadata and the consolidated metadata, so MmapZipStore accumulates
   superseded copies; the dead bytes after the appends are printed below the table.

Speed is never asserted: the script prints absolute figures, ratios and whether the
project's targets are met.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, ClassVar

import numpy as np
import zarr
from zarr.storage import LocalStore, ZipStore

import dafzarr
from dafzarr import MmapZipStore

from . import common as c

xr: Any
try:
    import xarray as xr
except ImportError:  # pragma: no cover - xarray is a declared benchmark dependency
    xr = None

# The peers, each with how to open a fresh store at a path and what it is written to.
_STORES: dict[str, tuple[str, Any]] = {
    "MmapZipStore": ("mmapzip.zip", lambda p: MmapZipStore(p, "w")),
    "LocalStore": ("localstore", lambda p: LocalStore(p)),
    "ZipStore": ("zipstore.zip", lambda p: ZipStore(p, mode="w")),
}
_SLICE = (256, 1024)  # one chunk: 1 MiB of float32


def _dataset(n: int, start: int = 0) -> Any:
    rng = np.random.default_rng(start)
    data = rng.random((n, *_SLICE), dtype=np.float32)
    return xr.Dataset(
        {"t2m": (("time", "y", "x"), data, {"units": "K"})},
        coords={"time": np.arange(start, start + n, dtype="i8")},
        attrs={"title": "benchmark"},
    )


def _encoding() -> dict[str, Any]:
    return {"t2m": {"chunks": (1, *_SLICE), "compressors": None}}


def _within_fastest(factor: float) -> Any:
    """Target: at most ``factor`` times the time of the faster of LocalStore and ZipStore."""

    def target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
        others = [peers[p] for p in ("LocalStore", "ZipStore") if p in peers]
        if not others:
            return "peers not measured", False
        fastest = min(others, key=lambda o: o.median / o.amount)
        r = (s.median / s.amount) / (fastest.median / fastest.amount)
        return f"within {factor:g}x of the faster peer ({fastest.peer}; is {r:.2f}x)", r <= factor

    return target


class _WriterSuite(c.TempDirSuite):
    timeout = 1200
    baseline = ("LocalStore", "ZipStore")

    def _open(self, peer: str) -> tuple[Any, str]:
        name, make = _STORES[peer]
        path = self.p(name)
        c.remove(path)  # no-op under the runner (prepare did it); needed under asv
        return make(path), path

    def prepare(self, name: str) -> None:
        c.remove(self.p(_STORES[self._peer_of[name]][0]))

    _peer_of: ClassVar[dict[str, str]] = {}


class ToZarr(_WriterSuite):
    """``to_zarr`` of one chunked variable into a fresh store."""

    label = "x"
    # A write takes about a second and the page cache makes single samples swing by up to
    # 1.7x on a shared VM: more rounds give medians that stay put between runs.
    bench_rounds: ClassVar[dict[bool, int]] = {False: 11, True: 3}
    _peer_of: ClassVar[dict[str, str]] = {
        "time_to_zarr_mmapzip": "MmapZipStore",
        "time_to_zarr_localstore": "LocalStore",
        "time_to_zarr_zipstore": "ZipStore",
    }

    def setup(self) -> None:
        self._mktemp()
        self.count = 64 if c.quick() else 1000
        self.ds = _dataset(self.count)
        self.nbytes = self.ds["t2m"].nbytes

    def _write(self, peer: str) -> None:
        store, _ = self._open(peer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ZipStore: duplicate names; v3 consolidation
            self.ds.to_zarr(store, mode="w", encoding=_encoding(), consolidated=True)
        store.close()

    def _size(self) -> str:
        return f"{c.human_bytes(self.nbytes)} / {self.count} chunks"

    @c.bench(
        "to_zarr", "MmapZipStore", c.MB, lambda s: s.nbytes, size=_size, target=_within_fastest(1.2)
    )
    def time_to_zarr_mmapzip(self) -> None:
        self._write("MmapZipStore")

    @c.bench("to_zarr", "LocalStore", c.MB, lambda s: s.nbytes, size=_size)
    def time_to_zarr_localstore(self) -> None:
        self._write("LocalStore")

    @c.bench("to_zarr", "ZipStore", c.MB, lambda s: s.nbytes, size=_size)
    def time_to_zarr_zipstore(self) -> None:
        self._write("ZipStore")


class AppendAlongTime(_WriterSuite):
    """Appends along ``time`` to a store that holds a few slices already (time per append)."""

    label = "y"
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 2}
    _peer_of: ClassVar[dict[str, str]] = {
        "time_append_mmapzip": "MmapZipStore",
        "time_append_localstore": "LocalStore",
        "time_append_zipstore": "ZipStore",
    }
    dead: ClassVar[dict[str, int]] = {}

    def setup(self) -> None:
        self._mktemp()
        self.appends = 20 if c.quick() else 100
        self.base = _dataset(16)
        self.slices = [_dataset(1, 16 + i) for i in range(self.appends)]

    def _append(self, peer: str) -> None:
        store, _ = self._open(peer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.base.to_zarr(store, mode="w", encoding=_encoding(), consolidated=True)
            for ds in self.slices:
                ds.to_zarr(store, mode="a", append_dim="time", consolidated=True)
        if isinstance(store, MmapZipStore):
            AppendAlongTime.dead[peer] = store.space().dead_bytes
        store.close()

    def _size(self) -> str:
        return f"{self.appends} x 1 MiB"

    @c.bench("append along time", "MmapZipStore", c.PER_CALL, lambda s: s.appends, size=_size)
    def time_append_mmapzip(self) -> None:
        self._append("MmapZipStore")

    @c.bench("append along time", "LocalStore", c.PER_CALL, lambda s: s.appends, size=_size)
    def time_append_localstore(self) -> None:
        self._append("LocalStore")

    @c.bench("append along time", "ZipStore", c.PER_CALL, lambda s: s.appends, size=_size)
    def time_append_zipstore(self) -> None:
        self._append("ZipStore")


SUITES: dict[str, list[type]] = {"x": [ToZarr], "y": [AppendAlongTime]}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_writers", __doc__, SUITES)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    if xr is None:
        ap.error("xarray is not installed (pip install '.[bench]')")
    rounds = args.rounds or (3 if c.quick() else 5)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    dead = AppendAlongTime.dead.get("MmapZipStore")
    c.report(
        "zarr writers on MmapZipStore",
        [
            f"* dafzarr {dafzarr.__version__}, zarr {zarr.__version__}, xarray {xr.__version__}",
            *clock.lines(rounds),
        ],
        results,
        (
            "Rates use MB = 10^6 bytes; per-append rows are the time of all appends divided by "
            "their number (the initial write included). ratio = how many times faster than the "
            "named peer (medians). Targets are informational."
            + (
                f"\n\nMmapZipStore dead bytes after the appends: {c.human_bytes(dead)} "
                "(superseded metadata copies; `compact` gives them back)."
                if dead is not None
                else ""
            )
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
