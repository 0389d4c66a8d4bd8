"""Views: read-only Daf data sets whose axes and properties are queries over a base data set.

``viewer(daf, axes=..., data=...)`` renames, hides, subsets and derives without copying:
``viewer(daf, axes={"*": "=", "cell": "@ cell [ ! is_doublet ]"})`` shows the singlets only,
``viewer(daf, axes={"obs": "@ cell", "var": "@ gene"})`` renames the axes. The rules are
DataAxesFormats.jl's (``viewer``, ``src/views.jl``), with dafpy's names:

- ``axes``: ``(view_axis, query)`` pairs (or a dict), the last matching pair wins. ``"="`` is
  the base axis of the same name, ``None`` hides, a bare name ``x`` is ``@ x``, anything else
  must be an axis query (``@ axis`` and masks). The key ``"*"`` is every base axis (only with
  ``"="`` or ``None``). Omitted: every base axis as it is.
- ``data``: ``(key, query)`` pairs, the last matching pair wins. A scalar key ``name`` takes a
  query giving a scalar (a bare name ``x`` is ``. x``); a vector key ``(axis, name)`` a suffix
  of the axis' query (``"="`` is ``: name``, ``x`` is ``: x``) or a complete query starting
  with ``@`` in which ``@ __axis__`` stands for the axis' query; a matrix key
  ``(rows_axis, columns_axis, name)`` (either order) a suffix of both axes' queries or a
  complete query using ``@ __rows_axis__`` and ``@ __columns_axis__``. ``"*"`` in a key is a
  wildcard (only with ``"="`` or ``None``, checked by :func:`viewer`). Omitted: every scalar,
  vector and matrix of the exposed axes, as it is.
- A property exists only if its query applies to the base (``has_query``); a query giving
  the wrong kind of result raises when the property is used (``vector query: ...`` /
  ``for the scalar: ...`` / ``for the view: ...`` / ``of the daf data: ...``). A matrix is
  exposed in a layout only if its query needs no relayout of the base; the other layout is
  served by the usual relayout of ``get_np_matrix``.
- ``"="`` on an axis, and on a property of axes exposed with ``"="``, passes the base's
  arrays through (zero-copy). Other results are computed on first use and kept until the
  base changes (the view's caches follow the base's ``_data_version()``).

Decisions: a view's default name is ``<base name>.view``, made unique in the process as data
set names are (``#2``, ...); with neither ``axes`` nor ``data`` the view is still a ``View``
(a read-only wrapper exposing everything); an ``"*"`` axis key with a query is refused like
the wildcard data keys are. Tensor keys ``(main_axis, rows_axis, columns_axis, name)`` take
only ``"="`` or ``None`` (no wildcard) and expose or hide the matrices ``<entry>_<name>`` of
each entry of the base's main axis (DataAxesFormats.jl's tensors); they are matched before the
other matrix rules, and a main axis the view hides raises when the pair's matrices are used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import DafQueryError, InvalidArgumentError
from .names import unique_name
from .query.cache import QueryCache
from .query.operations import Axis, LookupMatrix, LookupScalar, LookupVector, QuerySequence
from .query.parse import is_axis_query, parse_query, query_axis_name
from .query.results import query_requires_relayout
from .query.shape import query_result_dimensions
from .reader import ReaderBase

__all__ = ["DafView", "viewer"]

#: What a query gives, by :func:`query_result_dimensions` + 1.
_KINDS = ("names", "scalar", "vector", "matrix")

#: A resolved rule: the query on the base, and whether it passes the base's data through.
Rule = tuple[QuerySequence, bool] | None


def viewer(daf: Any, *, name: str | None = None, axes: Any = None, data: Any = None) -> DafView:
    """A read-only view of ``daf`` whose axes and properties are queries over it.

    Nothing is copied: ``"="`` passes the base's arrays through, other queries are computed
    on first use and kept until the base changes.

    Parameters
    ----------
    daf
        The base data set (any reader: a ZarrDaf, a chain, another view).
    name
        The view's name (default: ``<base name>.view``, made unique in the process).
    axes
        ``(view_axis, query)`` pairs or a dict, the last matching pair winning: ``"="`` is
        the base axis of the same name, ``None`` hides it, a bare name ``x`` is ``@ x``,
        anything else an axis query (``@ cell [ ! is_doublet ]``); the key ``"*"`` is every
        base axis (with ``"="`` or ``None`` only). Default: every base axis as it is.
    data
        ``(key, query)`` pairs or a dict: a scalar ``name``, a vector ``(axis, name)``, a
        matrix ``(rows_axis, columns_axis, name)`` or a tensor ``(main_axis, rows_axis,
        columns_axis, name)``; ``"="`` is the base property, ``None`` hides it, otherwise a
        query (see the module documentation); ``"*"`` in a key is a wildcard. Default:
        every property of the exposed axes, as it is.

    Returns
    -------
    DafView
        The read-only view.

    Raises
    ------
    DafQueryError
        A wildcard key with a query other than ``"="`` or ``None``, a tensor key with a
        query; later, when a property is used, a query that gives the wrong kind of result
        or the wrong number of values (the message names the property and the view).
    InvalidArgumentError
        A ``data`` key that is neither a name nor a tuple of 2, 3 or 4 names.

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "is_doublet", [False, True, False])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> singlets = dafzarr.daf.viewer(base, axes={"obs": "@ cell [ ! is_doublet ]"},
    ...                               data={("obs", "age"): "="})
    >>> singlets.axis_np_entries("obs").tolist(), singlets.get_np_vector("obs", "age").tolist()
    (['c0', 'c2'], [1.0, 3.0])
    """
    view_name = unique_name(name if name is not None else f"{daf.name}.view")
    axis_rules = _pairs(axes, [("*", "=")])
    data_rules = _pairs(data, [("*", "="), (("*", "*"), "="), (("*", "*", "*"), "=")])
    where = f"for the view: {view_name}\nof the daf data: {daf.name}"
    for key, query in axis_rules:
        if key == "*" and query not in ("=", None):
            raise DafQueryError(
                f"invalid wildcard axis query: {query}\nquery for wildcard "
                f'must be one of: "=", nothing\n{where}'
            )
    scalars, vectors, matrices, tensors = [], [], [], []
    for key, query in data_rules:
        wild = query not in ("=", None) and "*" in (key if isinstance(key, tuple) else (key,))
        head = 'query for wildcard must be one of: "=", nothing'
        if isinstance(key, str):
            if wild:
                raise DafQueryError(f"invalid wildcard scalar query: {query}\n{head}\n{where}")
            scalars.append((key, query))
        elif isinstance(key, tuple) and len(key) == 2:
            if wild:
                raise DafQueryError(
                    f"invalid wildcard vector query: {query}\n{head}\n"
                    f"for the vector property: {key[1]}\n"
                    f"for the vector axis: {key[0]}\n{where}"
                )
            vectors.append((key, query))
        elif isinstance(key, tuple) and len(key) == 3:
            if wild:
                raise DafQueryError(
                    f"invalid wildcard matrix query: {query}\n{head}\n"
                    f"for the matrix property: {key[2]}\n"
                    f"for the rows axis: {key[0]}\n"
                    f"for the columns axis: {key[1]}\n{where}"
                )
            matrices.append((key, query))
        elif isinstance(key, tuple) and len(key) == 4:
            tensors.append((key, _tensor_query(key, query, where)))
        else:
            raise InvalidArgumentError(
                f"invalid view data key: {key!r}\n{where}\n(a scalar name, (axis, name), "
                "(rows_axis, columns_axis, name) or (main_axis, rows_axis, columns_axis, name))"
            )
    return DafView(daf, view_name, axis_rules, scalars, vectors, matrices + tensors)


def _tensor_query(key: tuple[str, ...], query: Any, where: str) -> Any:
    """The query of a tensor key: only ``"="`` or ``None``, and no wildcard."""
    names = (
        f"for the matrix: {key[3]}\nfor the main axis: {key[0]}\n"
        f"and the rows axis: {key[1]}\nand the columns axis: {key[2]}\n{where}"
    )
    if "*" in key:
        raise DafQueryError(f"unsupported tensor wildcard\n{names}")
    if query not in ("=", None):
        raise DafQueryError(
            f"unsupported tensor query: {query}\nquery for tensor must be "
            f'one of: "=", nothing\n{names}'
        )
    return query


def _pairs(rules: Any, default: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    if rules is None:
        return default
    return list(rules.items()) if isinstance(rules, dict) else [tuple(r) for r in rules]


def _prepare(query: Any, name: str, operand: type[Any]) -> QuerySequence | None:
    """The query of a rule: ``None`` hides, ``"="`` is the same-named base property, a bare
    name is ``operand`` of it."""
    if query is None:
        return None
    if isinstance(query, str) and query == "=":
        return QuerySequence([operand(name)])
    return parse_query(query, operand)


def _complete(
    query: QuerySequence, placeholders: dict[str, QuerySequence], prefix: list[QuerySequence]
) -> QuerySequence:
    """``@ __axis__`` (and the like) replaced by the axes' queries; a query that does not
    start with an axis appended to them."""
    ops: list[Any] = []
    for op in query:
        found = placeholders.get(str(op.operand)) if type(op) is Axis else None
        ops += list(found) if found is not None else [op]
    if ops and isinstance(ops[0], Axis):
        return QuerySequence(ops)
    return QuerySequence([op for part in prefix for op in part] + ops)


def _listed(
    keys: list[Any], everything: Callable[[], set[str]], exposed: Callable[[str], bool]
) -> set[str]:
    """The names the rules' keys give (``"*"``: ``everything()`` of the base) that the view
    exposes."""
    names = {key for key in keys if key != "*"}
    if "*" in keys:
        names |= everything()
    return {name for name in names if exposed(name)}


def _is_identity(query: Any) -> bool:
    return isinstance(query, str) and query == "="


class DafView(ReaderBase):
    """A read-only data set whose axes and properties are queries over ``base`` (made by
    :func:`viewer`)."""

    def __init__(
        self,
        base: Any,
        name: str,
        axes: list[tuple[Any, Any]],
        scalars: list[tuple[Any, Any]],
        vectors: list[tuple[Any, Any]],
        matrices: list[tuple[Any, Any]],
    ) -> None:
        self._base = base
        self._name = name
        # Searched first to last: the last rule given wins.
        self._axis_rules = axes[::-1]
        self._scalar_rules = scalars[::-1]
        self._vector_rules = vectors[::-1]
        # Tensor rules (4-part keys) are searched before the matrix rules.
        self._matrix_rules = [rule for rule in matrices[::-1] if len(rule[0]) == 4] + [
            rule for rule in matrices[::-1] if len(rule[0]) != 4
        ]
        self._query_cache = QueryCache()
        self._resolved = QueryCache()

    @property
    def name(self) -> str:
        """The view's name."""
        return self._name

    @property
    def base(self) -> Any:
        """The data set the view's queries run on."""
        return self._base

    def _data_version(self) -> Any:
        return self._base._data_version()

    def _header(self) -> list[str]:
        return ["type: View", f"base: {self._base.name}"]

    def _where(self) -> str:
        return f"for the view: {self._name}\nof the daf data: {self._base.name}"

    def _memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept until the base changes."""
        store = self._resolved
        store.sync(self._data_version())
        if key in store.tables:
            return store.tables[key]
        version = store.version
        value = compute()
        if self._data_version() == version:
            store.tables[key] = value
        return value

    def _rule(self, key: tuple[str, ...], find: Callable[[], Rule]) -> Rule:
        """The rule of a property (``find()``), kept until the base changes."""
        found: Rule = self._memo(key, find)
        return found

    def _fetch(self, rule: Rule) -> Any:
        assert rule is not None
        query = rule[0]
        return self._memo(("data", str(query)), lambda: self._base.get_np_query(query, cache=False))

    def _applicable(
        self, query: QuerySequence | None, identity: bool, *, relayout: bool = False
    ) -> Rule:
        if query is None or not self._base.has_query(query):
            return None
        if relayout and query_requires_relayout(self._base, query):
            return None
        return query, identity

    # --- Axes --------------------------------------------------------------------------------

    def _axis_rule(self, axis: str) -> Rule:
        return self._rule(("axis", axis), lambda: self._find_axis_rule(axis))

    def _find_axis_rule(self, axis: str) -> Rule:
        for key, raw in self._axis_rules:
            if key == axis or (key == "*" and self._base.has_axis(axis)):
                query = _prepare(raw, axis, Axis)
                if query is not None and not is_axis_query(query):
                    raise DafQueryError(
                        f"not an axis query: {query}\nfor the axis: {axis}\n{self._where()}"
                    )
                return self._applicable(query, _is_identity(raw))
        return None

    def _axis_query(self, axis: str) -> tuple[QuerySequence, bool]:
        self._require_axis(axis)
        rule = self._axis_rule(axis)
        assert rule is not None
        return rule

    def has_axis(self, axis: str) -> bool:
        """Whether the view exposes the axis."""
        return self._axis_rule(axis) is not None

    def axes_set(self) -> set[str]:
        """The names of the exposed axes."""
        return _listed([key for key, _ in self._axis_rules], self._base.axes_set, self.has_axis)

    def _entries(self, axis: str) -> Any:
        rule = self._axis_rule(axis)
        assert rule is not None
        if rule[1]:
            return self._base.axis_np_entries(axis)
        return self._fetch(rule)

    # --- Scalars -----------------------------------------------------------------------------

    def _scalar_rule(self, name: str) -> Rule:
        return self._rule(("scalar", name), lambda: self._find_scalar_rule(name))

    def _find_scalar_rule(self, name: str) -> Rule:
        for key, raw in self._scalar_rules:
            if key == name or (key == "*" and self._base.has_scalar(name)):
                query = _prepare(raw, name, LookupScalar)
                if query is not None:
                    self._check_kind(query, 0, f"for the scalar: {name}")
                return self._applicable(query, _is_identity(raw))
        return None

    def _check_kind(self, query: QuerySequence, dimensions: int, what: str) -> None:
        found = query_result_dimensions(query)
        if found != dimensions:
            raise DafQueryError(f"{_KINDS[found + 1]} query: {query}\n{what}\n{self._where()}")

    def has_scalar(self, name: str) -> bool:
        """Whether the view exposes the scalar."""
        return self._scalar_rule(name) is not None

    def scalars_set(self) -> set[str]:
        """The names of the exposed scalars."""
        return _listed(
            [key for key, _ in self._scalar_rules], self._base.scalars_set, self.has_scalar
        )

    def _scalar(self, name: str) -> Any:
        rule = self._scalar_rule(name)
        assert rule is not None
        return self._base.get_scalar(name) if rule[1] else self._fetch(rule)

    # --- Vectors -----------------------------------------------------------------------------

    def _vector_rule(self, axis: str, name: str) -> Rule:
        return self._rule(("vector", axis, name), lambda: self._find_vector_rule(axis, name))

    def _find_vector_rule(self, axis: str, name: str) -> Rule:
        axis_query, axis_identity = self._axis_query(axis)
        base_axis = query_axis_name(axis_query)
        for (key_axis, key_name), raw in self._vector_rules:
            if key_axis in (axis, "*") and (
                key_name == name or (key_name == "*" and self._base.has_vector(base_axis, name))
            ):
                query = _prepare(raw, name, LookupVector)
                if query is not None:
                    query = _complete(query, {"__axis__": axis_query}, [axis_query])
                    self._check_kind(query, 1, f"for the vector: {name}\nfor the axis: {axis}")
                return self._applicable(query, axis_identity and _is_identity(raw))
        return None

    def _has_stored_vector(self, axis: str, name: str) -> bool:
        return self._vector_rule(axis, name) is not None

    def _vectors(self, axis: str) -> set[str]:
        keys = [
            key_name for (key_axis, key_name), _ in self._vector_rules if key_axis in (axis, "*")
        ]
        return _listed(
            keys,
            lambda: self._base.vectors_set(query_axis_name(self._axis_query(axis)[0])),
            lambda name: (
                name not in ("name", "index") and self._vector_rule(axis, name) is not None
            ),
        )

    def _stored_vector(self, axis: str, name: str) -> Any:
        rule = self._vector_rule(axis, name)
        assert rule is not None
        if rule[1]:
            return self._base.get_np_vector(axis, name)
        values = self._fetch(rule)
        n = self.axis_length(axis)
        if len(values) != n:
            raise DafQueryError(
                f"the vector query: {rule[0]}\ngives: {len(values)} values\n"
                f"for the vector: {name}\nfor the axis: {axis} ({n} entries)\n"
                f"{self._where()}"
            )
        return values

    # --- Matrices ----------------------------------------------------------------------------

    def _matrix_keys(self, rows_axis: str, columns_axis: str) -> list[tuple[str, Any]]:
        """The (name, query) of the matrix rules of this axis pair, in either order; a tensor
        rule's name is each ``<entry>_<name>`` of its main axis in the base."""
        keys: list[tuple[str, Any]] = []
        for key, raw in self._matrix_rules:
            rows, columns = key[-3], key[-2]
            if not any(
                r in (rows_axis, "*") and c in (columns_axis, "*")
                for r, c in ((rows, columns), (columns, rows))
            ):
                continue
            if len(key) == 3:
                keys.append((key[2], raw))
                continue
            if not self.has_axis(key[0]):
                raise DafQueryError(
                    f"hidden tensor main axis: {key[0]}\nfor the matrix: "
                    f"{key[3]}\nfor the rows axis: {rows}\nfor the columns "
                    f"axis: {columns}\n{self._where()}"
                )
            keys += [(f"{entry}_{key[3]}", raw) for entry in self._base.axis_np_entries(key[0])]
        return keys

    def _matrix_rule(self, rows_axis: str, columns_axis: str, name: str) -> Rule:
        return self._rule(
            ("matrix", rows_axis, columns_axis, name),
            lambda: self._find_matrix_rule(rows_axis, columns_axis, name),
        )

    def _find_matrix_rule(self, rows_axis: str, columns_axis: str, name: str) -> Rule:
        rows_query, rows_identity = self._axis_query(rows_axis)
        columns_query, columns_identity = self._axis_query(columns_axis)
        for key_name, raw in self._matrix_keys(rows_axis, columns_axis):
            if key_name in (name, "*"):
                query = _prepare(raw, name, LookupMatrix)
                if query is not None:
                    query = _complete(
                        query,
                        {"__rows_axis__": rows_query, "__columns_axis__": columns_query},
                        [rows_query, columns_query],
                    )
                    self._check_kind(
                        query,
                        2,
                        f"for the matrix: {name}\nfor the rows axis: "
                        f"{rows_axis}\nand the columns axis: {columns_axis}",
                    )
                identity = rows_identity and columns_identity and _is_identity(raw)
                return self._applicable(query, identity, relayout=True)
        return None

    def _has_layout(self, rows_axis: str, columns_axis: str, name: str) -> bool:
        return self._matrix_rule(rows_axis, columns_axis, name) is not None

    def _layout_names(self, rows_axis: str, columns_axis: str) -> set[str]:
        keys = [key_name for key_name, _ in self._matrix_keys(rows_axis, columns_axis)]
        return _listed(
            keys,
            lambda: self._base.matrices_set(
                query_axis_name(self._axis_query(rows_axis)[0]),
                query_axis_name(self._axis_query(columns_axis)[0]),
                relayout=False,
            ),
            lambda name: self._has_layout(rows_axis, columns_axis, name),
        )

    def _layout_matrix(self, rows_axis: str, columns_axis: str, name: str) -> Any:
        rule = self._matrix_rule(rows_axis, columns_axis, name)
        assert rule is not None
        if rule[1]:
            return self._base.get_np_matrix(rows_axis, columns_axis, name, relayout=False)
        values = self._fetch(rule)
        shape = (self.axis_length(rows_axis), self.axis_length(columns_axis))
        if values.shape != shape:
            raise DafQueryError(
                f"the matrix query: {rule[0]}\ngives: {values.shape[0]} x {values.shape[1]} "
                f"values\nfor the matrix: {name}\nfor the rows axis: {rows_axis} ({shape[0]} "
                f"entries)\nand the columns axis: {columns_axis} ({shape[1]} entries)\n"
                f"{self._where()}"
            )
        return values
