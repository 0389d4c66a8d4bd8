"""A method documented by another takes its docstring, with what it adds in place."""

from __future__ import annotations

import inspect

from dafzarr._core.documented import documented_by


def source(name: str) -> int:
    """Count.

    Parameters
    ----------
    name : str
        A name.

    Returns
    -------
    int
        The count.

    Raises
    ------
    KeyError
        ``name`` is unknown.

    Examples
    --------
    >>> 1
    1
    """
    return 0


def test_the_docstring_is_the_sources() -> None:
    @documented_by(source)
    def method(name: str) -> int:
        return 1

    assert inspect.getdoc(method) == inspect.getdoc(source)
    assert vars(method)["__doc_source__"] is source
    assert method("x") == 1

    @documented_by(method)
    def again(name: str) -> int:
        return 2

    assert vars(again)["__doc_source__"] is source


def test_raises_and_notes_go_in_their_sections() -> None:
    @documented_by(
        source,
        raises="""
        ValueError
            ``name`` is empty.
        """,
        notes="Counted twice.",
    )
    def method(name: str) -> int:
        return 1

    doc = inspect.getdoc(method) or ""
    assert doc.endswith(
        "KeyError\n    ``name`` is unknown.\nValueError\n    ``name`` is empty.\n\n"
        "Notes\n-----\nCounted twice.\n\nExamples\n--------\n>>> 1\n1"
    )
    assert doc.startswith(inspect.getdoc(source).split("Raises")[0])  # type: ignore[union-attr]
