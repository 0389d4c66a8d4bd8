"""Docstrings written once: a method implementing an API takes the docstring of the place
where that API is documented (:func:`documented_by`), instead of a second copy of it.

``help()``, :func:`inspect.getdoc` and Sphinx see the full text on every class; the method
records where it comes from as ``__doc_source__``.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Documented", "documented_by"]

#: A function (or method) given a docstring.
Documented = TypeVar("Documented", bound=Callable[..., Any])


def documented_by(
    source: Callable[..., Any], *, raises: str = "", notes: str = ""
) -> Callable[[Documented], Documented]:
    """Give the decorated function the docstring of ``source``.

    ``raises`` (numpydoc entries) is added at the end of the ``Raises`` section and ``notes``
    becomes a ``Notes`` section before ``Examples``: what the decorated function does beyond
    what ``source`` says. Apply it outside other decorators (``contextmanager``)."""
    text = inspect.cleandoc(source.__doc__ or "")
    if raises:
        text = _extend_section(text, "Raises", textwrap.dedent(raises).strip("\n"))
    if notes:
        text = _insert_section(text, "Notes", textwrap.dedent(notes).strip("\n"), before="Examples")
    origin = getattr(source, "__doc_source__", source)

    def decorate(function: Documented) -> Documented:
        function.__doc__ = text
        vars(function)["__doc_source__"] = origin
        return function

    return decorate


def _headers(lines: list[str]) -> list[int]:
    """The line numbers of the numpydoc section headers (a title over a dashed line)."""
    return [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip() and set(lines[i + 1].strip()) == {"-"}
        if len(lines[i + 1].strip()) == len(lines[i].strip())
    ]


def _extend_section(text: str, title: str, body: str) -> str:
    """``text`` with ``body`` appended to its section ``title``."""
    lines = text.splitlines()
    headers = _headers(lines)
    start = next(i for i in headers if lines[i].strip() == title)
    end = next((i for i in headers if i > start), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join([*lines[:end], *body.splitlines(), *lines[end:]])


def _insert_section(text: str, title: str, body: str, *, before: str) -> str:
    """``text`` with a new section ``title`` placed before the section ``before``."""
    lines = text.splitlines()
    at = next(i for i in _headers(lines) if lines[i].strip() == before)
    section = [title, "-" * len(title), *body.splitlines(), ""]
    return "\n".join([*lines[:at], *section, *lines[at:]])
