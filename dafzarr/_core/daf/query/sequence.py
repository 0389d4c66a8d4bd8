"""The base of a query's operations and the sequence they make: :class:`QueryOperation` and
:class:`QuerySequence`, with their canonical text.

A parsed query is a :class:`QuerySequence`: a flat list of :class:`QueryOperation` objects, one
per operator with its operand. Every operation prints back as ``op operand`` (the operand
escaped); a sequence joins them with single spaces. Operations combine with ``|`` as in dafpy:
``Axis("cell") | LookupVector("age")`` prints ``@ cell : age``. The operation classes
themselves are in :mod:`.operations`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from ....errors import InvalidArgumentTypeError
from .tokens import escape_value

__all__ = ["QueryOperation", "QuerySequence"]


class QueryOperation:
    """One operation of a query: an ``operator`` with an optional value ``operand``.

    The base of every operation class. ``OPERATOR`` is the operator's text and ``OPERAND``
    says whether it takes an operand: ``"none"``, ``"optional"`` or ``"required"``.
    ``start``/``end`` locate the operation's tokens in the parsed text (``-1`` when built in
    code). Operations combine with ``|`` into a :class:`QuerySequence`; ``str()`` is the
    canonical text.

    Parameters
    ----------
    operand : str or None
        The name or value following the operator (unescaped).

    Raises
    ------
    InvalidArgumentTypeError
        If ``operand`` is missing where the operator requires one, or given where it takes
        none.

    Examples
    --------
    >>> from dafzarr.daf.query import Axis, LookupVector
    >>> query = Axis("cell") | LookupVector("age")
    >>> str(query)
    '@ cell : age'
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"])
    >>> d = d.set_vector("cell", "age", np.array([20, 35]))
    >>> d.get_np_query(query)
    array([20, 35])
    """

    OPERATOR: ClassVar[str] = ""
    OPERAND: ClassVar[str] = "none"

    def __init__(self, operand: str | None = None) -> None:
        if self.OPERAND == "required" and operand is None:
            raise InvalidArgumentTypeError(f"{type(self).__name__} requires an operand")
        if self.OPERAND == "none" and operand is not None:
            raise InvalidArgumentTypeError(f"{type(self).__name__} takes no operand")
        self.operand = operand
        self.start = -1
        self.end = -1

    def text(self) -> str:
        """The canonical text of this operation alone (its operand escaped).

        Returns
        -------
        str
            The operator and its operand, as :func:`parse_query` reads it back.

        Raises
        ------
        None
            This method raises no exception.

        Examples
        --------
        >>> from dafzarr.daf.query import Axis, Log
        >>> Axis("cell").text()
        '@ cell'
        >>> Log(base=2).text()
        '% Log base 2.0 eps 0.0'
        """
        if self.operand is None:
            return self.OPERATOR
        return f"{self.OPERATOR} {escape_value(self.operand)}"

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text()!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __or__(self, other: QueryOperation | QuerySequence | str) -> QuerySequence:
        return QuerySequence([self]) | other

    def __ror__(self, other: str) -> QuerySequence:
        from .parse import parse_query

        return parse_query(other) | self


class QuerySequence(Sequence[QueryOperation]):
    """A whole query: a sequence of operations; ``str()`` is the canonical text.

    What :func:`parse_query` returns, and what ``|`` makes of operations and query texts.
    The operations are in ``operations``; ``source`` is the text the query was parsed from
    (``None`` when built in code).

    Parameters
    ----------
    operations : sequence of QueryOperation
        The operations, in order.
    source : str or None
        The text the operations were parsed from.

    Raises
    ------
    InvalidArgumentTypeError
        When combined with ``|`` with something that is neither a query text, an operation
        nor a sequence.

    Examples
    --------
    >>> from dafzarr.daf.query import LookupVector
    >>> query = dafzarr.parse_query("@cell:type") | LookupVector("color")
    >>> str(query), len(query)
    ('@ cell : type : color', 3)
    >>> query[1]
    LookupVector(': type')
    """

    def __init__(self, operations: Sequence[QueryOperation], source: str | None = None) -> None:
        self.operations = tuple(operations)
        #: The text the query was parsed from (``None`` when built in code).
        self.source = source

    def __len__(self) -> int:
        return len(self.operations)

    def __getitem__(self, index: Any) -> Any:
        return self.operations[index]

    def __iter__(self) -> Iterator[QueryOperation]:
        return iter(self.operations)

    def __str__(self) -> str:
        return " ".join(op.text() for op in self.operations)

    def __repr__(self) -> str:
        return f"QuerySequence({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuerySequence) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __or__(self, other: QueryOperation | QuerySequence | str) -> QuerySequence:
        if isinstance(other, str):
            from .parse import parse_query

            other = parse_query(other)
        if not isinstance(other, QuerySequence | QueryOperation):
            raise InvalidArgumentTypeError(
                f"a query combines with a query or an operation, not {type(other).__name__}"
            )
        more = other.operations if isinstance(other, QuerySequence) else (other,)
        return QuerySequence(self.operations + tuple(more))

    def __ror__(self, other: str) -> QuerySequence:
        from .parse import parse_query

        return parse_query(other) | self
