"""I/O-error injection: every failing system call of every mutating operation.

Each operation of ``_io_error_child.OPS`` (MmapZipStore append, rewrite, delete, batch,
a delete whose commit renews the archive, compaction, and ``MmapZipStore.pack`` over an
existing archive; ZarrDaf set, overwrite, delete and fill on a directory and on a ZIP, and
mode ``"w"`` over a data set or where there is none; ``convert_daf`` into a new directory,
a new ZIP and a new group of an existing multi-data-set ZIP; ArrayFile flush and
compaction; the reference writer) runs in a child forked by a server that imported dafzarr once; ``strace -p`` is attached
to the child before it starts, so its counts and injections see the operation's own
system calls only. A first run without injection counts
the calls (and gives the after-state); then, for each call, each errno it returns in
practice and each position ``n`` up to that count, ``-e inject=CALL:error=ERRNO:when=n``.

After each run: the child must have exited (no crash, no hang) with either no error (and
then the after-state, exactly) or a :class:`~dafzarr.errors.DafzarrError` (an ``OSError``
with the injected errno, naming the file; ``MemoryError`` is accepted for ``ENOMEM``); the
files reopened without injection (read-only, then writable) must hold the before-state or
the after-state exactly; no file may be left beside them that neither state has; the
handle, used again, works or raises a ``DafzarrError``. ``EINTR`` must be retried (no error).

The default run takes a sample of positions and errnos (a few hundred runs); the exhaustive
product is marked ``slow``. ``mmap`` and ``mremap`` fail with ``ENOMEM`` as the others do
(the writers make no ``mremap`` call today: a mapping grows inside its reservation). The
same checks then run each writer that maps or allocates under a real address-space limit
(``RLIMIT_AS``), set before the open or once the handle is open.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from ._io_error_child import OPS, Op

CHILD = str(Path(__file__).with_name("_io_error_child.py"))
TIMEOUT = 60

# The calls a writer makes that can fail, and the errnos each returns in practice (the
# first is the one the default run injects at every sampled position).
CALLS: dict[str, tuple[str, ...]] = {
    "openat": ("ENOSPC", "EDQUOT", "EACCES", "EROFS", "ENOMEM", "EINTR"),
    "write": ("ENOSPC", "EDQUOT", "EIO", "EINTR"),
    "pwrite64": ("ENOSPC", "EDQUOT", "EIO", "EINTR"),
    "pwritev": ("ENOSPC", "EDQUOT", "EIO", "EINTR"),
    "ftruncate": ("EIO", "EROFS", "EINTR"),
    "fallocate": ("ENOSPC", "EDQUOT", "EIO", "EINTR"),
    "fsync": ("EIO", "ENOSPC", "EDQUOT", "EINTR"),
    "fdatasync": ("EIO", "ENOSPC", "EINTR"),
    "msync": ("EIO", "ENOMEM"),
    "rename": ("EIO", "ENOSPC", "EDQUOT", "EROFS"),
    "renameat": ("EIO", "ENOSPC", "EDQUOT", "EROFS"),
    "renameat2": ("EIO", "ENOSPC", "EDQUOT", "EROFS"),
    "linkat": ("ENOSPC", "EDQUOT", "EIO"),
    "unlink": ("EIO", "EROFS"),
    "unlinkat": ("EIO", "EROFS"),
    "mmap": ("ENOMEM",),
    "mremap": ("ENOMEM",),
    "flock": ("ENOLCK", "EAGAIN", "EINTR"),
    "close": ("EIO",),  # (EINTR from close cannot be retried: the descriptor is gone)
}

# Calls the removal of a temporary makes: when one of them fails, the temporary stays, and
# must be one that the next writer removes (see dafzarr._core.atomic.remove_stale_temporaries).
CLEANUP_CALLS = frozenset({"unlink", "unlinkat", "openat", "close"})
# (at the top, or anywhere inside a directory data set: a property a delete set aside)
_SWEEPABLE = re.compile(
    r"([^/]+\.daf\.zarr/(.+/)?)?\.[^/]+\.\d+-[0-9a-f]+\.dafzarr-tmp(\.[^/]*)?(/.*)?"
)


def _sweepable(name: str) -> bool:
    """Whether a file left behind is a temporary that a later writer removes."""
    return _SWEEPABLE.fullmatch(name) is not None


# Sampled positions per call in the default run (first, last and one between).
SAMPLED_POSITIONS = 3


# --- The fork server -----------------------------------------------------------------------


class Server:
    """The child server (see ``_io_error_child``): one request at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, CHILD, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1,
        )  # fmt: skip

    def run(
        self,
        op: str,
        path: Path,
        strace: list[str],
        trace: Path,
        headroom: int | None = None,
        after_open: bool = False,
    ) -> dict[str, Any]:
        """Run ``op`` on ``path`` in a fresh child traced with the ``strace`` options (under
        an address-space limit leaving ``headroom`` bytes, when given, from the start or
        once the handle is open)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"op": op, "path": str(path), "headroom": headroom, "after_open": after_open}
        self.proc.stdin.write(json.dumps(request) + "\n")
        pid = int(self.proc.stdout.readline())
        tracer = subprocess.Popen(
            ["strace", "-f", "-o", str(trace), *strace, "-p", str(pid)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert tracer.stderr is not None
        attached = tracer.stderr.readline()
        assert "attached" in attached, attached
        self.proc.stdin.write("go\n")
        line = _read_line(self.proc.stdout, pid)
        tracer.communicate(timeout=TIMEOUT)
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=TIMEOUT)
        self.proc.stdout.close()


def _read_line(stream: IO[str], pid: int) -> str:
    """The server's answer, or a hang report after :data:`TIMEOUT` (the child is killed)."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        ready = sel.select(TIMEOUT)
    if not ready:
        os.kill(pid, 9)  # the child this request forked: hung
        return stream.readline().replace('"report"', '"hung": true, "report"', 1)
    return stream.readline()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    s = Server()
    yield s
    s.close()


# --- States --------------------------------------------------------------------------------


@dataclass
class Reference:
    """What one operation does without injection: its calls and both states."""

    base: Path  # a directory holding the operation's file in its before-state
    counts: dict[str, int]  # per call, the most any thread of the child made
    before: Any
    after: Any
    names: set[str]  # every name the directory holds in either state


def _names(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def _fresh(base: Path, where: Path) -> Path:
    shutil.copytree(base, where)
    return where


def _counts(trace: Path) -> dict[str, int]:
    """Per system call, the most calls any one thread made (strace counts per thread)."""
    per: dict[tuple[str, str], int] = {}
    for line in trace.read_text().splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2 or "(" not in parts[1] or parts[1].startswith(("+++", "---", "<")):
            continue
        call = parts[1].split("(", 1)[0]
        per[(parts[0], call)] = per.get((parts[0], call), 0) + 1
    out: dict[str, int] = {}
    for (_, call), n in per.items():
        out[call] = max(out.get(call, 0), n)
    return out


_REFERENCES: dict[str, Reference] = {}


def reference(server: Server, op: Op, root: Path) -> Reference:
    """Run ``op`` once, traced without injection (cached per operation)."""
    if op.name in _REFERENCES:
        return _REFERENCES[op.name]
    base = root / f"{op.name}.base"
    base.mkdir(parents=True)
    op.base(str(base / op.file_name))
    before = op.snapshot(str(_fresh(base, root / f"{op.name}.b") / op.file_name))
    done = _fresh(base, root / f"{op.name}.ref")
    trace = root / f"{op.name}.trace"
    result = server.run(op.name, done / op.file_name, ["-e", f"trace={','.join(CALLS)}"], trace)
    assert result["exit"] == 0 and result["report"] == {"error": None, "reuse": "none"}, result
    names = _names(done)
    after = op.snapshot(str(done / op.file_name))
    assert after != before or "compact" in op.name, f"{op.name} changes nothing"
    ref = Reference(base, _counts(trace), before, after, names | _names(base))
    _REFERENCES[op.name] = ref
    return ref


# --- One injection -------------------------------------------------------------------------


def _problems(
    op: Op, ref: Reference, call: str, err: str, result: dict[str, Any], path: Path, injected: bool
) -> list[str]:
    """What is wrong with the outcome of one injection (empty: nothing)."""
    import errno as errno_module

    if result.get("hung"):
        return ["hung"]
    if result["exit"] != 0 or result["report"] is None:
        return [f"the child died (exit {result['exit']})"]
    problems: list[str] = []
    error = result["report"]["error"]
    if error is not None:
        mro = error["mro"]
        nomem = err == "ENOMEM" and "builtins.MemoryError" in mro
        if "dafzarr.errors.DafzarrError" not in mro and not nomem:
            problems.append(f"not a DafzarrError: {error['type']}: {error['message']}")
        elif "builtins.OSError" in mro and error["errno"] not in (getattr(errno_module, err), None):
            # (None: a library that drops the errno, Arrow's "error closing file")
            problems.append(f"errno {error['errno']} instead of {err}: {error['message']}")
        if not nomem and str(path) not in error["message"]:
            problems.append(f"the message does not name {path}: {error['message']}")
        if err == "EINTR" and injected:
            problems.append(f"EINTR was not retried: {error['message']}")
        reuse = result["report"]["reuse"]
        closed = (
            reuse.startswith("builtins.ValueError") and "closed" in reuse and str(path) in reuse
        )
        if reuse not in ("ok", "none") and not reuse.startswith("dafzarr.") and not closed:
            problems.append(f"the handle, used again, raised {reuse}")
    try:
        state = op.snapshot(str(path))
    except Exception as exc:  # noqa: BLE001 (any failure to reopen is a finding)
        return [*problems, f"reopening failed: {type(exc).__name__}: {exc}"]
    wanted = (ref.after,) if error is None else (ref.before, ref.after)
    if state not in wanted:
        problems.append(
            "a success left a state other than the operation's"
            if error is None
            else "the state is neither the one before nor the one after"
        )
    extra = _names(path.parent) - ref.names
    if extra and not (call in CLEANUP_CALLS and all(_sweepable(n) for n in extra)):
        problems.append(f"left behind: {sorted(extra)}")
    return problems


def inject(
    server: Server, op: Op, ref: Reference, call: str, err: str, n: int, root: Path
) -> list[str]:
    """Run ``op`` with the ``n``-th ``call`` failing with ``err``; its problems, labelled."""
    where = _fresh(ref.base, root / f"{op.name}.{call}.{err}.{n}")
    trace = where.with_suffix(".trace")
    options = ["-e", f"trace={call}", "-e", f"inject={call}:error={err}:when={n}"]
    result = server.run(op.name, where / op.file_name, options, trace)
    injected = "INJECTED" in trace.read_text()
    problems = _problems(op, ref, call, err, result, where / op.file_name, injected)
    if not problems:
        shutil.rmtree(where)
        trace.unlink()
    return [f"{op.name} {call}:{err}@{n}: {p}" for p in problems]


def combinations(ref: Reference, exhaustive: bool, op: str) -> list[tuple[str, str, int]]:
    """The (call, errno, position) triples to inject for one operation."""
    out: list[tuple[str, str, int]] = []
    for call, errs in CALLS.items():
        count = ref.counts.get(call, 0)
        if not count:
            continue
        if exhaustive:
            out += [(call, e, n) for e in errs for n in range(1, count + 1)]
            continue
        mid = 1 + zlib.crc32(f"{op}:{call}".encode()) % count
        positions = sorted({1, mid, count})[:SAMPLED_POSITIONS]
        out += [(call, errs[0], n) for n in positions]
        out += [(call, e, mid) for e in errs[1:] if e == "EINTR"]
    return out


def _run_op(server: Server, name: str, root: Path, exhaustive: bool) -> None:
    op = OPS[name]
    ref = reference(server, op, root)
    problems: list[str] = []
    combos = combinations(ref, exhaustive, name)
    for call, err, n in combos:
        problems += inject(server, op, ref, call, err, n, root)
    print(f"{name}: {len(combos)} combinations exercised, calls {ref.counts}")
    known = {p for p in problems if exhaustive and p.startswith(KNOWN.get(name, ("\0",))[0])}
    if exhaustive and name in KNOWN:
        # a known defect (see KNOWN) must still show, or it was fixed: drop it from KNOWN
        assert known, f"{name}: {KNOWN[name]} no longer happens"
    assert not set(problems) - known, "\n".join(sorted(set(problems) - known))


#: Defects the exhaustive run still finds, each checked to still show until it is fixed:
#: ``op -> (the start of its problem line, why)``.
KNOWN: dict[str, tuple[str, str]] = {}


def _ops_marked() -> list[str]:
    return sorted(OPS)


@pytest.mark.parametrize("name", _ops_marked())
def test_injected_errors_sampled(server: Server, name: str, tmp_path: Path) -> None:
    _run_op(server, name, tmp_path, exhaustive=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", _ops_marked())
def test_injected_errors_exhaustive(server: Server, name: str, tmp_path: Path) -> None:
    _run_op(server, name, tmp_path, exhaustive=True)


def test_no_lock_file_system_names_the_way_out(tmp_path: Path) -> None:
    """``flock`` failing with ENOLCK (NFS without lockd): a writable open raises a
    StorageLockError naming the file and ``lock=False``, which then opens and writes."""
    path = tmp_path / "s.zip"
    OPS["zip-append"].base(str(path))
    script = (
        "import sys\n"
        "from dafzarr import MmapZipStore, open_daf\n"
        "from dafzarr.errors import StorageLockError\n"
        "for open_ in (lambda: MmapZipStore(sys.argv[1], 'r+'),\n"
        "              lambda: open_daf(sys.argv[2], 'w+')):\n"
        "    try:\n"
        "        open_()\n"
        "    except StorageLockError as e:\n"
        "        print(e.errno, isinstance(e, OSError), e)\n"
        "s = MmapZipStore(sys.argv[1], 'r+', lock=False)\n"
        "s['new'] = b'unlocked'\n"
        "s.close()\n"
        "d = open_daf(sys.argv[2], 'w+', lock=False)\n"
        "d.add_axis('cell', ['a', 'b'])\n"
        "d.close()\n"
    )
    daf = tmp_path / "d.daf.zarr.zip"
    res = subprocess.run(
        ["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=flock",
         "-e", "inject=flock:error=ENOLCK", sys.executable, "-c", script, str(path), str(daf)],
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 2, res.stdout
    for line, name in zip(lines, (path, daf), strict=True):
        assert line.startswith("37 True "), line  # ENOLCK, an OSError
        assert str(name) in line and "lock=False" in line and "flock" in line
    from dafzarr import MmapZipStore, open_daf

    with MmapZipStore(path) as s:
        assert bytes(s["new"]) == b"unlocked"
    with open_daf(daf) as d:
        assert d.axes_set() == {"cell"}


def test_no_lock_file_system_array_file(tmp_path: Path) -> None:
    """``flock`` failing with ENOLCK everywhere: ArrayFile writers need no lock (a sidecar
    gets its name with a create-only link; the lock of a temporary only keeps a sweep off
    it), so creation, flushes, statistics and compaction work, with the temporaries
    unlocked; the sweep, which can lock nothing there, removes no temporary (not even a
    stale one, which could be a live writer's)."""
    path = tmp_path / "f.af"
    stale = tmp_path / ".f.af.1-0badcafe.dafzarr-tmp.7.af"
    script = (
        "import os, sys\n"
        "import numpy as np\n"
        "from dafzarr import ArrayFile\n"
        "p, stale = sys.argv[1], sys.argv[2]\n"
        "with ArrayFile.create(p) as f:\n"
        "    f.define_array('x', 'u4', ['i'], [64])\n"
        "    f.write_array('x', [0], np.arange(64, dtype=np.uint32))\n"
        "    f.flush()\n"
        "open(stale, 'wb').close()\n"
        "os.utime(stale, (1, 1))\n"
        "with ArrayFile.open(p) as f:\n"
        "    f.write_array('x', [0], np.arange(8, dtype=np.uint32) + 1000)\n"
        "    f.flush()\n"
        "    f.compact()\n"
        "    f.define_array('y', 'f8', ['i'], [4])\n"
        "    f.write_array('y', [0], np.ones(4))\n"
    )
    trace = tmp_path / "flock.trace"
    res = subprocess.run(
        ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=flock",
         "-e", "inject=flock:error=ENOLCK", sys.executable, "-c", script, str(path),
         str(stale)],
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "LOCK_EX" in trace.read_text()  # the writers did try to lock
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [stale.name, "f.1.af", "f.af", "f.stats", trace.name]
    )
    from dafzarr import ArrayFile

    with ArrayFile.open(path) as f:  # (where locks work, the sweep removes the stale one)
        assert f.read_array("x").tolist() == [*range(1000, 1008), *range(8, 64)]
        assert f.read_array("y").tolist() == [1.0] * 4
    assert not stale.exists()


def test_no_lock_file_system_forced_replacement(tmp_path: Path) -> None:
    """``flock`` failing with ENOLCK: a compaction forced over an existing archive replaces
    it (no writer there can hold the lock it would check), where the check's bare
    ``OSError`` used to stop it after the whole copy was made."""
    script = (
        "from dafzarr import MmapZipStore\n"
        "with MmapZipStore('a.zip', 'w', lock=False) as s:\n"
        "    s['k'] = b'x' * 100\n"
        "    s['k'] = b'y' * 100\n"
        "with MmapZipStore('b.zip', 'w', lock=False) as s:\n"
        "    s['old'] = b'old'\n"
        "MmapZipStore.compact('a.zip', 'b.zip', force=True)\n"
    )
    trace = tmp_path / "flock.trace"
    res = subprocess.run(
        ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=flock",
         "-e", "inject=flock:error=ENOLCK", sys.executable, "-c", script],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "LOCK_EX" in trace.read_text()
    from dafzarr import MmapZipStore

    with MmapZipStore(tmp_path / "b.zip") as s:
        assert sorted(s) == ["k"] and bytes(s["k"]) == b"y" * 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip", "b.zip", trace.name]


# --- Address-space exhaustion --------------------------------------------------------------

#: Operations that map or allocate as they write, run under an address-space limit.
LIMITED_OPS = (
    "zip-append",
    "zip-rewrite",
    "zip-batch",
    "zip-compact",
    "zip-append-many",
    "zip-batch-many",
    "daf-zip-set-vector",
    "daf-zip-overwrite",
    "daf-zip-fill",
)
#: Address space left to the operation (bytes past what the process has mapped).
HEADROOMS = tuple(4 << (2 * i) for i in range(5, 14))  # 4 KiB .. 256 MiB


@pytest.mark.parametrize("after_open", [False, True], ids=["from-start", "once-open"])
@pytest.mark.parametrize("name", LIMITED_OPS)
def test_address_space_limit(server: Server, name: str, after_open: bool, tmp_path: Path) -> None:
    """Each operation under ``RLIMIT_AS`` leaving it from 4 KiB to 256 MiB, set before the
    open or once the handle is open (then the writes, the growth of the mapping and the
    compacted copy's reservation meet it): the same outcomes as an injected ``ENOMEM`` (a
    DafzarrError keeping the errno and naming the file, or a MemoryError; the state before
    or after; the handle usable or closed)."""
    op = OPS[name]
    ref = reference(server, op, tmp_path)
    problems: list[str] = []
    outcomes = []
    for headroom in HEADROOMS:
        where = _fresh(ref.base, tmp_path / f"{name}.limit.{headroom}")
        trace = where.with_suffix(".trace")
        result = server.run(
            op.name, where / op.file_name, ["-e", "trace=none"], trace, headroom, after_open
        )
        found = _problems(op, ref, "rlimit", "ENOMEM", result, where / op.file_name, False)
        problems += [f"{name} headroom {headroom}: {p}" for p in found]
        report = result["report"] or {}
        error = report.get("error")
        outcomes.append("ok" if error is None else error["type"])
    print(f"{name}: {dict(zip(HEADROOMS, outcomes, strict=True))}")
    if not (after_open and name == "zip-compact"):
        assert outcomes[-1] == "ok", outcomes  # enough room: the operation succeeds
    else:  # the handle reserved for 1 TiB: the copy needs as much again
        assert outcomes[-1] == "AddressSpaceError", outcomes
    assert not problems, "\n".join(problems)


def test_failed_fsync_after_the_commit_point(server: Server, tmp_path: Path) -> None:
    """A durable batch whose directory went down into the free room: the ``fsync`` after
    the commit point (the ``ftruncate`` that cuts the old directory away) fails. The
    commit stands; abandoning it would write the old directory over the new entries."""
    op = OPS["zip-batch-durable"]
    ref = reference(server, op, tmp_path)
    assert ref.counts["fsync"] == 5  # relocation, before and after the commit point, ...
    for err in ("EIO", "ENOSPC"):
        assert not inject(server, op, ref, "fsync", err, 3, tmp_path)


def _calls_before(trace: Path, call: str, marker: str) -> int:
    """How many ``call`` calls the thread that made the first ``marker`` call made before it."""
    lines = [line.split(None, 1) for line in trace.read_text().splitlines()]
    tid = next(t for t, rest in lines if rest.startswith(f"{marker}("))
    n = 0
    for t, rest in lines:
        if t != tid:
            continue
        if rest.startswith(f"{marker}("):
            return n
        n += rest.startswith(f"{call}(")
    raise AssertionError(f"no {marker} call in {trace}")


def test_failed_close_after_the_sidecar_link(server: Server, tmp_path: Path) -> None:
    """A flush whose new sidecar got its name (``linkat``), then the close of the directory
    descriptor used for the link fails: the link stands and the flush goes on (the
    directory's fsync that follows makes it durable). The sidecar is not written a second
    time under the next number, beside the first."""
    op = OPS["af-flush"]
    ref = reference(server, op, tmp_path)
    n = _calls_before(ref.base.with_name(f"{op.name}.trace"), "close", "linkat") + 1
    assert not inject(server, op, ref, "close", "EIO", n, tmp_path)
