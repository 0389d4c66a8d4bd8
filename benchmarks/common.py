"""Timing helpers shared by the benchmark suites.

Suites are asv-compatible classes (``setup``/``teardown``, ``params``/``param_names``,
``time_*`` methods). Each ``time_*`` method is tagged with :func:`bench`: which operation it
measures, for which peer, and how much work one call does. :func:`run_suite` then runs every
``time_*`` method of a suite in rotating order, round after round, so that the peers share the
same machine state (page cache, host memory, other load); the table reports medians and
bests of the rounds and the ratio of each peer to the operation's baseline.

On a small, shared VM the same measurement moves by up to 2x between runs, and memory that
stays free for about a second goes back to the host (the next first touch then costs about
3 ms/MiB). Hence: a warm-up round that is not counted, no pauses between samples, outputs
removed right before the sample that rewrites them (so the freed pages are reused at once),
and comparisons only between peers measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar

from . import record
from .stats import (  # noqa: F401  (the units are re-exported for the suites)
    ENTRIES,
    MB,
    PER_CALL,
    Stats,
    markdown_table,
    stats_row,
)

T = TypeVar("T")

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# Set by ``--quick`` (or DAFZARR_BENCH_QUICK=1 in the environment, e.g. under asv).
_QUICK = os.environ.get("DAFZARR_BENCH_QUICK", "") not in ("", "0")


def set_quick(flag: bool) -> None:
    global _QUICK
    _QUICK = bool(flag)


def quick() -> bool:
    """True in ``--quick`` mode: small sizes, fewer rounds."""
    return _QUICK


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a file or directory tree if it exists (outside the timed region)."""
    p = os.fspath(path)
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


def settle_writeback() -> None:
    """Write every dirty page of the system back (``os.sync``) before a write is timed.

    Writers that each leave hundreds of MB in the page cache otherwise pay for one another:
    once the dirty pages pass the kernel's threshold, whichever process writes next is
    throttled until the backlog drains, so the same write measured 2-5x apart depending on
    what ran before it. Untimed; call it in ``prepare``."""
    if hasattr(os, "sync"):
        os.sync()


def peak_rss() -> int:
    """This process's peak resident memory in bytes: the kernel's high-water mark ``VmHWM``.

    Not ``getrusage``'s ``ru_maxrss``: on Linux a child started by fork and exec keeps its
    parent's peak there, so a small child would report the large parent's memory. Where
    ``/proc`` is missing, ``ru_maxrss`` is the fallback."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def reset_peak_rss() -> None:
    """Restart the kernel's peak-RSS counter (``VmHWM``) at the current RSS (Linux; elsewhere
    the peak then includes the earlier phases)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def child_json(module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module args...`` in a child process (its memory starts fresh; quick
    mode passed on) and return the JSON object its last line of output prints. A failing
    child raises ``RuntimeError`` with its error output."""
    import json
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "DAFZARR_BENCH_QUICK": "1" if quick() else "0"}
    res = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=root,
    )
    if res.returncode:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{res.stderr}")
    lines = res.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{module} {' '.join(args)} printed nothing:\n{res.stderr}")
    fig: dict[str, Any] = json.loads(lines[-1])
    return fig


def banded_csr(cells: int, genes: int, per: int, seed: int, *, indptr_dtype: Any = "int32") -> Any:
    """A cells x genes float32 CSR of UMI-like counts (1-19) with ``per`` stored values per
    cell: sorted, unique gene indices, one random gene in each of ``per`` consecutive bands
    of ``genes // per`` genes, built in a few vector passes (int32 indices, as scipy makes
    them; ``indptr_dtype`` int64 for more than 2**31 values)."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    band = genes // per
    indices = rng.integers(0, band, size=(cells, per), dtype=np.int32)
    indices += np.arange(0, band * per, band, dtype=np.int32)
    values = rng.integers(1, 20, size=cells * per, dtype=np.int32).astype(np.float32)
    indptr = np.arange(0, (cells + 1) * per, per, dtype=indptr_dtype)
    return sp.csr_matrix((values, indices.reshape(-1), indptr), shape=(cells, genes))


# --- Tagging benchmarks ----------------------------------------------------------------


@dataclass(frozen=True)
class Meta:
    op: str  # the operation (one block of rows in the table)
    peer: str  # who performs it
    unit: str  # MB, ENTRIES or PER_CALL
    amount: Callable[[Any], float]  # work done by one call, from the set-up suite
    size: Callable[[Any], str] | None = None  # the "size / N" column
    target: Callable[[Stats, dict[str, Stats]], tuple[str, bool]] | None = None


def bench(
    op: str,
    peer: str,
    unit: str,
    amount: Callable[[Any], float],
    *,
    size: Callable[[Any], str] | None = None,
    target: Callable[[Stats, dict[str, Stats]], tuple[str, bool]] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Tag a ``time_*`` method. ``op`` and ``peer`` may use ``{attr}`` fields of the suite.

    ``target(stats, peers)`` gets this row's stats and the op's stats by peer and returns the
    text for the target column and whether it is met (informational: nothing is asserted).
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        # asv passes a parametrized suite's parameters to every timed method; the suites
        # keep them from setup(), so the method ignores them (no __wrapped__: asv reads
        # this signature, not the original's)
        def timed(self: Any, *params: Any) -> Any:
            return fn(self)

        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(timed, attr, getattr(fn, attr))
        timed.bench_meta = Meta(op, peer, unit, amount, size, target)  # type: ignore[attr-defined]
        return timed

    return deco


def ratio_target(
    other: str, factor: float, *, within: bool = False
) -> Callable[[Stats, dict[str, Stats]], tuple[str, bool]]:
    """A ``target=`` for :func:`bench`: at least ``factor`` times faster than peer ``other``
    (``within``: at most ``factor`` times its time)."""

    def target(s: Stats, peers: dict[str, Stats]) -> tuple[str, bool]:
        if other not in peers:
            return f"{other}: not measured", False
        r = s.speedup_over(peers[other])
        if within:
            return f"within {factor:g}x of {other} (is {1 / r:.2f}x its time)", 1 / r <= factor
        return f"≥ {factor:g}x {other} (is {r:.2f}x)", r >= factor

    return target


class TempDirSuite:
    """Base of the suites: one call per sample, data under a temporary directory.

    ``_mktemp()`` (in ``setup``) makes the directory, ``p(name)`` names a file in it and
    ``teardown`` removes it. asv reads ``number``/``repeat``/``warmup_time``/``timeout``.
    """

    number = 1
    repeat = 3
    warmup_time = 0.0
    timeout = 1800
    temp_prefix = "dafzarr-bench-"

    def _mktemp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix=self.temp_prefix)
        self.dir = self._tmp.name

    def p(self, name: str) -> str:
        """The path of ``name`` in the suite's temporary directory."""
        return os.path.join(self.dir, name)

    def teardown(self, *params: Any) -> None:
        self._tmp.cleanup()


class WriterSuite(TempDirSuite):
    """A suite whose ``time_*`` writers each write one output, named in ``_outputs``.

    Before each writer's sample the system's dirty pages are written back (untimed), so that
    no writer pays for the writeback of the previous one's output, and then the writer's own
    previous output is removed, so that the memory it held is free right before it writes.
    """

    _outputs: ClassVar[dict[str, str]] = {}  # time_* method -> the file or directory it writes

    def prepare(self, name: str) -> None:
        if name in self._outputs:
            settle_writeback()
            remove(self.p(self._outputs[name]))


class SeededData(Generic[T]):
    """The random data of a run, made from one seed that the report prints, so that a run can
    be repeated (``--seed``). Made once per seed; only the last is kept (they are large)."""

    def __init__(self, make: Callable[[int], T]) -> None:
        self._make = make
        self._seed: int | None = None
        self._data: tuple[int, T] | None = None

    def seed(self) -> int:
        if self._seed is None:
            self._seed = random.SystemRandom().randrange(1 << 32)
        return self._seed

    def set_seed(self, seed: int | None) -> None:
        """Use ``seed`` (None: keep the one drawn, or draw one when first asked)."""
        if seed is not None:
            self._seed = seed

    def __call__(self) -> T:
        seed = self.seed()
        if self._data is None or self._data[0] != seed:
            self._data = None  # the previous data set goes first
            self._data = (seed, self._make(seed))
        return self._data[1]


# --- Running ---------------------------------------------------------------------------


class _Attrs(dict[str, Any]):
    """``str.format_map`` mapping that reads attributes (and properties) of an object."""

    def __init__(self, obj: Any) -> None:
        super().__init__()
        self.obj = obj

    def __missing__(self, key: str) -> Any:
        return getattr(self.obj, key)


def _param_sets(cls: type) -> list[tuple[Any, ...]]:
    params = getattr(cls, "params", None)
    if params is None:
        return [()]
    if getattr(cls, "param_names", None) and len(cls.param_names) == 1:  # type: ignore[attr-defined]
        return [(p,) for p in params]
    return list(itertools.product(*params))


def timed_methods(cls: type) -> list[str]:
    """The ``time_*`` methods in the order they are defined (the table's row order)."""
    names = [n for n in dir(cls) if n.startswith("time_")]
    return sorted(names, key=lambda n: getattr(cls, n).__code__.co_firstlineno)


def run_suite(
    cls: type, *, rounds: int, warmup: int, log: Callable[[str], None] | None = None
) -> list[Stats]:
    """Run all ``time_*`` methods of ``cls`` alternately; one Stats per method and params.

    Each round runs every method once, in its own order (shuffled with the round's number as
    the seed, so the same in every run): no method always follows the same one. With a fixed
    rotation (A B C, B C A, ...) a method's predecessor is nearly always the same, and on a
    VM what a sample leaves behind (dirty pages, freed memory the host takes back within a
    second) then biased every sample of the one that follows. A suite may define ``prepare(method_name)`` (called before
    each sample, untimed: remove the outputs the sample will rewrite) and attributes
    ``bench_rounds``/``bench_warmup`` to override the counts.
    """
    rounds = getattr(cls, "bench_rounds", {}).get(quick(), rounds)
    warmup = getattr(cls, "bench_warmup", {}).get(quick(), warmup)
    out: list[Stats] = []
    for params in _param_sets(cls):
        suite = cls()
        t_setup = time.perf_counter()
        suite.setup(*params)
        if log:
            log(
                f"{cls.__name__}{list(params) or ''}: set up in "
                f"{time.perf_counter() - t_setup:.1f} s"
            )
        try:
            names = timed_methods(cls)
            fns = {n: getattr(suite, n) for n in names}
            samples: dict[str, list[float]] = {n: [] for n in names}
            prepare = getattr(suite, "prepare", None)
            for r in range(warmup + rounds):
                order = list(names)
                random.Random(r).shuffle(order)
                for n in order:
                    if prepare is not None:
                        prepare(n)
                    gc.collect()
                    gc.disable()
                    try:
                        t0 = time.perf_counter()
                        fns[n]()
                        dt = time.perf_counter() - t0
                    finally:
                        gc.enable()
                    if r >= warmup:
                        samples[n].append(dt)
            fields = _Attrs(suite)
            for n in names:
                meta: Meta = fns[n].bench_meta
                out.append(
                    Stats(
                        suite=getattr(cls, "label", cls.__name__),
                        op=meta.op.format_map(fields),
                        peer=meta.peer.format_map(fields),
                        unit=meta.unit,
                        size=meta.size(suite) if meta.size else "",
                        amount=float(meta.amount(suite)),
                        samples=samples[n],
                        meta=meta,
                        baseline=tuple(getattr(cls, "baseline", ())),
                    )
                )
        finally:
            suite.teardown(*params)
    return out


# --- Reporting -------------------------------------------------------------------------


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def environment(extra: Iterable[str] = ()) -> str:
    import numpy as np

    lines = [
        (
            f"* {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {platform.platform()}, "
            f"{os.cpu_count()} CPUs"
        ),
        f"* Python {platform.python_version()}, numpy {np.__version__}",
    ]
    lines.extend(extra)
    return "\n".join(lines)


def eprint(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- The command line every benchmark module shares ---------------------------------------


def argument_parser(prog: str, doc: str | None, suites: Iterable[str]) -> argparse.ArgumentParser:
    """``--quick``, ``--only`` (suite keys) and ``--rounds``; modules add their own options."""
    ap = argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--only", default="", help=f"comma-separated suites ({','.join(suites)})")
    ap.add_argument("--rounds", type=int, default=None, help="counted rounds per suite")
    ap.add_argument(
        "--record",
        nargs="?",
        const=record.RESULTS_DIR,
        default=None,
        metavar="DIR",
        help=(
            "also write the results as JSON into "
            "DIR/<benchmark>.json (default DIR: "
            "benchmarks/results)"
        ),
    )
    return ap


def selected_suites(
    ap: argparse.ArgumentParser, args: argparse.Namespace, suites: Sequence[str]
) -> list[str]:
    """Apply ``--quick`` and return the suite keys ``--only`` names (all by default)."""
    if args.quick:
        set_quick(True)
    if getattr(args, "record", None):
        record.start(args.record, ap.prog.split(".")[-1], "quick" if quick() else "full")
    only = [s.strip() for s in args.only.split(",") if s.strip()] or list(suites)
    unknown = [s for s in only if s not in suites]
    if unknown:
        ap.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(suites)}")
    return only


class RunClock:
    """Load average and wall time around a whole benchmark run, for the report's header.

    ``with RunClock() as clock: ...`` then ``clock.lines(rounds)``.
    """

    def __enter__(self) -> Self:
        self.load0 = loadavg()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.t0

    def lines(self, rounds: int) -> list[str]:
        return [
            (
                f"* data under {tempfile.gettempdir()}; peers alternate within each round; "
                f"1 warm-up round + {rounds} counted rounds (n column: samples per row)"
            ),
            (
                f"* load average at start {self.load0}, at end {loadavg()}; total "
                f"{self.elapsed:.0f} s"
            ),
        ]


def run_suites(
    suites: dict[str, list[type]], only: Iterable[str], rounds: int, warmup: int = 1
) -> list[Stats]:
    """Every suite class of the selected keys, in order."""
    results: list[Stats] = []
    for key in only:
        for cls in suites.get(key, []):
            results.extend(run_suite(cls, rounds=rounds, warmup=warmup, log=eprint))
    return results


def report(title: str, env: Iterable[str], results: Sequence[Stats], notes: str) -> None:
    """Print the Markdown report: title, environment, table, notes and the targets met."""
    print(f"## {title} ({'quick' if quick() else 'full'} mode)\n")
    print(environment(env))
    if not results:
        return
    table, targets = markdown_table(results)
    print()
    print(table)
    print()
    print(notes)
    if targets:
        print(f"\nTargets met: {sum(ok for _, ok in targets)} / {len(targets)}")
    if record.recording():
        record.update(
            title=title,
            environment=list(environment(env).splitlines()),
            notes=notes,
            load=loadavg(),
        )
        by_op: dict[tuple[str, str], dict[str, Stats]] = {}
        for s in results:
            by_op.setdefault((s.suite, s.op), {})[s.peer] = s
        record.add_rows([stats_row(s, by_op[(s.suite, s.op)]) for s in results])


def record_table(title: str, markdown: str) -> None:
    """Keep an extra Markdown table a script prints in its recorded JSON (when recording)."""
    record.add_table(title, markdown)
