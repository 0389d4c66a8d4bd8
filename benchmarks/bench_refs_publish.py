"""Publishing a reference store into an Icechunk repository: dafzarr vs VirtualiZarr.

Run from the project root::

    python -m benchmarks.bench_refs_publish [--quick]

Suite a: a kerchunk-Parquet store of one variable of 100,000 chunks (f4 (1000, 1000),
chunks (1, 10), gzip + shuffle, scanned from a real HDF5 file; quick: 10,000), published
into a new local Icechunk repository and committed: ``dafzarr.refs.to_icechunk(store,
session.store)`` vs VirtualiZarr's ``open_virtual_dataset(store,
parser=KerchunkParquetParser())`` then ``vds.vz.to_icechunk(session.store)``, each followed
by ``session.commit``. Both write through Icechunk's ``set_virtual_refs``; the repositories
they write are read back and compared once, before timing.

After the table: how publishing grows with the number of references, each count in a fresh
child process (10^5 and 10^6; 10^7 with ``DAFZARR_BENCH_PUBLISH_LARGE=1``, several minutes
and GBs): seconds, references per second and peak RSS of dafzarr's publish + commit, of
dafzarr's reading pass alone (what dafzarr itself holds: one batch of references), of
Icechunk alone (the same references written by a loop of ``set_virtual_refs`` of 100,000,
then committed, in a process with the same imports) and of VirtualiZarr (up to 10^6: it
takes minutes per 10^6 references and holds each one as Python objects). Icechunk 1.1's
session keeps every reference written until the commit, and the commit builds the manifest
beside them, so the peak RSS of any publisher grows with their number (several hundred
bytes each); dafzarr's own part stays that of one batch. Committing in parts does not bound
it: each commit rewrites the array's whole manifest, and 10^7 references committed every
10^6 still peaked at 5.4 GiB (against 6.5 GiB in one commit).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import h5py
import numpy as np

import dafzarr
from dafzarr import refs

from . import common as c

warnings.filterwarnings("ignore")  # peers' zarr-v3 codec warnings on every call

LARGE = os.environ.get("DAFZARR_BENCH_PUBLISH_LARGE", "") not in ("", "0")


def _new_session(repo_path: str, prefix: str) -> Any:
    """A writable session of a new local repository with a container for ``prefix``."""
    import icechunk

    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(
            prefix, icechunk.local_filesystem_store(prefix.removeprefix("file://"))
        )
    )
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(repo_path),
        config,
        authorize_virtual_chunk_access={prefix: None},
    )
    return repo.writable_session("main")


def _vz_publish(store: str, session: Any) -> None:
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkParquetParser
    from virtualizarr.registry import ObjectStoreRegistry

    registry = ObjectStoreRegistry({"file:///": LocalStore("/")})
    vds = open_virtual_dataset(f"file://{store}", parser=KerchunkParquetParser(), registry=registry)
    vds.vz.to_icechunk(session.store)


class Publish(c.TempDirSuite):
    """One reference store of 100,000 chunks -> a new Icechunk repository, committed."""

    label = "a"
    temp_prefix = "dafzarr-bench-publish-"
    baseline = ("VirtualiZarr KerchunkParquetParser+to_icechunk",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 2}

    def setup(self) -> None:
        import icechunk

        icechunk.set_logs_filter("error")
        self._mktemp()
        rows = 100 if c.quick() else 1000
        self.nchunks = rows * 100
        data = self.p("data")
        os.mkdir(data)
        path = os.path.join(data, "many.h5")
        with h5py.File(path, "w") as f:
            d = f.create_dataset(
                "a",
                shape=(rows, 1000),
                chunks=(1, 10),
                dtype="f4",
                compression="gzip",
                shuffle=True,
            )
            d[:] = np.random.default_rng(0).random((rows, 1000), dtype="f4")
        self.store = self.p("many.parq")
        refs.write_parquet(refs.scan(path), self.store, inline_threshold=0)
        self.prefix = f"file://{data}/"
        self.session: Any = None
        self._check(path)

    def _check(self, path: str) -> None:
        """Both peers' repositories read back the file's values (untimed)."""
        import zarr

        with h5py.File(path) as f:
            want = f["a"][:5]
        for name, publish in (("d", self._ours), ("v", _vz_publish)):
            session = _new_session(self.p(f"check_{name}"), self.prefix)
            publish(self.store, session)
            session.commit("check")
            got = zarr.open_group(session.store, mode="r")["a"][:5]
            if not np.array_equal(got, want):
                raise AssertionError(f"{name}: published values differ from the file's")
            c.remove(self.p(f"check_{name}"))

    @staticmethod
    def _ours(store: str, session: Any) -> None:
        refs.to_icechunk(store, session.store)

    def prepare(self, name: str) -> None:
        c.remove(self.p("repo"))
        self.session = _new_session(self.p("repo"), self.prefix)

    @c.bench(
        "publish to Icechunk",
        "dafzarr to_icechunk",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=lambda s: f"{s.nchunks:,} chunks",
        target=c.ratio_target("VirtualiZarr KerchunkParquetParser+to_icechunk", 3),
    )
    def time_dafzarr(self) -> None:
        refs.to_icechunk(self.store, self.session.store)
        self.session.commit("published")

    @c.bench(
        "publish to Icechunk",
        "VirtualiZarr KerchunkParquetParser+to_icechunk",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=lambda s: f"{s.nchunks:,} chunks",
    )
    def time_virtualizarr(self) -> None:
        _vz_publish(self.store, self.session)
        self.session.commit("published")


# --- Growth with the number of references ----------------------------------------------------
# Peak RSS from the kernel's high-water mark of the child's own memory (common.peak_rss).
_GROWTH_CHILD = """
import sys, time, warnings
warnings.filterwarnings("ignore")
import icechunk
icechunk.set_logs_filter("error")
from benchmarks.bench_refs_publish import _icechunk_alone, _new_session, _vz_publish
from benchmarks.common import peak_rss
from dafzarr import refs
from dafzarr._core.refs.batches import open_source
from dafzarr._core.refs.icechunk import _check_references
import virtualizarr.parsers, obstore.store  # imported before the clock starts
mode, store, repo, prefix = sys.argv[1:5]
t0 = time.perf_counter()
if mode == "read":
    _check_references(open_source(store, 100_000))
else:
    session = _new_session(repo, prefix)
    if mode == "dafzarr":
        refs.to_icechunk(store, session.store)
    elif mode == "icechunk":
        _icechunk_alone(session, prefix, int(sys.argv[5]))
    else:
        _vz_publish(store, session)
    session.commit("published")
seconds = time.perf_counter() - t0
print(seconds, peak_rss())
"""


def _synthetic_store(out: str, data: str, n: int) -> None:
    """``n`` references (chunks of 4096 bytes) spread over 10 sparse 64 MiB files."""
    paths = []
    for i in range(10):
        p = os.path.join(data, f"f{i}.bin")
        with open(p, "wb") as fh:
            fh.truncate(64 << 20)
        paths.append(f"file://{p}")
    zarray = {
        "zarr_format": 2,
        "shape": [n // 1000, 1024_000],
        "chunks": [1, 1024],
        "dtype": "<f4",
        "compressor": None,
        "filters": None,
        "fill_value": "NaN",
        "order": "C",
        "dimension_separator": ".",
    }
    with refs.ReferenceWriter(out, paths) as w:
        w.add_group("")
        w.add_array("v", zarray, {"_ARRAY_DIMENSIONS": ["y", "x"]})
        for path_index, offset, size in _refs(n):
            w.append(path_index, offset, size)


def _refs(n: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The references of the synthetic store of ``n`` chunks, 10^6 at a time: path index
    (among 10 files), offset, size."""
    rng = np.random.default_rng(0)
    for start in range(0, n, 1_000_000):
        k = min(1_000_000, n - start)
        yield (
            rng.integers(0, 10, k, dtype=np.int32),
            rng.integers(0, (64 << 20) // 4096, k) * 4096,
            np.full(k, 4096),
        )


def _icechunk_alone(session: Any, prefix: str, n: int) -> None:
    """The synthetic store's array and references written straight through Icechunk (a loop
    of ``set_virtual_refs`` of 100,000 references), without dafzarr."""
    import icechunk
    import zarr

    zarr.create_array(
        session.store,
        name="v",
        shape=(n // 1000, 1024_000),
        chunks=(1, 1024),
        dtype="<f4",
        zarr_format=3,
        fill_value=np.nan,
    )
    urls = [f"{prefix}f{i}.bin" for i in range(10)]
    start = 0
    for path_index, offset, size in _refs(n):
        for s in range(0, len(offset), 100_000):
            rows = range(start + s, start + min(s + 100_000, len(offset)))
            specs = [
                icechunk.VirtualChunkSpec([r // 1000, r % 1000], urls[p], o, z)
                for r, p, o, z in zip(
                    rows,
                    path_index[s : s + 100_000].tolist(),
                    offset[s : s + 100_000].tolist(),
                    size[s : s + 100_000].tolist(),
                    strict=True,
                )
            ]
            session.store.set_virtual_refs("v", specs, validate_containers=True)
        start += len(offset)


def growth(counts: list[int], peer_max: int = 10**6) -> list[str]:
    """Seconds, rate and peak RSS per count and publisher (see the module doc)."""
    lines = [
        (
            "* publishing growth (fresh child process per count and publisher; seconds, "
            "references per second, peak RSS):"
        )
    ]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-publish-") as d:
        data = os.path.join(d, "data")
        os.mkdir(data)
        for n in counts:
            store = os.path.join(d, f"s{n}")
            _synthetic_store(store, data, n)
            cells = []
            for mode, label in (
                ("dafzarr", "dafzarr publish+commit"),
                ("read", "dafzarr reading pass alone"),
                ("icechunk", "Icechunk alone (set_virtual_refs loop+commit)"),
                ("vz", "VirtualiZarr"),
            ):
                if mode == "vz" and n > peer_max:
                    cells.append(f"{label}: not run above {peer_max:.0e}")
                    continue
                repo = os.path.join(d, "repo")
                res = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _GROWTH_CHILD,
                        mode,
                        store,
                        repo,
                        f"file://{data}/",
                        str(n),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=root,
                )
                seconds, rss = (float(x) for x in res.stdout.split()[-2:])
                c.remove(repo)
                cells.append(
                    f"{label} {seconds:.1f} s, {n / seconds / 1e3:.0f} k refs/s, "
                    f"peak RSS {c.human_bytes(rss)}"
                )
            c.remove(store)
            lines.append(f"  * {n:.0e} references: " + "; ".join(cells))
    return lines


SUITES: dict[str, list[type]] = {"a": [Publish]}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_refs_publish", __doc__, SUITES)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    rounds = args.rounds or (2 if c.quick() else 3)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
        counts = [10**5] if c.quick() else [10**5, 10**6, *([10**7] if LARGE else [])]
        memory = growth(counts)

    import icechunk
    import virtualizarr

    c.report("Publishing reference stores into Icechunk", [
        (f"* dafzarr {dafzarr.__version__}, icechunk {icechunk.__version__}, VirtualiZarr "
         f"{virtualizarr.__version__}"),
        *clock.lines(rounds),
        *memory,
    ], results, (
        "Rates are references per second at the median time, publish and commit included; "
        "ratio = how many times faster than VirtualiZarr (medians). Targets are informational."
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
