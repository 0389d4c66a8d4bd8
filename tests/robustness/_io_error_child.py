"""Child process of the I/O-error injection tests (``test_io_errors.py``).

Usage::

    python tests/robustness/_io_error_child.py serve

A fork server: it imports dafzarr once, then reads one JSON request a line from stdin,
``{"op": NAME, "path": PATH}`` (with ``"headroom": N``, the operation runs under an
address-space limit, ``RLIMIT_AS``, that lets it map ``N`` bytes more; with
``"after_open": true``, set once the handle is open). For each it forks a child that waits on a pipe, prints the
child's pid, waits for the line ``go`` (the parent has attached ``strace -p`` to the child
meanwhile, so that the trace holds the operation's system calls only), lets the child run
:data:`OPS` ``[NAME]`` on ``PATH`` and prints one JSON line: the child's exit status and its
outcome. The child reports through memory shared with the server (no system call of its own
after the operation), as ``{"error": None}`` or ``{"error": {"type", "mro", "errno",
"message"}}``, plus ``"reuse"``: what using the same handle again did.

The operations, their base files and the snapshots the parent compares are defined here
(from the parts in ``_mutations``, shared with the crash-state harness) and imported by the
parent, so both sides agree on them.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dafzarr import ArrayFile, MmapZipStore, open_daf

if __package__:
    from . import _mutations as m
else:  # run as a script: its directory comes first in sys.path
    import _mutations as m  # type: ignore[no-redef]

_SHARED = 1 << 16

# --- The operations ----------------------------------------------------------------------


def zip_base(path: str) -> None:
    """An archive of two entries, one rewritten (so that compaction has dead bytes)."""
    with MmapZipStore(path, "w") as s:
        s["a"] = m.payload(1, 1000)
        s["b"] = m.payload(2, 50_000)
        s["b"] = m.payload(3, 40_000)


#: Called once the handle is open (the child limits its address space there, when asked).
_after_open: list[Callable[[], None]] = []


def zip_many_base(path: str) -> None:
    """An archive of 4000 small entries: its directory (about 300 KB) lives in memory in
    a block of its own, which grows (``mremap``) with the next entry."""
    with MmapZipStore(path, "w") as s, s.batch():
        for i in range(4000):
            s[f"group/array/{i}"] = i.to_bytes(4, "little")


def _on_handle(open_: Callable[[str], Any], body: Callable[[Any], None]) -> Callable[[str], Any]:
    """The operation that opens ``path``, runs ``body`` on the handle and closes it; a
    handle that failed is kept for :func:`_reuse`."""

    def run(path: str) -> Any:
        h = open_(path)
        try:
            for hook in _after_open:
                hook()
            body(h)
            h.close()
        except BaseException:
            _stash(h)
            raise
        return h

    return run


def _zip_op(body: Callable[[MmapZipStore], None], durable: bool = False) -> Callable[[str], Any]:
    return _on_handle(lambda p: MmapZipStore(p, "r+", durable=durable), body)


_batch = m.batch(
    {"n1": m.payload(4, 30_000), "n2": m.payload(5, 100), "a": m.payload(6, 2000)}, "b"
)


def _batch_many(s: MmapZipStore) -> None:
    with s.batch():
        for i in range(200):
            s[f"group/other/{i}"] = m.payload(i, 300)
        del s["group/array/7"]


def zip_snapshot(path: str) -> Any:
    """The archive's entries, read-only, then through a writable open (which recovers)."""
    ro, rw = m.zip_read(path, False), m.zip_read(path, True)
    return ro if ro == rw else {"read-only": ro, "writable": rw}


CELLS = [f"c{i}" for i in range(10)]
daf_base = m.daf_base_of(CELLS)


def _daf_op(body: Callable[[Any], None], durable: bool = False) -> Callable[[str], Any]:
    return _on_handle(lambda p: open_daf(p, "r+", durable=durable), body)


def daf_snapshot(path: str) -> Any:
    """Every axis and vector of the data set."""
    with open_daf(path, "r") as d:
        return m.daf_contents(d)


def _nothing(path: str) -> None:
    """No base: the operation creates the data set."""


def _absent_or_daf(path: str) -> Any:
    """``"absent"`` where there is no data set, else :func:`daf_snapshot`."""
    return daf_snapshot(path) if os.path.exists(path) else "absent"


def _groups_snapshot(path: str) -> Any:
    """Every data set of the multi-data-set ZIP, by group."""
    return m.groups_contents(path, False)


@dataclass(frozen=True)
class Op:
    """One mutating operation: the base it runs on, what it does, how to compare states."""

    name: str
    file_name: str  # of the data set or file, in its own directory
    base: Callable[[str], None]
    run: Callable[[str], Any]
    snapshot: Callable[[str], Any]


def _ops() -> dict[str, Op]:
    ops = [
        Op(
            "zip-append",
            "s.zip",
            zip_base,
            _zip_op(m.set_entry("new", m.payload(7, 50_000))),
            zip_snapshot,
        ),
        Op(
            "zip-rewrite",
            "s.zip",
            zip_base,
            _zip_op(m.set_entry("a", m.payload(8, 50_000))),
            zip_snapshot,
        ),
        Op("zip-delete", "s.zip", zip_base, _zip_op(m.delete_entry("b")), zip_snapshot),
        Op("zip-batch", "s.zip", zip_base, _zip_op(_batch), zip_snapshot),
        Op("zip-compact", "s.zip", zip_base, _zip_op(m.compact), zip_snapshot),
        Op(
            "zip-append-many",
            "s.zip",
            zip_many_base,
            _zip_op(m.set_entry("new", b"x" * 100)),
            zip_snapshot,
        ),
        Op("zip-batch-many", "s.zip", zip_many_base, _zip_op(_batch_many), zip_snapshot),
        # durable=True: the msync and fsync calls at the protocol's ordering points fail too
        Op(
            "zip-append-durable",
            "s.zip",
            zip_base,
            _zip_op(m.set_entry("new", m.payload(7, 50_000)), durable=True),
            zip_snapshot,
        ),
        Op(
            "zip-rewrite-durable",
            "s.zip",
            zip_base,
            _zip_op(m.set_entry("a", m.payload(8, 50_000)), durable=True),
            zip_snapshot,
        ),
        Op("zip-batch-durable", "s.zip", zip_base, _zip_op(_batch, durable=True), zip_snapshot),
        # deleting the first entry leaves the file starting with dead binary bytes: the
        # commit renews the archive (a compacted copy renamed over it)
        Op("zip-renew", "s.zip", zip_base, _zip_op(m.delete_entry("a")), zip_snapshot),
        Op(
            "zip-renew-durable",
            "s.zip",
            zip_base,
            _zip_op(m.delete_entry("a"), durable=True),
            zip_snapshot,
        ),
        Op("zip-pack", "p.zip", m.pack_base, m.pack, zip_snapshot),
    ]
    for kind, file_name in (("dir", "d.daf.zarr"), ("zip", "d.daf.zarr.zip")):
        for what, body in (
            ("set-vector", m.set_vector),
            ("overwrite", m.overwrite_vector),
            ("delete", m.delete_vector),
            ("fill", m.fill),
        ):
            ops.append(Op(f"daf-{kind}-{what}", file_name, daf_base, _daf_op(body), daf_snapshot))
        ops.append(
            Op(
                f"daf-{kind}-set-vector-durable",
                file_name,
                daf_base,
                _daf_op(m.set_vector, durable=True),
                daf_snapshot,
            )
        )
        ops.append(
            Op(
                f"daf-{kind}-fill-durable",
                file_name,
                daf_base,
                _daf_op(m.fill, durable=True),
                daf_snapshot,
            )
        )
        # mode "w" on an existing data set: an empty one takes its place
        ops.append(
            Op(
                f"daf-{kind}-truncate",
                file_name,
                daf_base,
                _on_handle(lambda p: open_daf(p, "w"), lambda d: None),
                daf_snapshot,
            )
        )
        # mode "w" where there is none: a new, empty data set
        ops.append(
            Op(
                f"daf-{kind}-create",
                file_name,
                _nothing,
                _on_handle(lambda p: open_daf(p, "w"), lambda d: None),
                _absent_or_daf,
            )
        )
    ops += [
        Op("af-flush", "f.af", m.af_base, _on_handle(ArrayFile.open, m.af_flush), m.af_snapshot),
        Op(
            "af-compact", "f.af", m.af_base, _on_handle(ArrayFile.open, m.af_compact), m.af_snapshot
        ),
        Op("refs-write", "refs.parq", m.refs_base, m.refs_write, m.tree_snapshot),
        Op(
            "daf-convert-dir",
            "d.daf.zarr",
            m.convert_base_of(CELLS, matrix=False),  # (each file costs some 20 system calls)
            m.convert(),
            _absent_or_daf,
        ),
        Op(
            "daf-convert-zip",
            "d.daf.zarr.zip",
            m.convert_base_of(CELLS),
            m.convert(),
            _absent_or_daf,
        ),
        Op(
            "daf-convert-group",
            "m.dafs.zarr.zip",
            m.convert_base_of(CELLS, group=True),
            m.convert("two"),
            _groups_snapshot,
        ),
    ]
    return {op.name: op for op in ops}


OPS = _ops()

# --- The child's side --------------------------------------------------------------------

_stashed: list[Any] = []


def _stash(handle: Any) -> None:
    """Keep the handle of a failed operation, to use it again (see :func:`_reuse`)."""
    _stashed.append(handle)


def _reuse() -> str:
    """Use the failed operation's handle once more: ``ok``, or the error it raised."""
    if not _stashed:
        return "none"
    h = _stashed[-1]
    try:
        if isinstance(h, MmapZipStore):
            h.keys()
            h.close()
        elif isinstance(h, ArrayFile):
            h.list_arrays()
            h.close(flush=False)
        else:
            h.axes_set()
            h.close()
    except Exception as exc:  # noqa: BLE001 (reported, judged by the parent)
        return f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    return "ok"


def _describe(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "mro": [f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__],
        "errno": getattr(exc, "errno", None),
        "message": str(exc),
    }


def _limit_address_space(headroom: int) -> None:
    """Let the process map only ``headroom`` bytes more than it has mapped now."""
    import resource

    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * mmap.PAGESIZE
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (mapped + headroom, hard))


def _child(
    op: Op, path: str, go: int, shared: mmap.mmap, headroom: int | None, after_open: bool
) -> None:
    """Wait for the parent's ``go``, run the operation, report through ``shared``;
    with ``headroom``, under an address-space limit that leaves that much (set once the
    handle is open, with ``after_open``)."""
    os.read(go, 1)
    if headroom is not None and after_open:
        _after_open.append(lambda: _limit_address_space(headroom))
    elif headroom is not None:
        _limit_address_space(headroom)
    try:
        op.run(path)
        report: dict[str, Any] = {"error": None, "reuse": "none"}
    except BaseException as exc:  # noqa: BLE001 (reported, judged by the parent)
        report = {"error": _describe(exc), "reuse": _reuse()}
    data = json.dumps(report).encode()
    shared[: len(data)] = data


def _serve_one(request: dict[str, Any]) -> dict[str, Any]:
    shared = mmap.mmap(-1, _SHARED)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0  # (w stays open: no system call may precede the operation)
        try:
            _child(
                OPS[request["op"]],
                request["path"],
                r,
                shared,
                request.get("headroom"),
                bool(request.get("after_open")),
            )
        except BaseException:  # noqa: BLE001 (the exit status says it)
            code = 70
        os._exit(code)
    os.close(r)
    print(pid, flush=True)
    if sys.stdin.readline().strip() != "go":
        os.kill(pid, 9)
    os.write(w, b"g")
    os.close(w)
    _, status = os.waitpid(pid, 0)
    raw = bytes(shared).split(b"\0", 1)[0]
    shared.close()
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "report": json.loads(raw) if raw else None,
    }


def _warm_up() -> None:
    """Run every operation once, untraced, so that the children import nothing (an
    injected ``mmap`` or ``openat`` failure then hits the operation, not an import)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for op in OPS.values():
            where = os.path.join(d, op.name)
            os.mkdir(where)
            path = os.path.join(where, op.file_name)
            op.base(path)
            op.run(path)
            op.snapshot(path)


def serve() -> None:
    """Answer requests until stdin closes."""
    _warm_up()
    for line in sys.stdin:
        with contextlib.suppress(BrokenPipeError):
            print(json.dumps(_serve_one(json.loads(line))), flush=True)


if __name__ == "__main__":
    serve()
