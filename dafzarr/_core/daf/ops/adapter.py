"""Running a computation on a data set under the names it expects (DataAxesFormats.jl's
``adapter``, as dafpy's context manager).

The computation sees a chain of a read-only view of the data set (its inputs, renamed or
subset by queries) and an empty writable data set that captures everything it writes; when
the block ends normally, a view of the chain (its outputs, renamed back) is copied into the
data set with :func:`~dafzarr.daf.ops.copy_all`. If the block raises, nothing is copied.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ....errors import InvalidArgumentError
from ..chain import chain_writer
from ..view import viewer
from ..zarrdaf import memory_daf
from .copy_all import copy_all

__all__ = ["adapter"]


@contextlib.contextmanager
def adapter(daf: Any, *, input_axes: Any = None, input_data: Any = None,
            capture: Callable[..., Any] = memory_daf, output_axes: Any = None,
            output_data: Any = None, empty: Any = None, relayout: bool = True,
            overwrite: bool = False) -> Iterator[Any]:
    """A context manager that yields ``daf`` as a computation expects it, and copies the
    computation's outputs back into ``daf`` when the block ends without an error.

    ``with adapter(daf, input_axes=..., input_data=..., output_axes=..., output_data=...)
    as adapted:`` yields a writer chain (named ``<daf>.adapted``) of
    ``viewer(daf, axes=input_axes, data=input_data)`` (``<daf>.input``: omitted axes are
    every axis, given ``data`` exposes only its keys) and ``capture(name="<daf>.capture")``
    (an empty writable data set, in memory by default), which receives every write. On
    normal exit, ``viewer(adapted, axes=output_axes, data=output_data)``
    (``<daf>.output``) is copied into ``daf`` by
    :func:`~dafzarr.daf.ops.copy_all` with ``empty``, ``relayout`` and ``overwrite``.

    A subset input (``input_axes={"cell": "@ cell [ is_good ]"}``) gives outputs over the
    subset, which ``empty`` fills for the other entries; renamed inputs
    (``{"obs": "@ cell"}``) need the outputs renamed back (``output_axes={"cell": "@ obs"}``),
    else the copy creates the renamed axis in ``daf``. With all four of ``input_axes``,
    ``input_data``, ``output_axes`` and ``output_data`` ``None`` the adapter would change
    nothing: :class:`~dafzarr.errors.InvalidArgumentError` (``no-op adapter``).
    """
    if input_axes is None and input_data is None and output_axes is None \
            and output_data is None:
        raise InvalidArgumentError(f"no-op adapter for the daf data: {daf.name}\n(give "
                                   "input_axes, input_data, output_axes or output_data)")
    base = daf.name
    inputs = viewer(daf, axes=input_axes, data=input_data, name=f"{base}.input")
    captured = capture(name=f"{base}.capture")
    adapted = chain_writer([inputs, captured], name=f"{base}.adapted")
    yield adapted
    outputs = viewer(adapted, axes=output_axes, data=output_data, name=f"{base}.output")
    copy_all(destination=daf, source=outputs, empty=empty, relayout=relayout,
             overwrite=overwrite)
