"""Child process of ``tests/robustness/test_fuzz_parsers.py``: fuzz one parser with hypothesis.

``python -m tests.robustness._fuzz_child TARGET EXAMPLES WORKDIR`` builds a small valid input for
TARGET, then feeds the parser ``EXAMPLES`` byte-mutated copies of it. Every input must either
parse or raise a :class:`~dafzarr.DafzarrError`, within ``PER_INPUT_SECONDS`` (a timer signal
interrupts a hang), with Python allocations (``tracemalloc`` peak) of at most
``ALLOC_RATIO`` times the input's size plus ``ALLOC_FLOOR``; native allocations are bounded by
an address-space limit (``NATIVE_HEADROOM`` above what the process holds before each input).
A segfault or SIGBUS kills this process: the parent sees the signal, and ``faulthandler``
prints every thread's stack. An input that the timer signal cannot interrupt (a native loop,
a deadlock) is stopped by ``faulthandler``'s watchdog after ``WATCHDOG_SECONDS``, which also
prints every thread's stack and ends the process; so is an exit that does not end. Each input
is saved to ``WORKDIR/current-input`` before it runs, so that the parent can name the input a
crash or a hang came from.
The first failing input is printed (hex) and the process exits with status 1.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import resource
import signal
import sys
import tracemalloc
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dafzarr import DafzarrError

PER_INPUT_SECONDS = 5.0
# A hang the timer signal cannot interrupt ends the process this long after the input began.
WATCHDOG_SECONDS = float(os.environ.get("DAFZARR_FUZZ_WATCHDOG", "60"))
# The name, in the work directory, of the input being parsed.
CURRENT_INPUT = "current-input"
ALLOC_RATIO = 4
ALLOC_FLOOR = 1 << 20  # fixed costs: zarr/xarray objects, read buffers, hypothesis itself
# Address space one input may map or allocate beyond what the process holds before it: the
# decoders' own state (bzip2 about 4 MiB, a zstd window), HDF5's caches, worker thread stacks.
# The process runs with MALLOC_ARENA_MAX=1 (it starts itself again with ``ENV`` if not): glibc
# otherwise gives a thread's first allocation a heap arena of its own, reserving 64 to 128 MiB
# of address space at once, so that a thread zarr's pool starts, or frees, during an input
# makes allocations fail at random moments, and a failure inside the pool's plumbing can leave
# zarr waiting for ever on a coroutine that ended.
NATIVE_HEADROOM = 64 << 20
ENV = {"MALLOC_ARENA_MAX": "1"}

Runner = Callable[[bytes], None]


class _Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang(f"one input took more than {PER_INPUT_SECONDS} s")


# --- Targets: (valid input, where mutations go most often, parse one input) ----------------


def _zip(work: Path) -> tuple[bytes, int, Runner]:
    from dafzarr import MmapZipStore
    from tests.helpers import zipbuild as zb

    plain = b"hello zarr " * 200
    base = zb.build(
        [
            zb.Member.compressed("zarr.json", b'{"zarr_format":3,"node_type":"group"}', 0),
            zb.Member.compressed("a/c/0", plain, 8),
            zb.Member.compressed("a/c/1", plain, 12),
            zb.Member.compressed("a/c/2", plain, 93),
            zb.Member(
                "a/c/3", zb.zstd_rle_frame(7, 5000), 93, crc=zlib.crc32(b"\7" * 5000), usize=5000
            ),
        ]
    ).data
    p = work / "fuzz.zip"

    def run(data: bytes) -> None:
        p.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with MmapZipStore(p, "r") as store:
                keys = store.keys()
                for k in keys:
                    with contextlib.suppress(KeyError):
                        bytes(store[k])

    return base, len(base) // 2, run


def _arrayfile_set(work: Path) -> tuple[Path, Path]:
    from dafzarr.arrayfile import ArrayFile, FileConfig

    src = work / "src"
    src.mkdir(exist_ok=True)
    with ArrayFile.create(src / "a.af", config=FileConfig(codec="zstd")) as f:
        f.define_array("v", "i4", ["x", "y"], [10, 6], chunk_shape=[3, 4], fill_value=7)
        f.write_array("v", [0, 0], np.arange(60, dtype="i4").reshape(10, 6))
        f.define_array("s", str, ["n"], [5], chunk_shape=[2])
        f.write_array("s", [0], np.array(["a", "bb", "", "dddd", "e" * 40], dtype=object))
        f.set_attribute("v", "units", "m/s")
    return src / "a.af", src / "a.1.af"


def _arrayfile(work: Path) -> tuple[bytes, int, Runner]:
    from dafzarr.arrayfile import ArrayFile

    base_af, layer = _arrayfile_set(work)
    dst = work / "dst"
    dst.mkdir(exist_ok=True)
    (dst / "a.af").write_bytes(base_af.read_bytes())
    data = layer.read_bytes()
    footer = int.from_bytes(data[-12:-4], "little")

    def run(mutated: bytes) -> None:
        (dst / "a.1.af").write_bytes(mutated)
        with ArrayFile.open(dst / "a.af") as f:
            for name in f.list_arrays():
                info = f.array_info(name)
                f.attributes(name)
                # a corner of at most 64 per axis: a huge declared shape is the caller's to read
                f.read_array(name, [0] * len(info.shape), [min(64, s) for s in info.shape])

    return data, len(data) - 12 - footer, run


def _rkyv(work: Path) -> tuple[bytes, int, Runner]:
    from dafzarr._core.arrayfile import format as fmt

    _, layer = _arrayfile_set(work)
    data = layer.read_bytes()
    payload = data[len(data) - 12 - int.from_bytes(data[-12:-4], "little") : -12]

    def run(mutated: bytes) -> None:
        try:
            fmt.decode_footer(mutated)
        except fmt.CorruptFooterError as exc:  # the module's own error; ArrayFile wraps it
            raise DafzarrError(str(exc)) from exc

    return payload, 0, run


def _daf(work: Path) -> tuple[bytes, int, Runner]:
    """A Daf data set in a directory; the input is its metadata documents, concatenated."""
    import dafzarr

    src = work / "d.daf.zarr"
    d = dafzarr.open_daf(str(src), "w+", zarr_format=2)
    d.set_scalar("version", "1.0")
    d.add_axis("cell", np.array(["A", "B", "C"]))
    d.add_axis("gene", np.array(["X", "Y"]))
    d.set_vector("cell", "age", np.array([1.0, 2.0, 3.0]))
    d.set_matrix("cell", "gene", "UMIs", np.arange(6, dtype="i4").reshape(3, 2))
    d.close()
    docs = sorted(p for p in src.rglob("*") if p.is_file() and p.name.startswith((".z", "zarr")))
    parts = [p.read_bytes() for p in docs]
    sep = b"\n\x00\x00SEP\x00\x00\n"

    def run(mutated: bytes) -> None:
        pieces = mutated.split(sep)
        if len(pieces) != len(docs):
            return  # the separator itself was hit: not an input of this format
        for p, b in zip(docs, pieces, strict=True):
            p.write_bytes(b)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = dafzarr.open_daf(str(src), "r")
                try:
                    for name in r.scalars_set():
                        r.get_scalar(name)
                    for axis in r.axes_set():
                        r.axis_np_entries(axis)
                        for v in r.vectors_set(axis):
                            r.get_np_vector(axis, v)
                    for rows in r.axes_set():
                        for cols in r.axes_set():
                            for m in r.matrices_set(rows, cols):
                                r.get_np_matrix(rows, cols, m)
                finally:
                    r.close()
        finally:
            for p, b in zip(docs, parts, strict=True):
                p.write_bytes(b)

    return sep.join(parts), 0, run


def _hdf5(work: Path) -> tuple[bytes, int, Runner]:
    import h5py

    from dafzarr.refs import scan

    src = work / "src.h5"
    with h5py.File(src, "w", libver="latest") as f:
        f.create_dataset(
            "chunked",
            data=np.arange(400, dtype="f4").reshape(20, 20),
            chunks=(5, 5),
            compression="gzip",
            shuffle=True,
        )
        f.create_dataset("contiguous", data=np.arange(30, dtype="i2"))
        f.create_dataset("compact", data=np.arange(4, dtype="u1"), dcpl=_compact_dcpl(h5py))
        t = f.create_dataset("time", data=np.arange(20, dtype="f8"))
        t.make_scale("time")
        f["chunked"].dims[0].attach_scale(t)
        f["chunked"].attrs["units"] = "m"
    data = src.read_bytes()
    p = work / "fuzz.h5"

    def run(mutated: bytes) -> None:
        p.write_bytes(mutated)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # within the per-input limit: a file on which HDF5 never returns is stopped
            scan(p, on_unsupported="skip", timeout=PER_INPUT_SECONDS / 2)

    return data, 0, run


def _compact_dcpl(h5py: Any) -> Any:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    return dcpl


def _native_hang(work: Path) -> tuple[bytes, int, Runner]:
    """Not a parser: inputs that hang in C code holding the GIL, where the timer signal cannot
    interrupt them (a regular expression's exponential backtracking), so that the test of
    the watchdog has a hang to catch."""
    base = b"a" * 40

    def run(data: bytes) -> None:
        if data != base:
            re.match(rb"(a+)+$", data + b"!")

    return base, 0, run


TARGETS: dict[str, Callable[[Path], tuple[bytes, int, Runner]]] = {
    "zip": _zip,
    "arrayfile": _arrayfile,
    "rkyv": _rkyv,
    "daf": _daf,
    "hdf5": _hdf5,
    "native-hang": _native_hang,
}

_INTERESTING = [
    0,
    1,
    0x7F,
    0x80,
    0xFF,
    0xFFFF,
    0xFFFFFFFF,
    1 << 31,
    1 << 40,
    (1 << 63) - 1,
    (1 << 64) - 1,
]


@st.composite
def _mutated(draw: st.DrawFn, base: bytes, hot: int) -> bytes:
    """``base`` with a few bytes, words or a tail changed (most often at ``hot`` or after)."""
    out = bytearray(base)
    n = len(out)
    for _ in range(draw(st.integers(1, 4))):
        lo = hot if draw(st.integers(0, 3)) else 0
        pos = draw(st.integers(lo, n - 1))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            out[pos] = draw(st.integers(0, 255))
        elif kind == 1:
            width = draw(st.sampled_from([2, 4, 8]))
            value = draw(st.sampled_from(_INTERESTING)) & ((1 << (8 * width)) - 1)
            out[pos : pos + width] = value.to_bytes(width, "little")[: n - pos]
        elif kind == 2:
            out[pos] ^= 1 << draw(st.integers(0, 7))
        else:  # copy a run from elsewhere (pointers aimed at other records)
            src = draw(st.integers(0, n - 1))
            k = draw(st.integers(1, 16))
            chunk = bytes(out[src : src + k])
            out[pos : pos + len(chunk)] = chunk
            del out[n:]
    if draw(st.integers(0, 9)) == 0:
        del out[draw(st.integers(0, n - 1)) :]
    return bytes(out)


def _check(run: Runner, data: bytes) -> None:
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    signal.setitimer(signal.ITIMER_REAL, PER_INPUT_SECONDS)
    try:
        with _native_limit():
            run(data)
    except DafzarrError:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    peak = tracemalloc.get_traced_memory()[1] - before
    limit = ALLOC_RATIO * len(data) + ALLOC_FLOOR
    assert peak <= limit, f"a {len(data)}-byte input allocated {peak} bytes (limit {limit})"


@contextlib.contextmanager
def _native_limit() -> Iterator[None]:
    """Address space limited to what the process holds now plus ``NATIVE_HEADROOM``.

    Set afresh for each input: the fuzzer's own records of past inputs grow by about 15 kB
    per input, which a limit set once would count against the parser.
    """
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = pages * resource.getpagesize() + NATIVE_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def main(target: str, examples: int, work: Path) -> int:
    faulthandler.enable()
    base, hot, run = TARGETS[target](work)
    run(base)  # the valid input parses
    signal.signal(signal.SIGALRM, _on_alarm)
    tracemalloc.start()
    current = work / CURRENT_INPUT

    @settings(
        max_examples=examples,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(_mutated(base, hot))
    def fuzz(data: bytes) -> None:
        current.write_bytes(data)
        faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
        try:
            _check(run, data)
        except BaseException:
            print(f"failing input ({target}, {len(data)} bytes): {data.hex()}", file=sys.stderr)
            raise
        finally:
            faulthandler.cancel_dump_traceback_later()

    try:
        fuzz()
    finally:
        # Threads a failed input left behind must not keep the process from ending.
        faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
    print(f"{target}: {examples} inputs, all parsed or refused with DafzarrError")
    return 0


if __name__ == "__main__":
    if any(os.environ.get(k) != v for k, v in ENV.items()):  # read by glibc at start only
        os.execve(
            sys.executable,
            [sys.executable, "-m", "tests.robustness._fuzz_child", *sys.argv[1:]],
            {**os.environ, **ENV},
        )
    sys.exit(main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])))
