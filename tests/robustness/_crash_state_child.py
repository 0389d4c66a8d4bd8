"""Child process of the power-loss crash-state tests (``test_crash_states.py``).

Usage::

    python tests/robustness/_crash_state_child.py record ROOT OP...  # each OP run in ROOT/OP
    python tests/robustness/_crash_state_child.py serve             # open crash states, one a line

**Recording.** Most bytes the store writes go through a shared writable mapping (stores
into it, ``msync``), so a system-call trace does not see them; the data of a ``pwrite`` is
not the whole story either. The operation is therefore run in this process with the
functions that change the file system or make changes durable wrapped (``os.fsync``,
``os.rename`` and friends, and the methods of a :class:`~dafzarr._posix.FileMapping`
subclass installed where the store creates its mappings): after each call, the whole
directory tree of the operation is read back (names, inode numbers, contents, as the
page cache holds them) and recorded with the call. No ptrace is involved, and the file
contents at every barrier are exact. The operation marks the instant it returned (its
*acknowledgement*) with :func:`ack`.

**Checking.** ``serve`` imports dafzarr once and, for each request line
``{"op": NAME, "path": PATH, "out": OUT}``, forks a child that opens the data set at
``PATH`` with the real openers (read-only, then writable) and writes what it holds (or
the error), what the opening asked the file system (see :class:`Observer`) and the
child's pid to ``OUT`` as a pickle; the server answers with the child's exit status.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Self

import numpy as np

from dafzarr import ArrayFile, MmapZipStore, open_daf
from dafzarr._posix import FileMapping

if __package__:
    from . import _mutations as m
else:  # run as a script: its directory comes first in sys.path
    import _mutations as m  # type: ignore[no-redef]

DIR = -1  # the inode number recorded for a directory in a tree


# --- Recording -------------------------------------------------------------------------


class Recorder:
    """The events of one operation: each call that changes the tree or syncs it, and the
    tree (names -> inode, inode -> contents) right after it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.blobs: dict[str, bytes] = {}
        self.events: list[dict[str, Any]] = []
        self.busy = False
        self.event("start")

    def tree(self) -> tuple[dict[str, int], dict[int, str]]:
        names: dict[str, int] = {}
        data: dict[int, str] = {}
        for directory, dirs, files in os.walk(self.root):
            rel = os.path.relpath(directory, self.root)
            for d in dirs:
                names[os.path.normpath(os.path.join(rel, d))] = DIR
            for f in files:
                full = os.path.join(directory, f)
                try:
                    with open(full, "rb") as fh:
                        ino = os.fstat(fh.fileno()).st_ino
                        blob = fh.read()
                except FileNotFoundError:
                    continue
                digest = hashlib.sha1(blob).hexdigest()
                self.blobs.setdefault(digest, blob)
                names[os.path.normpath(os.path.join(rel, f))] = ino
                data[ino] = digest
        return names, data

    def event(self, kind: str, **info: Any) -> None:
        if self.busy:  # a wrapped call made by another wrapped call
            return
        self.busy = True
        try:
            names, data = self.tree()
            if "blob" in info:
                data.setdefault(info["ino"], info["blob"])
        finally:
            self.busy = False
        self.events.append({"kind": kind, **info, "names": names, "data": data})

    def fd_target(self, fd: int) -> dict[str, Any]:
        """The inode (file) or the relative path (directory) an fsync'ed descriptor names."""
        st = os.fstat(fd)
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            where = os.readlink(f"/proc/self/fd/{fd}")
            return {"dir": os.path.normpath(os.path.relpath(where, self.root))}
        # (read through /proc: the file may have no name yet, O_TMPFILE)
        with open(f"/proc/self/fd/{fd}", "rb") as fh:
            blob = fh.read()
        digest = hashlib.sha1(blob).hexdigest()
        self.blobs.setdefault(digest, blob)
        return {"ino": st.st_ino, "blob": digest}


_recorder: Recorder | None = None


def ack() -> None:
    """Mark the instant the operation returned to its caller."""
    if _recorder is not None:
        _recorder.event("ack")


def _rec() -> Recorder:
    assert _recorder is not None
    return _recorder


def _wrap_os() -> None:
    def after(name: str, kind: str) -> None:
        real = getattr(os, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            _rec().event(kind, call=name)
            return out

        setattr(os, name, wrapped)

    for name in (
        "rename",
        "replace",
        "link",
        "unlink",
        "remove",
        "rmdir",
        "mkdir",
        "ftruncate",
        "truncate",
        "pwrite",
        "pwritev",
        "write",
        "posix_fallocate",
    ):
        after(name, "change")
    real_rmtree = shutil.rmtree

    def rmtree(*args: Any, **kwargs: Any) -> None:
        real_rmtree(*args, **kwargs)
        _rec().event("change", call="rmtree")

    shutil.rmtree = rmtree  # type: ignore[assignment]
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def sync(fd: Any, _real: Callable[[Any], None] = real, _name: str = name) -> None:
            fd = fd if isinstance(fd, int) else fd.fileno()
            _real(fd)
            _rec().event("fsync", call=_name, **_rec().fd_target(fd))

        setattr(os, name, sync)


def _recording_mapping() -> type[FileMapping]:
    class RecordingMapping(FileMapping):
        def _done(self, kind: str, **info: Any) -> None:
            _rec().event(kind, **info)

        def write(self, offset: int, data: Any) -> None:
            super().write(offset, data)
            self._done("change", call="store")

        def write_crc32(self, offset: int, data: Any, crc: int = 0) -> int:
            out = super().write_crc32(offset, data, crc)
            self._done("change", call="store")
            return out

        def pwrite(self, offset: int, data: Any) -> None:
            super().pwrite(offset, data)
            self._done("change", call="pwrite")

        def zero(self, offset: int, length: int) -> None:
            super().zero(offset, length)
            self._done("change", call="store")

        def move(self, dst: int, src: int, length: int) -> None:
            super().move(dst, src, length)
            self._done("change", call="store")

        def resize(self, new_size: int) -> None:
            super().resize(new_size)
            self._done("change", call="resize")

        def msync(self, offset: int, length: int) -> None:
            super().msync(offset, length)
            self._done("msync", ino=os.fstat(self.fd).st_ino, off=offset, len=length)

        def fsync(self) -> None:
            super().fsync()
            self._done("fsync", call="fsync", ino=os.fstat(self.fd).st_ino)

    return RecordingMapping


def record(names: list[str], root: str) -> None:
    """Run each ``OPS[name]`` on its data set in ``root/name`` (its base already there),
    recording into ``root/name.pkl``."""
    global _recorder
    import dafzarr._core.zipstore.open as open_module
    import dafzarr._core.zipstore.repack as copy_module

    mapping = _recording_mapping()
    open_module.FileMapping = mapping  # type: ignore[misc]
    copy_module.FileMapping = mapping  # type: ignore[misc]
    _wrap_os()
    for name in names:
        op = OPS[name]
        where = os.path.join(root, name)
        _recorder = rec = Recorder(where)
        op.run(os.path.join(where, op.file_name))
        rec.event("end")
        _recorder = None
        with open(os.path.join(root, f"{name}.pkl"), "wb") as f:
            pickle.dump({"events": rec.events, "blobs": rec.blobs}, f)


# --- The operations --------------------------------------------------------------------


def zip_base(path: str) -> None:
    """Two entries, one rewritten (dead bytes for compaction), and a third small one."""
    with MmapZipStore(path, "w") as s:
        s["a"] = b'{"plain": "text"}' * 20
        s["b"] = m.payload(2, 20_000)
        s["b"] = m.payload(3, 12_000)
        s["c"] = b"small"


def zip_snapshot(path: str) -> Any:
    """The archive's entries, read-only, then through a writable open (which recovers).

    A read-only open may refuse a file that a writer left unfinished (a tail past the
    last trailer) with a ``CorruptArchiveError``; then the writable open says it all.
    """
    from dafzarr import CorruptArchiveError

    try:
        ro: Any = m.zip_read(path, False)
    except CorruptArchiveError:
        ro = None
    rw = m.zip_read(path, True)
    return rw if ro in (None, rw) else {"read-only": ro, "writable": rw}


def _zip(body: Callable[[MmapZipStore], None], durable: bool = True) -> Callable[[str], None]:
    def run(path: str) -> None:
        with MmapZipStore(path, "r+", durable=durable) as s:
            body(s)
            ack()

    return run


_batch = m.batch({"n1": m.payload(4, 9000), "n2": m.payload(5, 100), "c": b"rewritten"}, "b")


def _reserve(s: MmapZipStore) -> None:
    view = s.reserve_entry("r", 6000)
    view[:] = np.frombuffer(m.payload(9, 6000), np.uint8)
    del view
    s.patch_entry_crc("r")


def _create_zip(path: str) -> None:
    """A new archive (no file before), and an entry in it."""
    with MmapZipStore(path, "w", durable=True) as s:
        ack()
        s["k"] = m.payload(10, 3000)
        ack()


def _create_daf(path: str, mode: Literal["w", "w+"] = "w") -> None:
    """A new data set (nothing before), with an axis and a vector."""
    with open_daf(path, mode, durable=True) as d:
        ack()
        d.add_axis("cell", CELLS)
        ack()
        d.set_vector("cell", "age", np.arange(6, dtype=np.int32))
        ack()


def _create_daf_rw(path: str) -> None:
    """A new data set made by mode ``"w+"`` (nothing before), with an axis and a vector."""
    _create_daf(path, "w+")


def _truncate_daf(path: str) -> None:
    """Mode ``"w"`` on an existing data set: an empty one takes its place, then an axis."""
    with open_daf(path, "w", durable=True) as d:
        ack()
        d.add_axis("gene", ["g0", "g1"])
        ack()


def _nothing(path: str) -> None:
    """No base: the operation creates the data set."""


def _absent(snapshot: Callable[[str], Any]) -> Callable[[str], Any]:
    """``snapshot``, or ``"absent"`` when there is no data set at the path."""

    def run(path: str) -> Any:
        return snapshot(path) if os.path.exists(path) else "absent"

    return run


def crashed_base(path: str) -> None:
    """An archive a writer left in the middle of a commit: a new entry's bytes, and a
    half-written directory, past the trailer."""
    zip_base(path)
    with open(path, "ab") as f:
        f.write(m.payload(11, 7000) + b"PK\x01\x02" + bytes(40))


def _recover(path: str) -> None:
    """A writable open, which recovers the archive, and an append."""
    with MmapZipStore(path, "r+", durable=True) as s:
        ack()
        s["after-recovery"] = b"appended"
        ack()


def _canonical(path: str) -> None:
    """An append to an archive whose max_file_size leaves no room to place the directory
    past the end of the file: it goes right after the data."""
    with MmapZipStore(path, "r+", durable=True, max_file_size=45_000) as s:
        s["new"] = m.payload(7, 9000)
        ack()


def _acked(run: Callable[[str], None]) -> Callable[[str], None]:
    """``run``, then its acknowledgement."""

    def body(path: str) -> None:
        run(path)
        ack()

    return body


def _groups_snapshot(path: str) -> Any:
    """Every data set of a multi-data-set ZIP by group, read-only, then writable."""
    from dafzarr import CorruptArchiveError

    try:
        ro: Any = m.groups_contents(path, False)
    except CorruptArchiveError:  # refused read-only (see zip_snapshot)
        ro = None
    rw = m.groups_contents(path, True)
    return rw if ro in (None, rw) else {"read-only": ro, "writable": rw}


CELLS = [f"c{i}" for i in range(6)]


daf_base = m.daf_base_of(CELLS)


def daf_snapshot(path: str) -> Any:
    """Every axis and vector, read-only, then through a writable open."""
    from dafzarr import CorruptArchiveError

    out: list[Any] = []
    for mode in ("r", "r+"):
        try:
            d = open_daf(path, mode)  # type: ignore[arg-type]
        except CorruptArchiveError:  # refused read-only (see zip_snapshot)
            if mode == "r+":
                raise
            out.append(None)
            continue
        with d:
            out.append(m.daf_contents(d))
    return out[1] if out[0] in (None, out[1]) else {"read-only": out[0], "writable": out[1]}


def _daf(body: Callable[[Any], None], durable: bool = True) -> Callable[[str], None]:
    def run(path: str) -> None:
        with open_daf(path, "r+", durable=durable) as d:
            body(d)
            ack()

    return run


def _af(body: Callable[[ArrayFile], None]) -> Callable[[str], None]:
    def run(path: str) -> None:
        f = ArrayFile.open(path)
        body(f)
        ack()
        f.close(flush=False)

    return run


def _af_create(path: str) -> None:
    """A new file set (nothing before), one array flushed into it."""
    f = ArrayFile.create(path)
    ack()
    f.define_array("x", "u4", ["i"], [16])
    f.write_array("x", [0], np.arange(16, dtype=np.uint32))
    f.flush()
    ack()
    f.close(flush=False)


@dataclass(frozen=True)
class Op:
    """One mutating operation: its base, what it does, how states compare; ``durable``:
    whether it promises that what it acknowledged survives a power loss."""

    name: str
    file_name: str
    base: Callable[[str], None]
    run: Callable[[str], None]
    snapshot: Callable[[str], Any]
    durable: bool = True
    #: A reservation the operation fills: until its CRC is patched, a read-only open may
    #: show it (with the bytes that reached the file) where a writable open rolls it back.
    pending: str | None = None
    #: A state the operation may leave before it returns besides those before and after it,
    #: as documented, made from the state before: a directory data set's overwrite deletes,
    #: then writes, so a crash in between leaves the property absent.
    between: Callable[[Any], Any] | None = None


def _without_age(before: Any) -> Any:
    """The state before with no vector ``age`` (see ``Op.between``)."""
    return {k: v for k, v in before.items() if k != "vector cell age"}


def _ops() -> dict[str, Op]:
    z = ("s.zip", zip_base)
    ops = [
        Op("zip-append", *z, _zip(m.set_entry("new", m.payload(7, 9000))), zip_snapshot),
        Op(
            "zip-append-not-durable",
            *z,
            _zip(m.set_entry("new", m.payload(7, 9000)), durable=False),
            zip_snapshot,
            durable=False,
        ),
        Op(
            "zip-rewrite-not-durable",
            *z,
            _zip(m.set_entry("b", m.payload(8, 6000)), durable=False),
            zip_snapshot,
            durable=False,
        ),
        Op("zip-append-small", *z, _zip(m.set_entry("tiny", b"x" * 10)), zip_snapshot),
        Op("zip-rewrite", *z, _zip(m.set_entry("b", m.payload(8, 6000))), zip_snapshot),
        Op("zip-delete", *z, _zip(m.delete_entry("c")), zip_snapshot),
        Op("zip-batch", *z, _zip(_batch), zip_snapshot),
        Op("zip-reserve", *z, _zip(_reserve), zip_snapshot, pending="r"),
        Op("zip-append-canonical", *z, _canonical, zip_snapshot),
        Op("zip-create", "s.zip", _nothing, _create_zip, _absent(zip_snapshot)),
        Op("zip-recover", "s.zip", crashed_base, _recover, zip_snapshot),
        Op("zip-renew", *z, _zip(m.delete_entry("a")), zip_snapshot),
        Op("zip-compact", *z, _zip(m.compact), zip_snapshot),
        Op("zip-pack", "p.zip", m.pack_base, _acked(m.pack), zip_snapshot),
        Op("af-flush", "f.af", m.af_base, _af(m.af_flush), m.af_snapshot),
        Op("af-compact", "f.af", m.af_base, _af(m.af_compact), m.af_snapshot),
        Op("af-create", "f.af", _nothing, _af_create, _absent(m.af_snapshot)),
        Op("refs-write", "refs.parq", m.refs_base, _acked(m.refs_write), m.tree_snapshot),
        Op(
            "daf-convert-group",
            "m.dafs.zarr.zip",
            m.convert_base_of(CELLS, group=True),
            _acked(m.convert("two")),
            _groups_snapshot,
        ),
    ]
    for kind, file_name in (("zip", "d.daf.zarr.zip"), ("dir", "d.daf.zarr")):
        for what, body in (
            ("set", m.set_vector),
            ("overwrite", m.overwrite_vector),
            ("delete", m.delete_vector),
            ("fill", m.fill),
        ):
            between = _without_age if (kind, what) == ("dir", "overwrite") else None
            ops.append(
                Op(
                    f"daf-{kind}-{what}",
                    file_name,
                    daf_base,
                    _daf(body),
                    daf_snapshot,
                    between=between,
                )
            )
        ops.append(
            Op(f"daf-{kind}-create", file_name, _nothing, _create_daf, _absent(daf_snapshot))
        )
        ops.append(
            Op(f"daf-{kind}-create-rw", file_name, _nothing, _create_daf_rw, _absent(daf_snapshot))
        )
        # Without durable=True: neither durable nor, after a power loss, always readable.
        ops.append(
            Op(
                f"daf-{kind}-set-not-durable",
                file_name,
                daf_base,
                _daf(m.set_vector, durable=False),
                daf_snapshot,
                durable=False,
            )
        )
        ops.append(Op(f"daf-{kind}-truncate", file_name, daf_base, _truncate_daf, daf_snapshot))
        ops.append(
            Op(
                f"daf-convert-{kind}",
                file_name,
                # (a directory of fewer files: its crash states grow with their number)
                m.convert_base_of(CELLS, matrix=kind == "zip"),
                _acked(m.convert()),
                _absent(daf_snapshot),
            )
        )
    return {op.name: op for op in ops}


OPS = _ops()

# --- Checking --------------------------------------------------------------------------


#: Audit events that may run or load code reading files behind the hooks' back.
_OPAQUE = ("subprocess.", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork")
#: Audit events whose first path is moved to, or linked at, another name: what is read
#: under the new name is what the old one held (for a directory: its whole tree).
_MOVES = ("os.rename", "os.link")
#: The calls that tell whether a path exists, and its kind and size, raising no audit
#: event (``os.path.exists``, ``isfile``, ``isdir``, ``getsize``, ``lexists`` ... and
#: ``pathlib``'s ``stat``, ``exists``, ``is_dir`` ... call ``os.stat`` or ``os.lstat``).
_STATS = ("stat", "lstat", "fstat", "access", "readlink")


class Observer:
    """What this process asked the file system, in order: each path with how it was
    asked (``"read"``: named by an audited call, or opened as a mapping; ``"stat"``:
    stat'ed; ``"tree"``: moved or linked elsewhere). Audit hooks give the first kind
    (``open`` covers ``io.open``, ``os.open`` and ``pathlib``; ``os.listdir``,
    ``os.scandir``, ``os.rename``, ``os.remove``, ``shutil.rmtree`` ... the rest), the
    store's :class:`~dafzarr._posix.FileMapping` (the one file opened in C) and the
    ``os`` functions of :data:`_STATS` (and ``os.DirEntry.stat``) are wrapped (see
    :func:`watch`). ``unknown`` says why the record may not be all of it: a relative path
    whose directory the event does not give, or a child process."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()
        self.unknown: str | None = None
        self.active = True
        #: The threads inside an ``os.open`` with ``dir_fd``, which ``watch`` names itself
        #: (the audit event does not carry the descriptor).
        self.named_open: set[int] = set()
        #: Per thread, a relative path an ``open`` event named, until the wrapper names it
        #: with its descriptor; any other event first means it was opened without one.
        self.relative: dict[int, str] = {}

    def name(self, path: Any, dir_fds: list[int], event: str, how: str = "read") -> None:
        if not self.active:
            return
        if isinstance(path, int) and not isinstance(path, bool):  # a descriptor
            path = _real_readlink(f"/proc/self/fd/{path}")
        p = os.fsdecode(path)
        if not os.path.isabs(p):
            base = next((f"/proc/self/fd/{fd}" for fd in dir_fds if fd >= 0), None)
            if base is None or event == "open":  # (os.open's dir_fd is not in the event)
                self.unknown = f"{event} {p!r}"
                return
            p = os.path.join(_real_readlink(base), p)
        key = (os.path.normpath(p), how)
        if key not in self._seen:
            self._seen.add(key)
            self.asked.append(key)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        me = threading.get_ident()
        if event == "open" and me in self.named_open:
            return  # an os.open relative to a descriptor, named by the wrapper (see watch)
        if self.relative.pop(me, None) is not None:  # its opener was not the wrapper
            self.unknown = "open of a relative path without a directory descriptor"
        if event == "open" and isinstance(args[0], (str, bytes)) and not os.path.isabs(args[0]):
            # io.open(path, opener=partial(os.open, dir_fd=...)) raises this before it calls
            # its opener: the wrapper (see watch) names the path with the descriptor.
            self.relative[me] = os.fsdecode(args[0])
            return
        if event.startswith(_OPAQUE):
            self.unknown = event
        elif event == "open":  # (path, mode, flags): the path may be a descriptor
            if isinstance(args[0], (str, bytes, os.PathLike)):
                self.name(args[0], [], event)
        elif event in ("os.listdir", "os.scandir") and isinstance(args[0], int):
            self.name(args[0], [], event)  # a directory listed by its descriptor
        elif event.startswith(("os.", "shutil.")):
            fds = [a for a in args[1:] if isinstance(a, int) and not isinstance(a, bool)]
            for i, a in enumerate(args):
                if isinstance(a, (str, bytes, os.PathLike)):
                    moved = i == 0 and event in _MOVES
                    self.name(a, fds[:1] if moved else fds[1:] or fds, event)
                    if moved:
                        self.name(a, fds[:1], event, "tree")


_real_readlink = os.readlink


class _Entry:
    """An ``os.DirEntry`` whose ``stat`` is observed (the rest is its entry's)."""

    def __init__(self, entry: Any, seen: Observer) -> None:
        self._entry, self._seen = entry, seen

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._entry, attr)

    def __fspath__(self) -> Any:
        return self._entry.__fspath__()

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        self._seen.name(self._entry.path, [], "DirEntry.stat", "stat")
        out: os.stat_result = self._entry.stat(follow_symlinks=follow_symlinks)
        return out


class _Listing:
    """An ``os.scandir`` iterator whose entries are :class:`_Entry`."""

    def __init__(self, it: Any, seen: Observer) -> None:
        self._it, self._seen = it, seen

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> _Entry:
        return _Entry(next(self._it), self._seen)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._it.close()

    def close(self) -> None:
        self._it.close()


def _replace_everywhere(real: Any, wrapped: Any) -> None:
    """Put ``wrapped`` wherever a module holds ``real`` (but the one defining it)."""
    for module in list(sys.modules.values()):
        if module is None or getattr(module, "__name__", "") in ("posix", __name__):
            continue
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is real:
                setattr(module, attr, wrapped)


def _stat_wrapper(seen: Observer, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(path: Any, *args: Any, **kwargs: Any) -> Any:
        dir_fd = kwargs.get("dir_fd")
        seen.name(path, [] if dir_fd is None else [dir_fd], real.__name__, "stat")
        return real(path, *args, **kwargs)

    return wrapped


def watch() -> Observer:
    """Record, from now on, the paths this process opens, lists, stats, moves or
    removes."""
    seen = Observer()
    sys.addaudithook(seen.hook)
    for fn in _STATS:
        real_fn = getattr(os, fn)
        _replace_everywhere(real_fn, _stat_wrapper(seen, real_fn))
    real_scandir = os.scandir

    def scandir(*args: Any, **kwargs: Any) -> _Listing:
        return _Listing(real_scandir(*args, **kwargs), seen)

    _replace_everywhere(real_scandir, scandir)
    real_open = os.open

    def opened(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is None:
            return real_open(path, flags, mode)
        seen.relative.pop(threading.get_ident(), None)
        seen.name(path, [dir_fd], "os.open")
        seen.named_open.add(threading.get_ident())
        try:
            return real_open(path, flags, mode, dir_fd=dir_fd)
        finally:
            seen.named_open.discard(threading.get_ident())

    _replace_everywhere(real_open, opened)
    real = FileMapping  # (this module's name is one of those replaced)

    class WatchedMapping(real):  # type: ignore[valid-type,misc]
        def __init__(self, path: Any, *args: Any, **kwargs: Any) -> None:
            seen.name(path, [], "FileMapping")
            super().__init__(path, *args, **kwargs)

    # Every module that holds the class, by whatever name (its C open is not audited),
    # and its own module, for those imported from now on.
    _replace_everywhere(real, WatchedMapping)
    return seen


def _check_one(op: Op, path: str, out: str) -> None:
    seen = watch()
    try:
        result: Any = ("ok", op.snapshot(path))
    except Exception as exc:  # noqa: BLE001 (reported, judged by the parent)
        result = ("error", f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
    seen.active = False
    if seen.relative:
        seen.unknown = f"open {min(seen.relative.values())!r} without a descriptor"
    asked = None if seen.unknown else seen.asked
    with open(out, "wb") as f:
        pickle.dump((result, asked, seen.unknown, os.getpid()), f)


def serve() -> None:
    """Answer check requests until stdin closes."""
    import warnings

    warnings.simplefilter("ignore")  # recovery warnings: the state is what is judged
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _check_one(OPS[req["op"]], req["path"], req["out"])
            except BaseException:  # noqa: BLE001 (the exit status says it)
                code = 70
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[3:], sys.argv[2])
    else:
        serve()
