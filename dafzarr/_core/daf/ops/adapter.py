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
def adapter(
    daf: Any,
    *,
    input_axes: Any = None,
    input_data: Any = None,
    capture: Callable[..., Any] = memory_daf,
    output_axes: Any = None,
    output_data: Any = None,
    empty: Any = None,
    relayout: bool = True,
    overwrite: bool = False,
) -> Iterator[Any]:
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

    Parameters
    ----------
    daf : ZarrDaf, view or chain
        The data set: read through the input view, written by the final copy.
    input_axes : mapping, optional
        The axes the computation sees, as for :func:`~dafzarr.viewer` (``{"obs": "@ cell"}``
        renames, ``"@ cell [ is_good ]"`` subsets; default: every axis as it is).
    input_data : mapping, optional
        The properties the computation sees, as for :func:`~dafzarr.viewer`, by key
        (``{("obs", "age"): "@ cell : age"}``); default: every property of the exposed axes.
    capture : callable, default memory_daf
        Makes the writable data set that receives the computation's writes; called as
        ``capture(name=...)``.
    output_axes : mapping, optional
        The axes copied back, as for :func:`~dafzarr.viewer` over the adapted chain
        (``{"cell": "@ obs"}`` renames back; default: every axis).
    output_data : mapping, optional
        The properties copied back, as for :func:`~dafzarr.viewer` (default: every
        property of the copied axes).
    empty : mapping, optional
        Fill values of copied properties for the entries ``daf`` has and the outputs lack
        (a subset input), as for :func:`~dafzarr.daf.ops.copy_all`.
    relayout : bool, default True
        Whether copied matrices are stored in both layouts, as for
        :func:`~dafzarr.daf.ops.copy_all`.
    overwrite : bool, default False
        Whether copied outputs replace properties ``daf`` already has.

    Returns
    -------
    contextlib.AbstractContextManager
        Yields the adapted writer chain (named ``<daf>.adapted``) the computation reads and
        writes.

    Raises
    ------
    InvalidArgumentError
        All four of ``input_axes``, ``input_data``, ``output_axes`` and ``output_data`` are
        ``None`` (``no-op adapter``).
    DafMissingError, DafQueryError
        A view names an axis or property that does not exist, or an invalid query (as
        :func:`~dafzarr.viewer`).
    DafExistsError, DafMismatchError, DafReadOnlyError, UnsafeCastError
        When the block ends: the copy back refuses an existing output (without
        ``overwrite``), entries that cannot be aligned or filled, a read-only ``daf`` or
        an inexact conversion (as :func:`~dafzarr.daf.ops.copy_all`; nothing is copied).

    Examples
    --------
    >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
    >>> _ = daf.set_vector("cell", "age", [30, 40])
    >>> with dafzarr.adapter(
    ...         daf, input_axes={"obs": "@ cell"}, input_data={("obs", "age"): "@ cell : age"},
    ...         output_axes={"cell": "@ obs"},
    ...         output_data={("cell", "years"): "@ obs : years"}) as adapted:
    ...     _ = adapted.set_vector("obs", "years", adapted.get_np_vector("obs", "age") + 1)
    ...     print(adapted.name, sorted(adapted.axes_set()))
    cells...adapted ['obs']
    >>> daf.get_np_vector("cell", "years").tolist(), sorted(daf.axes_set())
    ([31, 41], ['cell'])
    """
    if input_axes is None and input_data is None and output_axes is None and output_data is None:
        raise InvalidArgumentError(
            f"no-op adapter for the daf data: {daf.name}\n(give "
            "input_axes, input_data, output_axes or output_data)"
        )
    base = daf.name
    inputs = viewer(daf, axes=input_axes, data=input_data, name=f"{base}.input")
    captured = capture(name=f"{base}.capture")
    adapted = chain_writer([inputs, captured], name=f"{base}.adapted")
    yield adapted
    outputs = viewer(adapted, axes=output_axes, data=output_data, name=f"{base}.output")
    copy_all(destination=daf, source=outputs, empty=empty, relayout=relayout, overwrite=overwrite)
