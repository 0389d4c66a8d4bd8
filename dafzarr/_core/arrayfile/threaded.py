"""The ``*_async`` methods of :class:`~dafzarr.arrayfile.ArrayFile`: the synchronous method
run in a worker thread, documented by the synchronous method's sections (its parameters,
returns and errors are the same) and an example of its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["in_thread"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

# The first numpydoc section after the summary, and the examples section.
_FIRST_SECTION = re.compile(r"^(Parameters|Returns|Raises)\n-+$", re.MULTILINE)
_EXAMPLES = re.compile(r"^Examples\n-+$", re.MULTILINE)


def in_thread(
    method: Callable[Concatenate[S, P], R], example: str
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """``method`` as a coroutine that runs it in a worker thread (``asyncio.to_thread``),
    named ``<method>_async``, with the signature of ``method`` and a docstring made of its
    sections and ``example`` (doctest lines, unindented)."""

    async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    functools.update_wrapper(run, method)
    run.__name__ += "_async"
    run.__qualname__ += "_async"
    doc = inspect.cleandoc(method.__doc__ or "")
    first, examples = _FIRST_SECTION.search(doc), _EXAMPLES.search(doc)
    sections = doc[first.start() if first else len(doc) : examples.start() if examples else None]
    run.__doc__ = (
        f":meth:`{method.__name__}` in a worker thread.\n\n{sections.rstrip()}\n\n"
        f"Examples\n--------\n{inspect.cleandoc(example)}\n"
    )
    return run
