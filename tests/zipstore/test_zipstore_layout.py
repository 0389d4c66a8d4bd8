"""The layout of ``dafzarr.zipstore``: public names, module dependencies, sizes, exception
classes, and protocol steps that run on an archive without a store around them.

The package's modules depend on each other in one direction only (the ZIP records at the
bottom, the store facade at the top); each imports alone in a fresh interpreter, stays small,
says what it is for, and raises only dafzarr's own exception classes, but for failures of the
operating system (plain ``OSError`` subclasses with the file name, as :mod:`dafzarr.errors`
says).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import dafzarr
import dafzarr._core.zipstore as core
import dafzarr.zipstore
from dafzarr import errors
from dafzarr._core.zipstore import commit, recover, space
from dafzarr._core.zipstore import ziprecords as _format
from dafzarr._core.zipstore.state import Archive
from dafzarr._posix import FileMapping
from tests.helpers.layout_checks import (
    Raises,
    check_modules_import_alone,
    check_no_import_cycle,
    check_small_and_documented,
    errors_imported,
    siblings,
    tree,
)

PACKAGE = Path(core.__file__).parent
ROOT = PACKAGE.parents[2]
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))

PUBLIC = frozenset(["ArchiveSpace", "MmapZipStore"])
# Builtin exceptions a module may raise: the operating system's failures, as they come.
# Functions that build an error of dafzarr.errors: ``bad`` of ``ziprecords`` (a
# ``CorruptArchiveError``), ``write.failed`` (the error of an abandoned commit, a
# ``StorageIOError`` for a failed call), ``missing_file`` and ``already_open`` of ``open``
# (``MissingFileError``, ``AlreadyOpenError``; imported as ``_open``, a builtin's name) and
# ``_missing`` of ``repack``.
OS_FAILURES = frozenset({"OSError", "FileNotFoundError"})
FACTORIES = frozenset({"bad", "write.failed", "_open.missing_file", "_open.already_open",
                       "_missing", "missing_file"})  # fmt: skip


def test_no_import_cycle() -> None:
    check_no_import_cycle(core, "store")


def test_modules_import_only_lower_layers() -> None:
    """Each module imports only the modules the package docstring lists before it."""
    doc = core.__doc__ or ""
    layers = [line.split("``")[1] for line in doc.splitlines() if line.startswith("- ``")]
    assert sorted([*layers, "__init__"]) == MODULES
    for i, module in enumerate(layers):
        imported = siblings(PACKAGE, module) - {module}
        assert imported <= set(layers[:i]), (module, imported - set(layers[:i]))


def test_every_module_imports_alone() -> None:
    check_modules_import_alone(core)


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    check_small_and_documented(PACKAGE, module)


class _Raises(Raises):
    """:class:`Raises` that names coroutines too (zarr's Store API is ``async def``)."""

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()


def _wrong_raises(module: str) -> list[str]:
    parsed = tree(PACKAGE, module)
    allowed = errors_imported(parsed, 3) | OS_FAILURES | FACTORIES
    raises = _Raises()
    raises.visit(parsed)
    return [
        f"line {line}: raise {name} in {function}"
        for line, name, function in raises.found
        if name not in allowed
    ]


@pytest.mark.parametrize("module", MODULES)
def test_raises_only_dafzarr_errors(module: str) -> None:
    """Every exception class a module raises comes from ``dafzarr.errors`` (see the module
    docstring for the exceptions)."""
    assert not _wrong_raises(module)


def test_raise_check_sees_builtins() -> None:
    """The check above fails on the builtins the package raised before its errors became
    dafzarr's (a key that is not a str, a key that is missing, a commit past the limit)."""
    raises = _Raises()
    raises.visit(ast.parse(
        "def f():\n    raise TypeError('x')\nasync def g():\n    raise KeyError('k')\n"
    ))  # fmt: skip
    assert raises.found == [(2, "TypeError", "f"), (4, "KeyError", "g")]


# --- The public names ------------------------------------------------------------------------
def test_public_names() -> None:
    assert set(dafzarr.zipstore.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(dafzarr.zipstore, name).__module__.startswith("dafzarr._core.zipstore.")
    assert dafzarr.MmapZipStore is dafzarr.zipstore.MmapZipStore


def test_store_holds_its_archive_instead_of_inheriting_it() -> None:
    """``MmapZipStore`` is a zarr ``Store`` by composition: no class of the package's private
    layer is among its bases (the archive is a handle the store holds)."""
    from zarr.abc.store import Store

    assert [c for c in dafzarr.MmapZipStore.__mro__ if c.__module__.startswith("dafzarr")] == [
        dafzarr.MmapZipStore
    ]
    assert dafzarr.MmapZipStore.__bases__ == (Store,)


def test_public_names_import_in_a_fresh_interpreter(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from dafzarr.zipstore import *\n"
        "from dafzarr.zipstore import ArchiveSpace, MmapZipStore\n"
        "with MmapZipStore(sys.argv[1], 'w') as s:\n"
        "    s['a'] = b'xyz'\n"
        "    assert isinstance(s.space(), ArchiveSpace)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.zip")], cwd=ROOT, check=True,
                   timeout=120)  # fmt: skip
    with zipfile.ZipFile(tmp_path / "a.zip") as z:
        assert z.read("a") == b"xyz"


# --- Errors are dafzarr's, compatible with the builtins they replace -------------------------
def test_bad_arguments_are_dafzarr_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with pytest.raises(errors.InvalidArgumentError, match="invalid mode") as mode:
        dafzarr.MmapZipStore(path, "x")  # type: ignore[arg-type]
    assert isinstance(mode.value, ValueError)
    with dafzarr.MmapZipStore(path, "w", max_file_size=1 << 16) as store:
        with pytest.raises(errors.InvalidArgumentTypeError, match="keys are str") as key:
            store[1] = b"x"  # type: ignore[index]
        assert isinstance(key.value, TypeError)
        with pytest.raises(errors.InvalidArgumentError, match="empty key") as empty:
            store[""] = b"x"
        assert isinstance(empty.value, ValueError)
        with pytest.raises(errors.EntryNotFoundError) as missing:
            store["nothing"]
        assert isinstance(missing.value, KeyError) and str(missing.value) == "'nothing'"
        with pytest.raises(errors.ArchiveFullError, match="max_file_size") as full:
            store["big"] = bytes(1 << 17)
        assert isinstance(full.value, ValueError)
        with store.batch():
            store["b"] = b"y"
            with pytest.raises(errors.BatchOpenError, match="inside a batch") as batch:
                store.close()
            assert isinstance(batch.value, RuntimeError)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["b"]


# --- Protocol steps run on an Archive and a mapping, without a store --------------------------
def _mapped(path: Path) -> tuple[Archive, FileMapping]:
    path.write_bytes(_format.EMPTY_ARCHIVE)
    a = Archive(str(path), max_file_size=1 << 30)
    fm = FileMapping(str(path), True, a.reserve_size())
    recover.load_writable(a, fm)
    return a, fm


def test_commit_steps_without_a_store(tmp_path: Path) -> None:
    """Begin, add entries, commit: the file is a ZIP archive with them, and the space
    accounting of the state agrees with the file."""
    path = tmp_path / "a.zip"
    a, fm = _mapped(path)
    try:
        with commit.write_step(a, fm, batch=True) as tx:
            for key in ("x", "y/z"):
                raw = key.encode()
                commit.add_entry(
                    a, fm, tx, key, raw, memoryview(key.encode() * 100), 100 * len(key), 1 << 16
                )
        assert a.tx is None and tx.done and tx.failure is None
        assert space.space(a, fm).file_size == path.stat().st_size
    finally:
        fm.close()
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert z.read("y/z") == b"y/z" * 100


def test_abort_without_a_store_leaves_the_committed_archive(tmp_path: Path) -> None:
    """An aborted transaction's entries are forgotten and its bytes given back: settled,
    the file is byte for byte what the last commit left, whether the entries went into the
    free room the commit kept or needed the directory relocated."""
    files = []
    for name in ("room.zip", "relocated.zip"):
        path = tmp_path / name
        a, fm = _mapped(path)
        try:
            tx = commit.begin(a, fm)
            commit.add_entry(a, fm, tx, "k", b"k", memoryview(b"v" * 10), 10, 1 << 16)
            commit.end(a, fm, tx)
            assert a.cd_offset > a.data_end  # free room kept before the directory
            if name == "relocated.zip":
                commit.settle(a, fm)
                assert a.cd_offset == a.data_end
                committed = path.read_bytes()
            tx = commit.begin(a, fm)
            commit.add_entry(a, fm, tx, "gone", b"gone", memoryview(b"w" * 1000), 1000, 1 << 16)
            assert tx.relocated == (name == "relocated.zip")
            commit.abort(a, fm, tx)
            assert "gone" not in a.index and list(a.index) == ["k"]
            commit.settle(a, fm)
            assert space.space(a, fm).free_bytes == 0
        finally:
            fm.close()
        files.append(path.read_bytes())
    assert files[0] == files[1] == committed


def test_recovery_without_a_store_rolls_back_a_torn_entry(tmp_path: Path) -> None:
    """Bytes of an entry past the committed directory (a writer killed before its commit) go
    when the archive is loaded for writing, with a warning."""
    path = tmp_path / "a.zip"
    a, fm = _mapped(path)
    try:
        with commit.write_step(a, fm) as tx:
            commit.add_entry(a, fm, tx, "k", b"k", memoryview(b"v" * 10), 10, 1 << 16)
    finally:
        fm.close()
    committed = path.read_bytes()
    path.write_bytes(committed + b"torn entry")
    a = Archive(str(path), max_file_size=1 << 30)
    fm = FileMapping(str(path), True, a.reserve_size())
    try:
        with pytest.warns(errors.RecoveryWarning, match="removed 10 bytes"):
            recover.load_writable(a, fm)
        assert list(a.index) == ["k"]
    finally:
        fm.close()
    assert path.read_bytes() == committed
