"""Crash injection for MmapZipStore: SIGKILL at every step of the commit protocol, SIGKILL
at random times, and truncation at every offset of the last commit.

After every crash the archive must recover, on a writable open, to a prefix of the entries
that were being written (whole batches or nothing), with bit-exact values, and then be
accepted by Python's ``zipfile`` and by ``unzip -t`` and take further appends. A read-only
open of the crashed file either shows such a prefix or raises ``CorruptArchiveError``, and
never modifies the file. See the crash windows and the recovery algorithm of the
``mmap-zip-store`` specification (section 9) and the protocol at the top of
``dafzarr/zipstore.py``.

The child processes (``tests/zipstore/_crash_child.py``) spend most of their time importing; the
module-scoped ``runner`` fixture starts all of this module's selected children up front on a
few worker threads, and each test then checks its own child's outcome in this process.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
import warnings
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dafzarr._core.zipstore.commit as commit_module
from dafzarr import CorruptArchiveError, MmapZipStore, RecoveryWarning
from tests.helpers.common import check_archive

from . import _crash_child as child
from ._crash_child import (
    BASES,
    COMMENT,
    COMMENTED,
    OPS,
    PENDING,
    RANDOM_BASE,
    SEQUENCE_BASE,
    SEQUENCES,
    apply_action,
    base_entries,
    payload,
    perform,
    random_groups,
)

CHILD = str(Path(__file__).with_name("_crash_child.py"))
SIGKILLED = -9
CHILD_TIMEOUT = 120
WORKERS = 3
FRESH_KEY = "fresh/after-crash"

Entries = list[tuple[str, int]]


# --- Cases ------------------------------------------------------------------------------------

# A single commit into an archive whose directory lies right after its entries: the
# directory is relocated past the end, the entry written, the new directory written past
# the end again (up); close() then moves it down right after the entry (settle).
SINGLE_STEPS = (
    "relocate:resized",
    "relocate:cd",
    "relocate:trailer",
    "entry:data",
    "entry:header",
    "commit:up-zeros",
    "commit:up-cd",
    "commit:up-trailer",
    "settle:cd",
    "settle:trailer",
    "settle:truncated",
)
SETTLE_STEPS = ("settle:cd", "settle:trailer", "settle:truncated")
# What a writable reopen must show after a kill at a step: "old" (only the entries that were
# there before), "new" (also all the operation's entries) or "either".
SINGLE_EXPECT = dict.fromkeys(SINGLE_STEPS, "old") | dict.fromkeys(
    ("commit:up-trailer", *SETTLE_STEPS), "new"
)


@dataclass(frozen=True)
class KillCase:
    """Run ``op`` in a child that SIGKILLs itself at the ``nth`` ``step`` (no step: the
    operation's own ending, an exit or a self-kill)."""

    op: str
    step: str | None
    nth: int
    expect: str

    def __str__(self) -> str:
        where = (
            "end" if self.step is None else self.step + ("" if self.nth == 1 else f"#{self.nth}")
        )
        return f"{self.op}@{where}"


def _kill_cases() -> list[KillCase]:
    cases = []
    for op in ("small", "big70k", "big2m", "zero", "first", "small-comment"):
        cases += [KillCase(op, s, 1, SINGLE_EXPECT[s]) for s in SINGLE_STEPS]
    # batch50 relocates the live CD 4 times and commits below it
    for step, nth in [
        ("relocate:resized", 1),
        ("relocate:cd", 1),
        ("relocate:trailer", 1),
        ("relocate:cd", 3),
        ("relocate:trailer", 4),
        ("entry:data", 1),
        ("entry:data", 25),
        ("entry:data", 50),
        ("entry:header", 1),
        ("entry:header", 50),
        ("commit:cd", 1),
        ("commit:trailer", 1),
        ("commit:truncated", 1),
        *((step, 1) for step in SETTLE_STEPS),
    ]:
        for op in ("batch50", "batch50-comment"):
            expect = "new" if step == "commit:truncated" or step in SETTLE_STEPS else "old"
            cases.append(KillCase(op, step, nth, expect))
    # batch50x fills the room left before the relocated CD: the new CD goes past EOF (up),
    # and the commit point is "commit:up-trailer"
    for step, nth, expect in [
        ("relocate:resized", 1, "old"),
        ("relocate:cd", 1, "old"),
        ("relocate:trailer", 1, "old"),
        ("entry:data", 50, "old"),
        ("entry:header", 50, "old"),
        ("commit:up-zeros", 1, "old"),
        ("commit:up-cd", 1, "old"),
        ("commit:up-trailer", 1, "new"),
        *((step, 1, "new") for step in SETTLE_STEPS),
    ]:
        cases.append(KillCase("batch50x", step, nth, expect))
        cases.append(KillCase("batch50x-comment", step, nth, expect))
    # a reservation killed during its commit is never patched: rolled back whatever the step
    # (at close, it is patched)
    cases += [
        KillCase("reserve", s, 1, "new" if s in SETTLE_STEPS else "old") for s in SINGLE_STEPS
    ]
    cases += [
        # local header CRC patched, directory CRC still 0: the directory is authoritative
        KillCase("reserve", "patch:header", 1, "either"),
        KillCase("reserve", "patch:cd", 1, "new"),
        KillCase("reserve-unpatched-exit", None, 1, "old"),
        KillCase("reserve-unpatched-kill", None, 1, "old"),
        KillCase("reserve-unpatched-append", None, 1, "old"),
    ]
    # killed while a writable open rolls back an unpatched reservation
    cases += [
        KillCase("recover-small", s, 1, "old")
        for s in (
            "commit:x-resized",
            "commit:x-cd",
            "commit:x-trailer",
            "commit:cd",
            "commit:trailer",
            "commit:truncated",
        )
    ]
    cases += [
        KillCase("recover-large", s, 1, "old")
        for s in ("commit:cd", "commit:trailer", "commit:truncated")
    ]
    return cases


KILL_CASES = _kill_cases()


# --- Single commits in a row: where each places the directory ---------------------------------

RELOCATE = ("relocate:resized", "relocate:cd", "relocate:trailer")
ENTRY = ("entry:data", "entry:header")
PLACED = {
    "up": ("commit:up-zeros", "commit:up-cd", "commit:up-trailer"),
    "down": ("commit:cd", "commit:trailer", "commit:truncated"),
}
COMMIT_POINTS = frozenset(("commit:up-trailer", "commit:truncated"))
# How each action of a sequence places its directory (a relocation first where marked).
SEQUENCE_PLACEMENTS: dict[str, tuple[str, ...]] = {
    "seq": ("relocate+up", "down", "up", "down", "up", "down", "up", "down"),
}


def sequence_trace(name: str) -> list[tuple[str, int]]:
    """The steps of a sequence, each with the number of actions committed once it is done
    (the steps of close() last)."""
    trace: list[tuple[str, int]] = []
    for k, (placement, (what, _, _)) in enumerate(
        zip(SEQUENCE_PLACEMENTS[name], SEQUENCES[name], strict=True)
    ):
        steps = (
            (RELOCATE if placement.startswith("relocate") else ())
            + (ENTRY if what == "put" else ())
            + PLACED[placement.rsplit("+", 1)[-1]]
        )
        committed = False
        for step in steps:
            committed = committed or step in COMMIT_POINTS
            trace.append((step, k + 1 if committed else k))
    trace += [(step, len(SEQUENCES[name])) for step in SETTLE_STEPS]
    return trace


def _sequence_cases(*, slow: bool) -> list[KillCase]:
    """A kill at every step of the sequences (the steps that place a directory; with
    ``slow``, the others too); ``expect`` is the number of actions committed."""
    cases = []
    for name in SEQUENCES:
        seen: dict[str, int] = {}
        for step, committed in sequence_trace(name):
            seen[step] = seen.get(step, 0) + 1
            placing = step.startswith(("commit:", "settle:"))
            if placing != slow:
                cases.append(KillCase(name, step, seen[step], str(committed)))
    return cases


SEQUENCE_CASES = _sequence_cases(slow=False)
SEQUENCE_CASES_SLOW = _sequence_cases(slow=True)


@dataclass(frozen=True)
class RandomCase:
    """Run the random-time child and SIGKILL it ``delay`` seconds after it is ready."""

    seed: int

    @property
    def delay(self) -> float:
        return random.Random(self.seed * 7919 + 1).uniform(0.02, 0.35)

    def __str__(self) -> str:
        return f"seed{self.seed}"


RANDOM_CASES = [RandomCase(seed) for seed in range(15)]
RANDOM_CASES_SLOW = [RandomCase(seed) for seed in range(100, 140)]


def _with_slow(fast: list[Any], slow: list[Any]) -> list[Any]:
    """The parameters of a test: the ``fast`` cases, then the ``slow`` ones marked ``slow``
    (the runner starts the children of whichever are selected)."""
    return [*fast, *(pytest.param(case, marks=pytest.mark.slow) for case in slow)]


# --- Running children -------------------------------------------------------------------------


@dataclass
class ChildRun:
    path: Path  # the archive the child worked on
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        steps = [ln[5:] for ln in self.stderr.splitlines() if ln.startswith("step ")]
        other = "\n".join(ln for ln in self.stderr.splitlines() if not ln.startswith("step "))
        return (
            f"returncode={self.returncode}\nstdout={self.stdout[-2000:]!r}\n"
            f"steps seen ({len(steps)}): {steps[:40]}{' ...' if len(steps) > 40 else ''}\n"
            f"stderr:\n{other[-4000:]}"
        )


def _run_kill_case(case: KillCase, workdir: Path, base: Path) -> ChildRun:
    workdir.mkdir(parents=True)
    path = workdir / "archive.zip"
    shutil.copyfile(base, path)
    cmd = [sys.executable, CHILD, "op", case.op, str(path)]
    if case.step is not None:
        cmd += ["--step", case.step, "--nth", str(case.nth)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    return ChildRun(path, proc.returncode, proc.stdout, proc.stderr)


def _run_random_case(case: RandomCase, workdir: Path, base: Path) -> ChildRun:
    workdir.mkdir(parents=True)
    path = workdir / "archive.zip"
    shutil.copyfile(base, path)
    # Unbuffered binary pipes: readline() then takes exactly the first line (a raw file reads
    # byte by byte up to the newline). A buffered reader could pull later lines into its
    # buffer, where communicate(), which reads the descriptors directly, would not see them.
    proc = subprocess.Popen(
        [sys.executable, CHILD, "random", str(path), str(case.seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if first == b"ready\n":
            time.sleep(case.delay)
        proc.kill()  # SIGKILL
        out, err = proc.communicate(timeout=CHILD_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return ChildRun(path, proc.returncode, (first + out).decode(), err.decode())


class Runner:
    """Runs the children of this module's selected tests ahead of the tests, on a pool."""

    def __init__(self, root: Path, bases: dict[str, Path]) -> None:
        self.root = root
        self.bases = bases
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="crash-child")
        self.futures: dict[object, Future[ChildRun]] = {}

    def submit(self, case: KillCase | RandomCase) -> None:
        if case in self.futures:
            return
        workdir = self.root / f"case{len(self.futures):03d}"
        if isinstance(case, KillCase):
            fut = self.pool.submit(_run_kill_case, case, workdir, self.bases[OPS[case.op].base])
        else:
            fut = self.pool.submit(_run_random_case, case, workdir, self.bases[RANDOM_BASE])
        self.futures[case] = fut

    def result(self, case: KillCase | RandomCase) -> ChildRun:
        self.submit(case)
        return self.futures[case].result()

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


# --- Base archives ----------------------------------------------------------------------------


def build_archive(path: Path, entries: Entries) -> None:
    store = MmapZipStore(path, "w")
    with store.batch():
        for key, size in entries:
            store[key] = payload(key, size)
    store.close()


def build_base(path: Path, name: str) -> None:
    build_archive(path, list(base_entries(name)))
    if name in COMMENTED:  # give the end record a comment: set its length, append it
        data = bytearray(path.read_bytes())
        assert data[-2:] == b"\0\0"
        data[-2:] = len(COMMENT).to_bytes(2, "little")
        path.write_bytes(bytes(data) + COMMENT)
    if name in PENDING:  # end with a filled reservation whose CRC was never patched
        key, size = PENDING[name]
        store = MmapZipStore(path, "r+")
        view = store.reserve_entry(key, size)
        view[:] = np.frombuffer(payload(key, size), np.uint8)
        del view
        store.close()


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    names = set(BASES) | set(PENDING) | set(COMMENTED)
    out = {}
    for name in sorted(names):
        out[name] = root / f"{name}.zip"
        build_base(out[name], name)
    return out


@pytest.fixture(scope="module")
def runner(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    bases: dict[str, Path],
) -> Iterator[Runner]:
    """Starts the children of all selected tests of this module now, in collection order."""
    r = Runner(tmp_path_factory.mktemp("children"), bases)
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or getattr(item, "module", None) is not request.module:
            continue
        for value in callspec.params.values():
            if isinstance(value, KillCase | RandomCase):
                r.submit(value)
    yield r
    r.shutdown()


# --- Checks -----------------------------------------------------------------------------------


def unzip_test(path: Path, n_entries: int) -> None:
    """``unzip -tq`` accepts the archive (for an empty one it exits 1, "zipfile is empty")."""
    unzip = shutil.which("unzip")
    if unzip is None:
        pytest.skip("unzip is not installed")
    proc = subprocess.run([unzip, "-tq", str(path)], check=False, capture_output=True, text=True)
    if n_entries == 0 and proc.returncode == 1 and "zipfile is empty" in proc.stdout:
        return
    assert proc.returncode == 0, f"unzip -tq {path}: {proc.returncode}\n{proc.stdout}{proc.stderr}"


def zipfile_test(path: Path, keys: list[str]) -> None:
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert [i.filename for i in z.infolist()] == keys


def check_prefix(keys: list[str], intended: Entries, allowed: set[int], what: str) -> None:
    names = [k for k, _ in intended]
    assert keys == names[: len(keys)], (
        f"{what}: keys are not a prefix of the intended sequence:\n"
        f"got      {keys[-5:]} ({len(keys)} keys)\nintended {names[max(len(keys) - 5, 0) : len(keys) + 2]}"
    )
    assert len(keys) in allowed, (
        f"{what}: {len(keys)} entries survive, expected one of {sorted(allowed)} "
        f"(last key: {keys[-1] if keys else None!r})"
    )


def check_values(
    store: MmapZipStore, keys: list[str], intended: Entries, unsettled: frozenset[str], what: str
) -> None:
    sizes = dict(intended)
    for key in keys:
        got = bytes(store[key])
        want = payload(key, sizes[key])
        if got != want:
            if key in unsettled and got == bytes(len(want)):
                continue  # a reservation not filled yet reads as zeros
            raise AssertionError(
                f"{what}: value of {key!r} differs ({len(got)} vs {len(want)} bytes)"
            )


def check_read_only(
    path: Path, intended: Entries, allowed: set[int], unsettled: frozenset[str]
) -> bool:
    """Read-only open of the crashed file: a valid prefix or CorruptArchiveError, and the
    file is left byte-identical. Returns whether it opened."""
    before = path.read_bytes()
    error: CorruptArchiveError | None = None
    try:
        store = MmapZipStore(path, "r")
        try:
            keys = store.keys()
            check_prefix(keys, intended, allowed, "read-only open before recovery")
            check_values(store, keys, intended, unsettled, "read-only open before recovery")
        finally:
            store.close()
    except CorruptArchiveError as e:
        error = e
    if error is not None:
        assert str(path) in str(error), f"the error does not name the file: {error}"
    assert path.read_bytes() == before, "a read-only open modified the file"
    return error is None


def check_recovery(
    path: Path,
    intended: Entries,
    allowed: set[int],
    ro_allowed: set[int] | None = None,
    unsettled: frozenset[str] = frozenset(),
) -> list[str]:
    """The whole after-crash check; returns the keys that survived."""
    check_read_only(path, intended, allowed if ro_allowed is None else ro_allowed, unsettled)
    before = path.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MmapZipStore(path, "r+")
        try:
            keys = store.keys()
            check_prefix(keys, intended, allowed, "writable reopen")
            check_values(store, keys, intended, frozenset(), "writable reopen")
            assert store.verify() == []
        finally:
            store.close()
    others = [w for w in caught if not issubclass(w.category, RecoveryWarning)]
    assert not others, [str(w.message) for w in others]
    if path.read_bytes() != before:
        assert caught, "the writable open changed the file without a RecoveryWarning"
    zipfile_test(path, keys)
    unzip_test(path, len(keys))
    # A fresh writable handle appends (no further recovery, so no warning), reads back.
    store = MmapZipStore(path, "r+")
    store[FRESH_KEY] = payload(FRESH_KEY, 1234)
    store.close()
    store = MmapZipStore(path, "r")
    try:
        assert store.keys() == [*keys, FRESH_KEY]
        assert bytes(store[FRESH_KEY]) == payload(FRESH_KEY, 1234)
        if keys:
            last = keys[-1]
            assert bytes(store[last]) == payload(last, dict(intended)[last])
    finally:
        store.close()
    zipfile_test(path, [*keys, FRESH_KEY])
    return keys


# --- 1. SIGKILL at every step -----------------------------------------------------------------


@pytest.mark.parametrize("case", KILL_CASES, ids=str)
def test_sigkill_at_step(case: KillCase, runner: Runner) -> None:
    op = OPS[case.op]
    run = runner.result(case)
    if case.step is not None or op.kind == "reserve-kill":
        assert run.returncode == SIGKILLED, f"the child was not killed:\n{run.describe()}"
        if case.step is not None:
            assert f"kill {case.step} #{case.nth}\n" in run.stdout, run.describe()
        else:
            assert run.stdout == "filled\n", run.describe()
        assert "done" not in run.stdout.split(), run.describe()
    else:
        assert run.returncode == 0, run.describe()
        assert run.stdout.endswith("done\n"), run.describe()

    old = list(base_entries(op.base))
    intended = old + list(op.entries)
    n_old, n_all = len(old), len(intended)
    allowed = {"old": {n_old}, "new": {n_all}, "either": {n_old, n_all}}[case.expect]
    unsettled = frozenset(
        k for k, _ in op.entries if op.kind.startswith("reserve") or op.kind == "open"
    )
    keys = check_recovery(run.path, intended, allowed, {n_old, n_all}, unsettled)
    assert len(keys) in allowed
    if op.base in COMMENTED:  # the comment survived the crash, the recovery and an append
        with zipfile.ZipFile(run.path) as z:
            assert z.comment == COMMENT
    shutil.rmtree(run.path.parent)


def _record_steps(path: Path, op_name: str) -> list[str]:
    steps: list[str] = []
    previous = commit_module.step_hook
    commit_module.step_hook = steps.append
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecoveryWarning)
            store = MmapZipStore(path, "r+")
            perform(store, OPS[op_name])
            store.close()
    finally:
        commit_module.step_hook = previous
    return steps


@pytest.mark.parametrize("op_name", sorted({c.op for c in KILL_CASES if c.step is not None}))
def test_kill_cases_cover_every_step(op_name: str, tmp_path: Path, bases: dict[str, Path]) -> None:
    """Every step an operation passes through has a kill case, and every kill case's step
    occurs (in-process run with a recording hook)."""
    path = tmp_path / "a.zip"
    shutil.copyfile(bases[OPS[op_name].base], path)
    steps = _record_steps(path, op_name)
    cases = [c for c in KILL_CASES if c.op == op_name and c.step is not None]
    covered = {c.step for c in cases}
    missing = sorted(set(steps) - covered)
    assert not missing, f"{op_name} passes through {missing} but no kill case targets them"
    for c in cases:
        assert c.step is not None
        assert steps.count(c.step) >= c.nth, f"{c}: step occurs {steps.count(c.step)} times"


# --- 1b. SIGKILL at every step of single commits in a row -------------------------------------


def sequence_state(name: str, committed: int) -> dict[str, bytes]:
    """The archive's keys and values (in its order) after the first ``committed`` actions."""
    state = {k: payload(k, size) for k, size in base_entries(SEQUENCE_BASE)}
    for action in SEQUENCES[name][:committed]:
        state = apply_action(state, action)
    return state


def check_sequence_state(path: Path, want: dict[str, bytes], what: str) -> None:
    with MmapZipStore(path, "r") as store:
        assert store.keys() == list(want), f"{what}: keys differ"
        for key, value in want.items():
            assert bytes(store[key]) == value, f"{what}: value of {key!r} differs"


def _check_sequence_kill(case: KillCase, run: ChildRun) -> None:
    assert run.returncode == SIGKILLED, f"the child was not killed:\n{run.describe()}"
    assert f"kill {case.step} #{case.nth}\n" in run.stdout, run.describe()
    want = sequence_state(case.op, int(case.expect))
    path = run.path
    # read-only, before any recovery: the committed state or a refusal, the file untouched
    before = path.read_bytes()
    error = ""
    try:
        check_sequence_state(path, want, "read-only open before recovery")
    except CorruptArchiveError as e:
        error = str(e)
    assert not error or str(path) in error, error
    assert path.read_bytes() == before, "a read-only open modified the file"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MmapZipStore(path, "r+")
        try:
            assert store.keys() == list(want), "writable reopen: keys differ"
            assert {k: bytes(store[k]) for k in store} == want
            assert store.verify() == []
            space = store.space()
            assert space.file_size == path.stat().st_size
        finally:
            store.close()
    others = [w for w in caught if not issubclass(w.category, RecoveryWarning)]
    assert not others, [str(w.message) for w in others]
    if path.read_bytes() != before:
        assert caught, "the writable open changed the file without a RecoveryWarning"
    check_archive(path, want)
    # appends after the recovery go on from the committed state
    store = MmapZipStore(path, "r+")
    store[FRESH_KEY] = payload(FRESH_KEY, 1234)
    store.close()
    check_archive(path, {**want, FRESH_KEY: payload(FRESH_KEY, 1234)})


@pytest.mark.parametrize("case", _with_slow(SEQUENCE_CASES, SEQUENCE_CASES_SLOW), ids=str)
def test_sigkill_in_single_commits_in_a_row(case: KillCase, runner: Runner) -> None:
    """A kill at every step that places a directory, up past the end or down into the free
    room, of new keys, rewrites and deletes, and of close() (the other steps: ``slow``): a
    reopen shows exactly the state of the last commit that passed its commit point."""
    run = runner.result(case)
    _check_sequence_kill(case, run)
    shutil.rmtree(run.path.parent)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_sequence_places_as_planned(name: str, tmp_path: Path, bases: dict[str, Path]) -> None:
    """The in-process run of a sequence passes exactly the steps its kill cases expect:
    one directory write per commit after the first, each of new keys, rewrites and deletes
    meeting both placements."""
    path = tmp_path / "a.zip"
    shutil.copyfile(bases[SEQUENCE_BASE], path)
    steps: list[str] = []
    marks: list[int] = []
    previous = commit_module.step_hook
    commit_module.step_hook = steps.append
    child.action_done = lambda: marks.append(len(steps))
    try:
        store = MmapZipStore(path, "r+")
        perform(store, OPS[name])
        store.close()
    finally:
        commit_module.step_hook = previous
        child.action_done = None
    assert steps == [step for step, _ in sequence_trace(name)]
    kinds: dict[str, set[str]] = {}
    placements = SEQUENCE_PLACEMENTS[name]
    for (what, key, _), placement in zip(SEQUENCES[name], placements, strict=True):
        kind = "delete" if what == "del" else "rewrite" if key.startswith("base/") else "new"
        kinds.setdefault(kind, set()).add(placement.rsplit("+", 1)[-1])
    assert kinds == {kind: {"up", "down"} for kind in ("new", "rewrite", "delete")}
    # after the first commit, each writes the directory once
    directory_writes = [s for s in steps if s.endswith("cd")]
    assert len(directory_writes) == len(placements) + 2  # and the relocation, and close()
    check_archive(path, sequence_state(name, len(placements)))


# --- 2. SIGKILL at a random time --------------------------------------------------------------


def check_random_run(run: ChildRun) -> list[str]:
    assert run.returncode == SIGKILLED, run.describe()
    lines = run.stdout.split("\n")
    assert lines[0] == "ready", run.describe()
    assert "done" not in lines, "the child finished before the kill"
    return [ln for ln in lines[1:-1] if ln]  # the last element is an unfinished line


def _check_random(case: RandomCase, run: ChildRun) -> None:
    reported = check_random_run(run)
    groups = random_groups(case.seed)
    old = list(base_entries(RANDOM_BASE))
    flat = [k for g in groups for k, _ in g]
    assert reported == flat[: len(reported)], "the child reported keys out of order"
    # at most the group in flight (started after the last report) may also have committed
    done_groups, count = 0, 0
    while count < len(reported):
        count += len(groups[done_groups])
        done_groups += 1
    assert count == len(reported), "the child reported part of a batch"
    intended = old + [e for g in groups[: done_groups + 1] for e in g]
    allowed = {len(old) + len(reported), len(intended)}
    keys = check_recovery(run.path, intended, allowed)
    assert set(reported) <= set(keys)


@pytest.mark.parametrize("case", _with_slow(RANDOM_CASES, RANDOM_CASES_SLOW), ids=str)
def test_sigkill_at_random_time(case: RandomCase, runner: Runner) -> None:
    run = runner.result(case)
    _check_random(case, run)
    shutil.rmtree(run.path.parent)


# --- 3. Truncation at every offset of the last commit -----------------------------------------


def _write_new(path: Path, data: bytes) -> None:
    # a new file each time: truncating a file in place with O_TRUNC is slow on some file systems
    path.unlink(missing_ok=True)
    path.write_bytes(data)


def _try_recover(path: Path, intended: list[tuple[str, bytes]], run_unzip: bool) -> int | str:
    """Writable open of a truncated copy: the number of entries recovered, or what went
    wrong (an exception, a non-prefix, a wrong value, a reader rejecting the result)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store = MmapZipStore(path, "r+")
            try:
                keys = store.keys()
                if keys != [k for k, _ in intended[: len(keys)]]:
                    return f"not a prefix: {keys[-3:]}"
                for key, value in intended[: len(keys)]:
                    if bytes(store[key]) != value:
                        return f"value of {key!r} differs"
            finally:
                store.close()
        others = [w for w in caught if not issubclass(w.category, RecoveryWarning)]
        if others:
            return f"warning: {others[0].message}"
        with zipfile.ZipFile(path) as z:
            if z.testzip() is not None or z.namelist() != keys:
                return "zipfile rejects the recovered archive"
        if run_unzip:
            unzip_test(path, len(keys))
        return len(keys)
    except CorruptArchiveError:
        return "CorruptArchiveError"
    except Exception as e:  # noqa: BLE001 - recorded, reported below
        return f"{type(e).__name__}: {str(e)[:200]}"


def _regions(outcomes: list[tuple[int, int | str]]) -> list[tuple[int, int, int | str]]:
    """Runs of consecutive lengths with the same outcome: (first t, last t, outcome)."""
    out: list[tuple[int, int, int | str]] = []
    for t, o in outcomes:
        if out and out[-1][2] == o:
            out[-1] = (out[-1][0], t, o)
        else:
            out.append((t, t, o))
    return out


TRUNCATION_CASES = [
    # name, size of the appended entry, stride between tested lengths away from the
    # boundaries (every byte from S0 - 100 to S1 when the stride is 1 there)
    pytest.param("small", 10, 7, id="small-overlap"),
    pytest.param("large", 300 * 1024, 4093, id="300KiB"),
    pytest.param("huge", 2 * 1024 * 1024 + 5, 32771, id="2MiB"),
]


@pytest.mark.parametrize(("name", "size", "stride"), TRUNCATION_CASES)
def test_truncation_in_last_commit(tmp_path: Path, name: str, size: int, stride: int) -> None:
    """Cut the archive after its last append at every length t from inside the previous
    entry's data to the end (S0 = size before the append, S1 = after): a writable open must
    recover a prefix, with at least the k entries before the append once their data is
    whole, and the result must pass zipfile and unzip."""
    old = list(BASES["few"])
    k = len(old)
    key = f"last/{name}"
    intended = [(kk, payload(kk, sz)) for kk, sz in [*old, (key, size)]]
    path = tmp_path / "full.zip"
    build_archive(path, old)
    s0 = path.stat().st_size
    store = MmapZipStore(path, "r+")
    last_old = store.info()[-1]
    store[key] = payload(key, size)
    new = store.info()[-1]
    store.close()
    full = path.read_bytes()
    s1 = len(full)
    end_k = last_old["data_offset"] + last_old["size"]  # end of entry k's data
    end_new = new["data_offset"] + size
    assert new["header_offset"] == end_k
    lo = end_k - 64
    assert last_old["data_offset"] <= lo, "the last old entry must be longer than 64 bytes"

    ts = set(range(lo, s1 + 1, stride))
    edges = [end_k, new["data_offset"], end_new, s1 - 98, s1]
    if size < 1024:
        ts.update(range(s0 - 100, s1 + 1))
        edges += [s0 - 100, s0]
    for b in edges:
        ts.update(t for t in range(b - 16, b + 17) if lo <= t <= s1)

    copy = tmp_path / "cut.zip"
    outcomes: list[tuple[int, int | str]] = []
    previous: int | str | None = None
    for i, t in enumerate(sorted(ts)):
        _write_new(copy, full[:t])
        outcome = _try_recover(copy, intended, run_unzip=False)
        if isinstance(outcome, int) and (outcome != previous or i % 25 == 0 or t == s1):
            _write_new(copy, full[:t])  # unzip on the first length of each region and more
            outcome = _try_recover(copy, intended, run_unzip=True)
        outcomes.append((t, outcome))
        previous = outcome

    marks = {
        end_k - 64: "end_k-64",
        end_k: "end_k (end of entry k's data)",
        new["data_offset"]: "new data start",
        end_new: "end_new (end of new data)",
        s0 - 100: "S0-100",
        s0: "S0",
        s1 - 98: "S1-98",
        s1: "S1",
    }
    report = "\n".join(
        f"  t={a}..{b}: {o}" + "".join(f" [{m}: {v}]" for v, m in marks.items() if a <= v <= b)
        for a, b, o in _regions(outcomes)
    )
    print(f"\ntruncation {name}: k={k}, {len(outcomes)} lengths\n{report}")
    bad = [(t, o) for t, o in outcomes if not isinstance(o, int)]
    assert not bad, f"{len(bad)} of {len(outcomes)} truncations do not recover:\n{report}"
    for t, o in outcomes:
        assert isinstance(o, int)
        need = k if t >= end_k else k - 1
        assert o >= need, f"t={t}: only {o} entries recovered, expected >= {need}\n{report}"
    assert dict(outcomes)[s1] == k + 1
