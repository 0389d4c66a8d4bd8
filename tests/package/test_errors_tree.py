"""The exception and warning classes of ``dafzarr.errors``: one tree, exported and documented.

Every class sits under exactly one of a few bases (what went wrong) below
:class:`~dafzarr.errors.DafzarrError`, or under :class:`~dafzarr.errors.DafzarrWarning`; each
is in ``dafzarr.errors.__all__``, a name of the package root, and a row of
``docs/errors.rst`` in the section of its base, whose tree drawing is the classes' own. No
module of the package raises a class from elsewhere.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

import dafzarr
from dafzarr import errors
from tests.helpers import ROOT
from tests.helpers.layout_checks import Raises

DOC = ROOT / "docs" / "errors.rst"

#: The bases under DafzarrError, each a section of docs/errors.rst.
BASES: tuple[type[errors.DafzarrError], ...] = (
    errors.NotFoundError, errors.CorruptDataError, errors.UnsupportedError,
    errors.ArgumentError, errors.StateError, errors.IOFailureError,
)  # fmt: skip
#: Classes directly under DafzarrError, outside the bases (each documented as such).
DIRECT = frozenset({errors.SelfCheckError, errors.DafFormatError})

#: Private signals a module raises and catches itself (never seen by a caller):
#: (module path, class name).
PRIVATE_SIGNALS = frozenset({
    ("_core/daf/values.py", "NotCanonicalError"),     # checked indices: set_matrix writes them again
    ("_core/io/workers.py", "DeadlinePassed"),       # turned into HttpDeadlineError by the reader
    ("_core/io/workers.py", "ForkedAfterUse"),       # the reader starts new workers
    ("_core/io/object.py", "_BodyBroke"),            # a body broke off: retried, then HttpReadError
    ("_core/io/object.py", "_GaveUp"),               # the deadline passed: HttpDeadlineError
    # a stream that does not decode: decode() raises the caller's class (naming the file)
    ("_core/codecs/zstd.py", "ValueError"),
    ("_core/codecs/whole.py", "ValueError"),
    ("_core/codecs/streams.py", "ValueError"),
    # a chunk or segment that does not decode: the reader raises CorruptArrayFileError
    ("_core/arrayfile/types.py", "ValueError"),
    ("_core/arrayfile/segments.py", "ValueError"),
})  # fmt: skip


#: Modules that still raise builtin classes a caller may see (to convert to classes of
#: dafzarr.errors that keep the builtin as a base).
NOT_YET: dict[str, tuple[str, ...]] = {}


def classes() -> dict[str, type[BaseException]]:
    """Every exception or warning class defined in ``dafzarr.errors`` (private ones too)."""
    return {
        name: value
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, errors.DafzarrError | errors.DafzarrWarning)
        and value.__module__ == errors.__name__
    }


def parent(cls: type[BaseException]) -> type[BaseException] | None:
    """The class above ``cls`` in the tree: its first base from ``dafzarr.errors``."""
    return next(
        (
            b
            for b in cls.__bases__
            if b.__module__ == errors.__name__ and not b.__name__.startswith("_")
        ),
        None,
    )


def builtin_bases(cls: type[BaseException]) -> list[str]:
    """The builtin classes ``cls`` names as bases (a private helper stands for its own)."""
    names = []
    for base in cls.__bases__:
        if base.__module__ == errors.__name__ and base.__name__.startswith("_"):
            base = next(b for b in base.__mro__ if b.__module__ == "builtins")
        if base.__module__ == "builtins":
            names.append(base.__name__)
    return names


def tree() -> str:
    """The drawing of the tree of ``docs/errors.rst``: a class per line, its builtin bases in
    parentheses, children sorted by name."""
    public = [c for n, c in classes().items() if not n.startswith("_")]
    lines: list[str] = []

    def draw(cls: type[BaseException], prefix: str, last: bool, top: bool) -> None:
        extra = builtin_bases(cls)
        label = cls.__name__ + (f" ({', '.join(extra)})" if extra else "")
        lines.append(label if top else prefix + ("└── " if last else "├── ") + label)
        kids = sorted((c for c in public if parent(c) is cls), key=lambda c: c.__name__)
        inner = "" if top else prefix + ("    " if last else "│   ")
        for i, kid in enumerate(kids):
            draw(kid, inner, i == len(kids) - 1, False)

    draw(errors.DafzarrError, "", True, True)
    draw(errors.DafzarrWarning, "", True, True)
    return "\n".join(lines)


def test_every_class_is_exported_from_errors_and_the_package_root() -> None:
    public = {n for n in classes() if not n.startswith("_")}
    assert set(errors.__all__) == public
    for name in public:
        assert getattr(dafzarr, name) is getattr(errors, name), name
    assert set(dafzarr.__all__) >= public


def test_every_error_sits_under_exactly_one_base() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        if cls in BASES or cls in (errors.DafzarrError, errors.DafzarrWarning):
            continue
        if issubclass(cls, Warning):
            assert issubclass(cls, errors.DafzarrWarning), name
            continue
        under = [b for b in BASES if issubclass(cls, b)]
        if cls in DIRECT:
            assert not under and parent(cls) is errors.DafzarrError, name
        else:
            assert len(under) == 1, (name, under)


def test_bases_keep_the_builtin_classes() -> None:
    """The bases add a class to every error; none lost a builtin base it had."""
    for cls in BASES:
        assert parent(cls) is errors.DafzarrError
    for name, builtin in [
        ("EntryNotFoundError", KeyError),
        ("ArrayNotFoundError", KeyError),
        ("DafMissingError", KeyError),
        ("DafNotFoundError", FileNotFoundError),
        ("DafQueryParameterError", ValueError),
        ("DafMissingEntryError", ValueError),
        ("InvalidArgumentTypeError", TypeError),
        ("UnsafeCastError", TypeError),
        ("UnsafeCastError", ValueError),
        ("AppendOnlyError", NotImplementedError),
        ("ArchiveLockedError", BlockingIOError),
        ("ScanTimeoutError", TimeoutError),
        ("RecoveryWarning", UserWarning),
    ]:
        assert issubclass(getattr(errors, name), builtin), (name, builtin)
    assert not issubclass(errors.InvalidArgumentTypeError, ValueError)


def test_the_names_query_modules_offered_are_the_errors_classes() -> None:
    from dafzarr._core.daf.query.eval import MissingEntryError
    from dafzarr._core.daf.query.registry import ParameterError

    assert ParameterError is errors.DafQueryParameterError
    assert MissingEntryError is errors.DafMissingEntryError
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a", "b"])
    d.add_axis("type", ["x"])
    d.set_vector("cell", "type", ["x", "y"])
    d.set_vector("type", "color", ["red"])
    with pytest.raises(errors.DafMissingEntryError, match="missing entry: 'y'") as info:
        d.get_np_query("@ cell : type : color")
    assert isinstance(info.value, errors.ArgumentError | ValueError)
    with pytest.raises(errors.DafQueryParameterError, match="does not exist") as bad:
        dafzarr.daf.query.Log(nope="2")
    assert bad.value.param == "nope" and isinstance(bad.value, ValueError)


def sections(text: str) -> dict[str, list[str]]:
    """The class rows of each section of ``docs/errors.rst``, by the base the title names."""
    found: dict[str, list[str]] = {}
    for part in re.split(r"\n(?=[^\n]+\n-{3,}\n)", text):
        title = re.match(r"[^\n]*:class:`~dafzarr\.errors\.(\w+)`[^\n]*\n-{3,}\n", part)
        if title:
            found[title.group(1)] = re.findall(r"\* - :class:`~dafzarr\.errors\.(\w+)`", part)
    return found


@pytest.mark.skipif(not DOC.exists(), reason="the docs are not beside the tests")
def test_the_doc_draws_the_tree_and_lists_each_class_under_its_base() -> None:
    text = DOC.read_text(encoding="utf-8")
    drawn = re.search(r"\.\. code-block:: text\n\n((?:   [^\n]*\n|\n)+)", text)
    assert drawn is not None
    assert drawn.group(1).rstrip("\n").replace("\n   ", "\n")[3:] == tree()
    found = sections(text)
    listed = [n for rows in found.values() for n in rows]
    assert sorted(listed) == sorted(errors.__all__)
    for base, rows in found.items():
        for name in rows:
            assert issubclass(getattr(errors, name), getattr(errors, base)), (base, name)
    for cls in [*BASES, *DIRECT]:
        assert cls.__name__ in found.get(cls.__name__, []) or cls in DIRECT, cls
    for cls in DIRECT:  # documented as outside the bases
        assert cls.__name__ in found["DafzarrError"]


#: OSError and its builtin subclasses (FileNotFoundError, ...).
_OS_ERRORS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, OSError)
)

#: What the Python protocols require: ``__getattr__`` raises ``AttributeError``, an import
#: that cannot work raises ``ImportError``.
PROTOCOL = frozenset({("__getattr__", "AttributeError"), ("", "ImportError")})


def foreign_raises(path: Path) -> set[str]:
    """The classes from outside ``dafzarr.errors`` that a module raises (as
    ``"function: raise Class"``), but abstract stubs' ``NotImplementedError``, the
    protocols' classes, errors built by a helper (``raise _bad(...)``) and a system call's
    failure raised as the system reports it (``OSError(errno, strerror, filename)`` or a
    builtin subclass: an object store's missing or existing object, which the writers turn
    into :class:`~dafzarr.errors.StorageIOError` and the readers into their own errors)."""
    parsed = ast.parse(path.read_text(encoding="utf-8"))
    ours = set(classes())
    local = {  # the local name of each class the module imports from dafzarr.errors
        a.asname or a.name
        for node in ast.walk(parsed)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "errors"
        for a in node.names
        if a.name in ours
    }
    raw = {  # OSError(errno, strerror, filename): a system call's (or object store's) failure
        node.lineno
        for node in ast.walk(parsed)
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and isinstance(node.exc.func, ast.Name)
        and node.exc.func.id in _OS_ERRORS
        and len(node.exc.args) >= 2
    }
    raises = Raises(skip_abstract_stubs=True)
    raises.visit(parsed)
    found = set()
    for line, name, function in raises.found:
        last = name.split(".")[-1].lstrip("_")
        if name in local or name.startswith("errors.") or last[:1].islower() or line in raw:
            continue
        if (function, name) not in PROTOCOL:
            found.add(f"{function or '<module>'}: raise {name}")
    return found


def test_raise_finder_sees_foreign_classes_only(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from ..errors import CorruptArchiveError as Bad, EntryExistsError\n"
        "def f(x):\n    if x:\n        raise Bad('x')\n    raise EntryExistsError\n"
        "def g():\n    raise ValueError('x')\n"
        "def h():\n    raise _refuse('x')\n"
        "def __getattr__(name):\n    raise AttributeError(name)\n"
        "def k(e):\n    raise OSError(e, 'x', 'f')\n"
    )  # fmt: skip
    assert foreign_raises(module) == {"g: raise ValueError"}


def test_no_module_raises_a_class_from_elsewhere() -> None:
    """Every class a module of the package raises is one of ``dafzarr.errors`` (under
    whatever name the module imports it), but the private signals a module raises and
    catches itself."""
    package = ROOT / "dafzarr"
    wrong = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        for found in sorted(foreign_raises(path)):
            name = found.rsplit(" ", 1)[-1]
            if (rel, name) not in PRIVATE_SIGNALS and name not in NOT_YET.get(rel, ()):
                wrong.append(f"{rel}: {found}")
    assert not wrong, "\n".join(wrong)


def test_the_lists_of_exceptions_are_current() -> None:
    """A module that no longer raises a builtin leaves :data:`NOT_YET`, a private signal no
    longer raised leaves :data:`PRIVATE_SIGNALS`."""
    package = ROOT / "dafzarr"
    listed = [*((rel, n) for rel, names in NOT_YET.items() for n in names), *PRIVATE_SIGNALS]
    for rel, name in listed:
        raised = {f.rsplit(" ", 1)[-1] for f in foreign_raises(package / rel)}
        assert name in raised, (rel, name)


def test_errors_that_were_builtins_keep_their_builtin(tmp_path: Path) -> None:
    """A failure once reported with a builtin class raises a class of ``dafzarr.errors``
    that still is that builtin."""
    from dafzarr.arrayfile import ArrayFile, FileConfig

    missing = tmp_path / "none.zip"
    with pytest.raises(errors.MissingFileError, match="no such file") as gone:
        dafzarr.MmapZipStore(missing, "r")
    assert isinstance(gone.value, FileNotFoundError) and gone.value.filename == str(missing)
    with pytest.raises(errors.InvalidArgumentError, match="codec must be") as codec:
        FileConfig(codec="gzip")  # type: ignore[arg-type]
    assert isinstance(codec.value, ValueError)
    af = ArrayFile.create(str(tmp_path / "a.af"))
    af.define_array("x", "i4", ["i"], [4])
    with pytest.raises(errors.OutOfBoundsError, match="does not fit") as bounds:
        af.read_array("x", [2], [3])
    assert isinstance(bounds.value, IndexError)
    with pytest.raises(errors.FormatLimitError, match="u32") as limit:
        af.define_array("y", "i4", ["i"], [1 << 33])
    assert isinstance(limit.value, OverflowError)
    af.close()
    with pytest.raises(errors.ClosedError, match="closed") as closed:
        af.list_arrays()
    assert isinstance(closed.value, ValueError)
    with pytest.raises(errors.InvalidArgumentTypeError, match="a query is a str") as query:
        dafzarr.parse_query(1)  # type: ignore[arg-type]
    assert isinstance(query.value, TypeError)


def test_the_package_root_takes_its_errors_from_the_one_list() -> None:
    """The package root names no class of ``dafzarr.errors`` itself: it star-imports the
    module and extends its ``__all__`` with ``errors.__all__``, so a new class is exported
    (and seen by type checkers) from one list."""
    text = (ROOT / "dafzarr" / "__init__.py").read_text(encoding="utf-8")
    assert [n for n in errors.__all__ if re.search(rf"\b{n}\b", text)] == []
    assert dafzarr.__all__[-len(errors.__all__) :] == errors.__all__


def test_daf_format_errors_say_damaged_or_unsupported(tmp_path: Path) -> None:
    """A damaged Daf data set raises :class:`~dafzarr.errors.CorruptDafError` (a
    ``CorruptDataError``), a format version this reader does not handle
    :class:`~dafzarr.errors.UnsupportedDafError` (an ``UnsupportedError``); both are the
    ``DafFormatError`` (and ``ValueError``) they were."""
    root = tmp_path / "x.daf.zarr"
    dafzarr.open_daf(root, "w").close()
    (root / "daf" / "0").write_bytes(b"\x02\x00")
    with pytest.raises(errors.UnsupportedDafError, match="incompatible format version") as new:
        dafzarr.open_daf(root)
    assert isinstance(new.value, errors.UnsupportedError | errors.DafFormatError | ValueError)
    assert not isinstance(new.value, errors.CorruptDataError)
    (root / "daf" / "0").write_bytes(b"\x01")  # a marker cut short
    with pytest.raises(errors.CorruptDafError, match="holds 1 bytes, expected 2") as bad:
        dafzarr.open_daf(root)
    assert isinstance(bad.value, errors.CorruptDataError | errors.DafFormatError | ValueError)
    assert not isinstance(bad.value, errors.UnsupportedError)


def test_a_whole_read_over_its_limit_is_an_argument_error(tmp_path: Path) -> None:
    """Every byte source refuses a whole read larger than the limit it was given with a
    class of ``dafzarr.errors`` that still is the ``ValueError`` it was."""
    from dafzarr._core.io.local import FileSource
    from dafzarr._core.io.memory import MemorySource

    path = tmp_path / "blob"
    path.write_bytes(b"x" * 10)
    local = FileSource(str(path))
    for source in (local, MemorySource(b"x" * 10, where="blob")):
        assert bytes(source.read_all(10)) == b"x" * 10
        with pytest.raises(errors.InvalidArgumentError, match="10 bytes, more than") as big:
            source.read_all(9)
        assert isinstance(big.value, ValueError)
    local.close()


def test_a_hostile_thread_count_from_the_environment_is_an_argument_error() -> None:
    """The compiled kernels raise classes of ``dafzarr.errors`` too: a
    ``DAFZARR_NUM_THREADS`` that is not a number fails ``import dafzarr`` with an
    :class:`~dafzarr.errors.InvalidArgumentError` (still the ``ValueError`` it was)."""
    import os
    import subprocess
    import sys

    code = (
        "try:\n    import dafzarr\n"
        "except Exception as exc:\n"
        "    print(' '.join(c.__name__ for c in type(exc).__mro__), '|', exc)\n"
    )
    env = {**os.environ, "DAFZARR_NUM_THREADS": "many"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    names, _, message = out.partition(" | ")
    assert names.split()[:4] == [
        "InvalidArgumentError",
        "ArgumentError",
        "DafzarrError",
        "ValueError",
    ], out
    assert "DAFZARR_NUM_THREADS must be an integer, not 'many'" in message
