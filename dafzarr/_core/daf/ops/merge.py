"""What :func:`~dafzarr.daf.ops.concatenate` does with the properties that are not stacked
along a concatenated axis: scalars, vectors of the other axes, matrices between them."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from ....errors import DafMismatchError

__all__ = ["ALL_MATRICES", "ALL_SCALARS", "ALL_VECTORS", "MergeAction"]

#: The ``merge`` key of every scalar.
ALL_SCALARS = "*"
#: The ``merge`` key of every vector of an axis that is not concatenated.
ALL_VECTORS = ("*", "*")
#: The ``merge`` key of every matrix between axes that are not concatenated.
ALL_MATRICES = ("*", "*", "*")


class MergeAction(enum.Enum):
    """How :func:`~dafzarr.daf.ops.concatenate` merges a property that is not concatenated.

    * ``SkipProperty``: not written (what every property without a ``merge`` entry gets).
    * ``LastValue``: the value of the last data set that has it, stored as it is (the data
      sets are not checked to agree).
    * ``CollectAxis``: one value per data set along the dataset axis: a scalar becomes a
      vector of the dataset axis, a vector of the axis ``a`` a matrix ``(a, dataset)``.

    The ``merge`` argument of :func:`~dafzarr.daf.ops.concatenate` maps keys - ``"name"``,
    ``(axis, name)``, ``(rows_axis, columns_axis, name)``, with ``"*"`` for any part
    (:data:`ALL_SCALARS`, :data:`ALL_VECTORS`, :data:`ALL_MATRICES`) - to these actions.

    Parameters
    ----------
    *args
        The value of a member, to look it up (``MergeAction("LastValue")`` is
        ``MergeAction.LastValue``); the members themselves are what ``merge`` takes.
    **kwds
        Not used (the enumeration's own).

    Raises
    ------
    ValueError
        A looked-up value is no member's (as for every ``enum.Enum``).

    Examples
    --------
    >>> first = dafzarr.memory_daf(name="first").set_scalar("version", 1)
    >>> second = dafzarr.memory_daf(name="second").set_scalar("version", 2)
    >>> for daf in (first, second):
    ...     _ = daf.add_axis("cell", ["A"])
    >>> both = dafzarr.memory_daf(name="both")
    >>> dafzarr.concatenate(both, "cell", [first, second], names=["one", "two"], prefix=True,
    ...                     merge={dafzarr.ALL_SCALARS: dafzarr.MergeAction.LastValue})
    >>> int(both.get_scalar("version"))
    2
    """

    SkipProperty = "SkipProperty"
    LastValue = "LastValue"
    CollectAxis = "CollectAxis"


PropertyKey = str | tuple[str, str] | tuple[str, str, str]


def merge_entries(merge: Any) -> list[tuple[PropertyKey, MergeAction]]:
    """The ``merge`` argument (a mapping, or pairs) as checked ``(key, action)`` pairs, in
    order; a malformed key or action is a :class:`~dafzarr.errors.DafMismatchError`."""
    if merge is None:
        return []
    pairs: Iterable[Any] = merge.items() if isinstance(merge, Mapping) else merge
    out: list[tuple[PropertyKey, MergeAction]] = []
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise DafMismatchError(
                f"invalid merge entry: {pair!r}\n(expected a property key and a MergeAction)"
            )
        key, action = pair
        if isinstance(key, list):
            key = tuple(key)
        good_key = isinstance(key, str) or (
            isinstance(key, tuple)
            and len(key) in (2, 3)
            and all(isinstance(part, str) for part in key)
        )
        if not good_key or not isinstance(action, MergeAction):
            raise DafMismatchError(
                f'invalid merge entry: {key!r} => {action!r}\n(expected a key "name", '
                '(axis, name) or (rows_axis, columns_axis, name), parts may be "*", and a '
                "MergeAction)"
            )
        out.append((key, action))
    return out


def _matches(pattern: PropertyKey, key: PropertyKey) -> bool:
    if isinstance(pattern, str) or isinstance(key, str):
        return isinstance(pattern, str) and isinstance(key, str) and pattern in ("*", key)
    return len(pattern) == len(key) and all(
        p in ("*", k) for p, k in zip(pattern, key, strict=True)
    )


def action_for(entries: list[tuple[PropertyKey, MergeAction]], key: PropertyKey) -> MergeAction:
    """The action of the **last** entry matching ``key`` (``SkipProperty`` if none does)."""
    found = MergeAction.SkipProperty
    for pattern, action in entries:
        if _matches(pattern, key):
            found = action
    return found
