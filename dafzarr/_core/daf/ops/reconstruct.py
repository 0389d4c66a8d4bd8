"""Rebuilding an axis that AnnData-style data sets only hold expanded along another axis.

AnnData has two axes, so per-type data of single cells is stored per cell: a ``type`` vector
of the cells and, say, a ``color`` vector of the cells that repeats the color of each type.
:func:`reconstruct_axis` turns the distinct values of such a vector into a new axis and moves
every vector that is constant within each value onto it, as DataAxesFormats.jl's
``reconstruct_axis!`` does.

Decisions where DataAxesFormats.jl is silent or differs:

* ``properties_defaults`` (missing in dafpy) gives the value of an entry of an existing axis
  that no element uses; it is converted to the property's element type without a silent cast.
* With ``empty_implicit`` set to another string, ``""`` still marks "no value" too.
* A float ``empty_implicit`` of NaN marks the NaN elements; NaN property values count as
  equal to each other (DataAxesFormats.jl finds NaN inconsistent with itself).
* Values become entry names as Julia's ``string`` prints them (``1``, ``0.5``, ``true``),
  except that ``float32`` values print with their own shortest digits (``0.1``, not
  ``0.1f0``).
* Every check (missing entries, inconsistent values, missing defaults, a vector already on
  the new axis) is made before the first write, and on a ZIP data set all writes are one
  commit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....errors import DafExistsError, DafMismatchError, DafReadOnlyError, InvalidArgumentError
from ...aliases import Array
from ...casting import check_value_fits
from ..query.literals import format_float
from ..zarrdaf import ZarrDaf
from .contract import check_daf

__all__ = ["reconstruct_axis", "value_text"]


def value_text(value: Any) -> str:
    """A value as Julia's ``string`` prints it: ``true``/``false``, decimal integers,
    shortest-digit floats (``1.0``, ``0.5``, ``1.0e-5``, ``NaN``), strings as they are."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, np.floating) and value.dtype != np.float64:
        return _float_text(str(value))
    if isinstance(value, float | np.floating):
        return format_float(float(value))
    return str(value)


def _float_text(text: str) -> str:
    """numpy's shortest digits of a narrow float (``1e-05``) in Julia's form (``1.0e-5``)."""
    special = {"nan": "NaN", "inf": "Inf", "-inf": "-Inf"}
    if text in special:
        return special[text]
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{int(exponent)}"


@dataclass
class _ReconstructPlan:
    """Everything :func:`reconstruct_axis` writes, computed before the first write."""

    axis: str
    new_entries: list[str] | None  # None: the axis exists
    implicit_keys: Array | None  # None: the implicit vector stays as it is
    migrated: list[tuple[str, Array]] = field(default_factory=list)
    empties: dict[str, Any] = field(default_factory=dict)


def reconstruct_axis(
    daf: Any,
    *,
    existing_axis: str,
    implicit_axis: str,
    rename_axis: str | None = None,
    empty_implicit: Any = None,
    implicit_properties: Iterable[str] | None = None,
    skipped_properties: Iterable[str] | None = None,
    properties_defaults: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
) -> dict[str, Any]:
    """Create the axis that the vector ``implicit_axis`` of ``existing_axis`` implies, and
    move the vectors that are per-value onto it (in place).

    Parameters
    ----------
    daf
        A writable data set (:class:`~dafzarr.ZarrDaf`, a writer chain, a contract proxy).
    existing_axis
        The axis holding the expanded data (e.g. ``"cell"``).
    implicit_axis
        Its vector naming the implicit entry of each element (e.g. ``"type"``).
    rename_axis
        The new axis' name (default: ``implicit_axis``).
    empty_implicit
        The value of ``implicit_axis`` that means "no entry" (default: ``""`` for strings,
        none for other types). A non-string ``implicit_axis`` vector, or a non-empty
        ``empty_implicit``, is rewritten as strings with ``""`` for no entry.
    implicit_properties
        The vectors to move; each must be consistent (one value per implicit entry), else
        :class:`~dafzarr.errors.DafMismatchError`. Default: every vector of
        ``existing_axis`` that is consistent (the others stay).
    skipped_properties
        Vectors never moved.
    properties_defaults
        Per moved vector, the value of the entries of an already existing axis that no
        element uses (else :class:`~dafzarr.errors.DafMismatchError`).

    Returns
    -------
    dict
        For each moved vector, the value of the elements without an entry (``None`` when
        every element has one): the value lost by the move (use it as a query default,
        ``@ cell : type ?? magenta : color``).

    The distinct values become the entries in sorted order (``[10, 9, 2]`` gives ``2``,
    ``9``, ``10``); when the axis exists, every used value must be one of its entries
    (``missing used entry: ...``), and its entries and order are kept. Moved vectors keep
    their element type and are deleted from ``existing_axis``. Nothing is written unless
    every check passes.

    Raises
    ------
    DafMissingError
        ``existing_axis`` or its vector ``implicit_axis`` is missing.
    DafMismatchError
        A vector of ``implicit_properties`` has several values in one group, a used value
        is no entry of the existing axis (``missing used entry: ...``), or an entry of an
        existing axis that no element uses has no ``properties_defaults`` value.
    DafExistsError
        The axis exists and already has a vector that would be moved onto it.
    DafReadOnlyError
        ``daf`` is read-only.
    InvalidArgumentError
        ``implicit_properties`` or ``skipped_properties`` is a string or names the
        implicit axis, ``properties_defaults`` is malformed, or a default is not of its
        vector's element type.
    InvalidArgumentTypeError
        ``daf`` is not a Daf data set.

    Examples
    --------
    >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B", "C", "D"])
    >>> _ = daf.set_vector("cell", "type", ["T", "B", "", "T"])
    >>> _ = daf.set_vector("cell", "color", ["red", "blue", "gray", "red"])
    >>> dafzarr.reconstruct_axis(daf, existing_axis="cell", implicit_axis="type")
    {'color': 'gray'}
    >>> daf.axis_np_entries("type").tolist(), daf.get_np_vector("type", "color").tolist()
    (['B', 'T'], ['blue', 'red'])
    >>> daf.get_np_query("@ cell : type ?? gray : color").tolist()
    ['red', 'blue', 'gray', 'red']
    """
    check_daf(daf, f"for reconstructing the axis: {implicit_axis}")
    defaults = _defaults(properties_defaults)
    implicit = _names(implicit_properties, "implicit_properties", implicit_axis)
    skipped = _names(skipped_properties, "skipped_properties", implicit_axis)
    if getattr(daf, "read_only", False):
        raise DafReadOnlyError(f"can't modify the read-only daf data: {daf.name}")
    axis = implicit_axis if rename_axis is None else rename_axis
    plan = _plan(
        daf, existing_axis, implicit_axis, axis, empty_implicit, implicit, skipped, defaults
    )
    if isinstance(daf, ZarrDaf):
        with daf._changing(
            f"reconstructing the axis {axis} from the vector "
            f"{implicit_axis} of the axis {existing_axis}"
        ):
            _write(daf, existing_axis, implicit_axis, plan)
    else:
        _write(daf, existing_axis, implicit_axis, plan)
    return plan.empties


def _defaults(given: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> dict[str, Any]:
    if given is None:
        return {}
    pairs = given.items() if isinstance(given, Mapping) else given
    out: dict[str, Any] = {}
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise InvalidArgumentError(
                f"invalid properties_defaults item: {pair!r} "
                "(expected a mapping or (property, value) pairs)"
            )
        name, value = pair
        if not isinstance(name, str):
            raise InvalidArgumentError(f"invalid property name: {name!r}")
        if not isinstance(value, str | bool | int | float | np.generic):
            raise InvalidArgumentError(
                f"invalid property default: {value!r}\nfor the property: {name}"
            )
        out[name] = value
    return out


def _names(given: Iterable[str] | None, what: str, implicit_axis: str) -> set[str] | None:
    if given is None:
        return None
    if isinstance(given, str):
        raise InvalidArgumentError(
            f"{what} must be a collection of names, not the string {given!r}"
        )
    names = set(given)
    if implicit_axis in names:
        raise InvalidArgumentError(f"{what} contains the implicit axis: {implicit_axis}")
    return names


def _empty_mask(values: Array, marker: Any, implicit_axis: str, daf_name: str) -> Array:
    """Where ``values`` hold no entry: the marker (and ``""`` for strings)."""
    is_str = values.dtype.kind in "OUS"
    if marker is None:
        return np.zeros(len(values), dtype=bool)
    if is_str != isinstance(marker, str) or not isinstance(
        marker, str | bool | int | float | np.generic
    ):
        kind = "strings" if is_str else str(values.dtype)
        raise InvalidArgumentError(
            f"empty_implicit: {marker!r} is not a value of the vector: {implicit_axis}\n"
            f"which holds {kind}\nin the daf data: {daf_name}"
        )
    if is_str:
        return np.asarray((values == marker) | (values == ""), dtype=bool)
    if isinstance(marker, float | np.floating) and math.isnan(marker):
        return (
            np.asarray(np.isnan(values), dtype=bool)
            if values.dtype.kind == "f"
            else np.zeros(len(values), dtype=bool)
        )
    return np.asarray(values == marker, dtype=bool)


def _plan(
    daf: Any,
    existing_axis: str,
    implicit_axis: str,
    axis: str,
    empty_implicit: Any,
    implicit: set[str] | None,
    skipped: set[str] | None,
    defaults: dict[str, Any],
) -> _ReconstructPlan:
    values = np.asarray(daf.get_np_vector(existing_axis, implicit_axis))
    is_str = values.dtype.kind in "OUS"
    marker = "" if is_str and empty_implicit is None else empty_implicit
    rewrite = not is_str or empty_implicit not in (None, "")
    empty = _empty_mask(values, marker, implicit_axis, daf.name)
    uniques, inverse = _distinct(values[~empty])
    texts = [value_text(u) for u in uniques.tolist()]
    if daf.has_axis(axis):
        entries = [str(e) for e in daf.axis_np_entries(axis)]
        known = set(entries)
        for text in texts:
            if text not in known:
                raise DafMismatchError(
                    f"missing used entry: {text}\nfrom the existing "
                    f"reconstructed axis: {implicit_axis}\n"
                    f"in the daf data: {daf.name}"
                )
        plan = _ReconstructPlan(axis, None, None)
    else:
        entries = texts
        plan = _ReconstructPlan(axis, list(texts), None)
    # Group of each element: its value's position in ``texts``, or len(texts) for no entry.
    groups = np.full(len(values), len(texts), dtype=np.int64)
    groups[~empty] = inverse
    if rewrite:
        keys = np.empty(len(values), dtype=object)
        keys[empty] = ""
        keys[~empty] = np.asarray(texts, dtype=object)[inverse] if texts else []
        plan.implicit_keys = keys
    # The first element of each group (-1: none).
    first_of = np.full(len(texts) + 1, len(values), dtype=np.int64)
    np.minimum.at(first_of, groups, np.arange(len(values), dtype=np.int64))
    first_of[first_of == len(values)] = -1
    entry_groups = {t: g for g, t in enumerate(texts)}
    context = (existing_axis, implicit_axis, daf.name)
    for name in _candidates(daf, existing_axis, implicit_axis, implicit, skipped):
        prop = np.asarray(daf.get_np_vector(existing_axis, name))
        explicit = implicit is not None
        if not _consistent(prop, groups, first_of, texts, name, explicit, context):
            continue
        vector = _entry_values(prop, first_of, entries, entry_groups, name, defaults, daf.name)
        if plan.new_entries is None and daf.has_vector(axis, name):
            raise DafExistsError(
                f"existing vector: {name}\nfor the axis: {axis}\nin the daf data: {daf.name}"
            )
        plan.migrated.append((name, vector))
        at = int(first_of[len(texts)])
        plan.empties[name] = None if at < 0 else _plain(prop[at])
    return plan


def _distinct(values: Array) -> tuple[Array, Array]:
    """The distinct values, sorted, and the position of each value among them (a hash
    factorization with pandas, sorting only the distinct values; numpy's sort otherwise)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with the AnnData and query extras
        uniques, inverse = np.unique(values, return_inverse=True)
        return uniques, inverse.reshape(-1)
    strings = values.dtype.kind in "OUS"
    codes, found = pd.factorize(
        values.astype(object, copy=False) if strings else values, use_na_sentinel=False
    )
    distinct = np.asarray(found, dtype=object if strings else values.dtype)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order], rank[np.asarray(codes)]


def _candidates(
    daf: Any,
    existing_axis: str,
    implicit_axis: str,
    implicit: set[str] | None,
    skipped: set[str] | None,
) -> list[str]:
    names = set(daf.vectors_set(existing_axis)) - {implicit_axis}
    if implicit is not None:
        names &= implicit
    if skipped is not None:
        names -= skipped
    return sorted(names)


def _consistent(
    prop: Array,
    groups: Array,
    first_of: Array,
    texts: list[str],
    name: str,
    explicit: bool,
    context: tuple[str, str, str],
) -> bool:
    """Whether every element has its group's first value; an inconsistent explicit property
    is an error naming the first element that differs."""
    rep = prop[first_of[groups]]
    same = np.asarray(prop == rep, dtype=bool)
    if prop.dtype.kind == "f":
        same |= np.isnan(prop) & np.isnan(rep)
    if bool(same.all()):
        return True
    if not explicit:
        return False
    at = int(np.argmin(same))
    group = int(groups[at])
    key = texts[group] if group < len(texts) else ""
    existing_axis, implicit_axis, daf_name = context
    raise DafMismatchError(
        f"inconsistent values: {value_text(prop[at])} != {value_text(rep[at])}\n"
        f"of the property: {name}\nfor the same implicit axis value: {key}\n"
        f"of the axis: {existing_axis}\nfor the reconstructed axis: {implicit_axis}\n"
        f"in the daf data: {daf_name}"
    )


def _entry_values(
    prop: Array,
    first_of: Array,
    entries: list[str],
    entry_groups: dict[str, int],
    name: str,
    defaults: dict[str, Any],
    daf_name: str,
) -> Array:
    """The property's value for each entry of the new axis (a default for unused ones)."""
    out = np.empty(len(entries), dtype=prop.dtype)
    unused = []
    for i, entry in enumerate(entries):
        group = entry_groups.get(entry)
        if group is None:
            unused.append(i)
        else:
            out[i] = prop[first_of[group]]
    if unused:
        if name not in defaults:
            raise DafMismatchError(
                f"no default value specified for the unused entry: {entries[unused[0]]}\n"
                f"of the reconstructed property: {name}\nin the daf data: {daf_name}"
            )
        out[unused] = _converted(defaults[name], prop.dtype, name, daf_name)
    return out


def _converted(value: Any, dtype: np.dtype[Any], name: str, daf_name: str) -> Any:
    """A default as a value of the property's element type, never silently cast."""
    where = f"the default of the reconstructed property: {name}\nin the daf data: {daf_name}"
    if dtype.kind in "OUS":
        if not isinstance(value, str):
            raise InvalidArgumentError(f"{where}: {value!r} is not a string")
        return value
    if isinstance(value, str):
        raise InvalidArgumentError(f"{where}: the string {value!r} is not a {dtype} value")
    check_value_fits(value, dtype, where)
    return dtype.type(value)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _write(daf: Any, existing_axis: str, implicit_axis: str, plan: _ReconstructPlan) -> None:
    if plan.new_entries is not None:
        daf.add_axis(plan.axis, plan.new_entries)
    if plan.implicit_keys is not None:
        daf.set_vector(existing_axis, implicit_axis, plan.implicit_keys, overwrite=True)
    for name, vector in plan.migrated:
        daf.set_vector(plan.axis, name, vector)
        daf.delete_vector(existing_axis, name)
