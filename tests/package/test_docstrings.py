"""Every public entry point has a numpydoc docstring a user can act on, and its examples run.

An entry point is a function or class a public module lists in ``__all__`` (errors and
warnings aside: they are raised, not called) and every public method of such a class. Each
has the sections ``Parameters`` (naming exactly the parameters of its signature), ``Returns``
(or ``Yields``; unless it returns ``None``), ``Raises`` and ``Examples``; a property has a
summary line. The examples are run as doctests, each in a fresh working directory.
"""

from __future__ import annotations

import difflib
import doctest
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

import dafzarr

PUBLIC_MODULES = (
    "dafzarr",
    "dafzarr.zipstore",
    "dafzarr.arrayfile",
    "dafzarr.daf",
    "dafzarr.daf.ops",
    "dafzarr.daf.query",
    "dafzarr.refs",
    "dafzarr.anndata",
    "dafzarr.cli",
)

# Entry points defined under these modules of the private layer are listed but not checked
# yet: their docstrings are still being written.
PENDING: tuple[str, ...] = ()


def _own(obj: Any) -> bool:
    return (getattr(obj, "__module__", "") or "").startswith("dafzarr")


def _public_classes() -> set[type]:
    return {
        obj
        for module in PUBLIC_MODULES
        for obj in vars(importlib.import_module(module)).values()
        if inspect.isclass(obj)
        and obj.__name__ in getattr(importlib.import_module(module), "__all__", ())
    }


def _methods(cls: type) -> Iterator[tuple[str, Any]]:
    """The public methods and properties of ``cls``, but those that override a method of a
    public base class of the package (documented, and checked, there)."""
    public = _public_classes()
    bases = [base for base in cls.__mro__[1:] if _own(base) and base in public]
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or name.isupper():  # private, or a constant
            continue
        if any(name in vars(base) for base in bases) and name in vars(cls):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            yield name, raw
        elif isinstance(raw, (staticmethod, classmethod)) and _own(raw.__func__):
            yield name, raw.__func__
        elif inspect.isfunction(member) and _own(member):
            yield name, member


def entry_points(modules: tuple[str, ...]) -> dict[str, Any]:
    """Qualified name to object: the functions, classes and methods of ``modules``."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not _own(obj) or (
                inspect.isclass(obj) and issubclass(obj, (BaseException, Warning))
            ):
                continue
            if inspect.isclass(obj):
                qual = f"{obj.__module__}.{obj.__qualname__}"
                for key, member in [(qual, obj)] + [
                    (f"{qual}.{method}", member) for method, member in _methods(obj)
                ]:
                    if id(member) not in seen:
                        seen.add(id(member))
                        found[key] = member
            elif callable(obj) and id(obj) not in seen:
                seen.add(id(obj))
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def _parameters(obj: Any) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    names = []
    method = inspect.isclass(obj) or "." in getattr(obj, "__qualname__", "")
    for i, (name, parameter) in enumerate(signature.parameters.items()):
        if method and i == 0 and name in ("self", "cls"):
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            name = f"*{name}"
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            name = f"**{name}"
        names.append(name)
    return names


def _returns_nothing(obj: Any) -> bool:
    if inspect.isclass(obj):
        return True
    try:
        annotation = inspect.signature(obj).return_annotation
    except (TypeError, ValueError):
        return False
    return annotation in (None, "None", inspect.Signature.empty)


def problems(qual: str, obj: Any) -> list[str]:
    """What the docstring of ``obj`` lacks, as sentences naming ``qual``."""
    if isinstance(obj, property):
        doc = inspect.getdoc(obj) or ""
        return [] if doc.strip() else [f"{qual}: no docstring"]
    if not inspect.getdoc(obj):
        return [f"{qual}: no docstring"]
    parsed = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
    found = []
    documented = [p.name.replace(" ", "") for p in parsed["Parameters"]]
    documented = [n for name in documented for n in name.split(",")]
    wanted = _parameters(obj)
    if sorted(documented) != sorted(wanted):
        found.append(f"{qual}: Parameters documents {documented}, the signature has {wanted}")
    if not _returns_nothing(obj) and not (parsed["Returns"] or parsed["Yields"]):
        found.append(f"{qual}: no Returns section")
    if not parsed["Raises"]:
        found.append(f"{qual}: no Raises section")
    if not parsed["Examples"]:
        found.append(f"{qual}: no Examples section")
    return found


def _checked() -> dict[str, Any]:
    return {
        qual: obj
        for qual, obj in entry_points(PUBLIC_MODULES).items()
        if not qual.startswith(PENDING)
    }


def test_entry_points_are_found() -> None:
    found = entry_points(PUBLIC_MODULES)
    print(f"{len(found)} public entry points")
    assert len(found) > 300


@pytest.mark.parametrize("qual", sorted(_checked()))
def test_entry_points_have_numpydoc_sections(qual: str) -> None:
    found = problems(qual, _checked()[qual])
    assert not found, "\n".join(found)


def _examples() -> Iterator[tuple[str, doctest.DocTest]]:
    """The examples of each entry point; examples a docstring shares with another (taken
    from the same place) run once."""
    finder = doctest.DocTestFinder(recurse=False)
    seen: set[tuple[tuple[str, str], ...]] = set()
    for qual, obj in _checked().items():
        target = obj.fget if isinstance(obj, property) else obj
        for test in finder.find(target, qual, globs={"np": np, "dafzarr": dafzarr}):
            key = tuple((example.source, example.want) for example in test.examples)
            if test.examples and key not in seen:
                seen.add(key)
                yield qual, test


def _example_cases() -> list[Any]:
    return [pytest.param(test, id=qual) for qual, test in _examples()]


@pytest.mark.parametrize("test", _example_cases())
def test_examples_run(
    test: doctest.DocTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    try:
        runner.run(test, out=out.append)
    finally:
        test.globs.clear()
    assert runner.failures == 0, "".join(out)


def test_a_missing_section_is_reported() -> None:
    def sample(path: str) -> int:
        """Sum.

        Parameters
        ----------
        path : str
            A path.
        """
        return 0

    assert problems("sample", sample) == [
        "sample: no Returns section",
        "sample: no Raises section",
        "sample: no Examples section",
    ]


# A docstring a method takes from the one place it is written (see
# ``dafzarr._core.documented.documented_by``) names that place as ``__doc_source__``.
NEAR_COPY = 0.8


def _doc_source(obj: Any) -> Any:
    """Where the docstring of ``obj`` is written (``None``: inherited from a base class)."""
    target = obj.fget if isinstance(obj, property) else obj
    if target.__doc__ is None:
        return None
    return getattr(target, "__doc_source__", target)


def near_copies(entries: dict[str, Any]) -> list[str]:
    """The pairs of entry points of one name (a method in several classes) whose docstrings,
    written separately, are near-copies."""
    by_name: dict[str, list[tuple[str, Any, str]]] = {}
    for qual, obj in sorted(entries.items()):
        doc, source = inspect.getdoc(obj), _doc_source(obj)
        if doc and source is not None:
            by_name.setdefault(qual.rsplit(".", 1)[-1], []).append((qual, source, doc))
    found = []
    for same_name in by_name.values():
        for i, (qual, source, doc) in enumerate(same_name):
            for other_qual, other_source, other_doc in same_name[i + 1 :]:
                ratio = difflib.SequenceMatcher(None, doc, other_doc).ratio()
                if source is not other_source and ratio > NEAR_COPY:
                    found.append(f"{qual} ~ {other_qual}: {ratio:.2f}")
    return found


def test_docstrings_are_written_once() -> None:
    found = near_copies(entry_points(PUBLIC_MODULES))
    assert not found, "written twice (take one from the other with documented_by):\n" + (
        "\n".join(found)
    )
