"""Parsing a query text into a :class:`QuerySequence`, and the data-free questions about it.

The parser turns tokens into operations: an operator takes no operand, an optional one (taken
when the next token is a value) or a required one; ``[ & | ^`` followed by ``!`` are the
negated mask operations; ``||`` takes a value and, if a value follows, a type name; ``%``,
``>>``, ``>|`` and ``>-`` take an operation name and ``parameter value`` pairs while values
follow. Every error is a :class:`~dafzarr.errors.DafQuerySyntaxError` showing the query and a
caret line under the failing token.
"""

from __future__ import annotations

from typing import Any

from ....errors import DafQueryParameterError, InvalidArgumentTypeError
from . import operations as _ops
from .operations import NEGATED, IfMissing
from .registry import ELTWISE, REDUCTIONS, ReduceToColumn, ReduceToRow, RegisteredOperation
from .sequence import QueryOperation, QuerySequence
from .tokens import Token, syntax_error, tokenize

__all__ = ["is_axis_query", "parse_query", "query_axis_name"]

#: The operation class of each operator, for all but ``||`` and the registered operations.
_SIMPLE: dict[str, type[QueryOperation]] = {
    cls.OPERATOR: cls
    for cls in vars(_ops).values()
    if isinstance(cls, type)
    and issubclass(cls, QueryOperation)
    and cls.OPERATOR
    and cls not in NEGATED.values()
    and cls is not IfMissing
}


def parse_query(query: Any, operand_only: type[QueryOperation] | None = None) -> QuerySequence:
    """The operations of a query text.

    Parameters
    ----------
    query : str, QuerySequence or QueryOperation
        The query text (a :class:`QuerySequence` is returned as it is, an operation as a
        sequence of one).
    operand_only : type or None
        An operation class (e.g. ``Axis``): a text that is a single value is then that
        operation with that operand (``parse_query("cell", Axis)`` is ``@ cell``).

    Returns
    -------
    QuerySequence
        The operations; ``str()`` of it is the canonical text.

    Raises
    ------
    DafQuerySyntaxError
        If the text does not parse; the message shows the query and a caret line under the
        failing token.
    DafQueryParameterError
        If an element-wise or reduction operation is unknown or its parameters are not valid
        (shown the same way).
    InvalidArgumentTypeError
        If ``query`` is neither a text nor a query object.

    Examples
    --------
    >>> query = dafzarr.parse_query("@cell:age>>Sum")
    >>> str(query)
    '@ cell : age >> Sum'
    >>> list(query)
    [Axis('@ cell'), LookupVector(': age'), Sum('>> Sum')]
    >>> from dafzarr.daf.query import Axis
    >>> str(dafzarr.parse_query("cell", Axis))
    '@ cell'
    """
    if isinstance(query, QuerySequence):
        return query
    if isinstance(query, QueryOperation):
        return QuerySequence([query])
    if not isinstance(query, str):
        raise InvalidArgumentTypeError(
            f"a query is a str or a query object, not {type(query).__name__}"
        )
    tokens = tokenize(query)
    if operand_only is not None and len(tokens) == 1 and not tokens[0].is_operator:
        return QuerySequence([operand_only(tokens[0].text)], source=query)
    return QuerySequence(_Parser(query, tokens).operations(), source=query)


class _Parser:
    """A cursor over the tokens of one query."""

    def __init__(self, query: str, tokens: list[Token]) -> None:
        self.query = query
        self.tokens = tokens
        self.at = 0

    def _value(self) -> Token | None:
        if self.at < len(self.tokens) and not self.tokens[self.at].is_operator:
            self.at += 1
            return self.tokens[self.at - 1]
        return None

    def _peek_operator(self, text: str) -> bool:
        return (
            self.at < len(self.tokens)
            and self.tokens[self.at].is_operator
            and self.tokens[self.at].text == text
        )

    def _error(self, message: str, token: Token | None) -> Exception:
        if token is None:
            end = len(self.query.rstrip())
            return syntax_error(message, self.query, end, end + 1)
        return syntax_error(message, self.query, token.start, token.end)

    def operations(self) -> list[QueryOperation]:
        out: list[QueryOperation] = []
        while self.at < len(self.tokens):
            token = self.tokens[self.at]
            if not token.is_operator:
                raise self._error("expected: operator", token)
            self.at += 1
            op = self._operation(token)
            op.start = token.start
            op.end = self.tokens[self.at - 1].end
            out.append(op)
        return out

    def _required(self, token: Token) -> Token:
        value = self._value()
        if value is None:
            following = self.tokens[self.at] if self.at < len(self.tokens) else None
            raise self._error("expected: value", following)
        return value

    def _operation(self, token: Token) -> QueryOperation:
        text = token.text
        if text == "||":
            return self._if_missing(token)
        if text in ("%", ">>", ">|", ">-"):
            return self._registered(token)
        cls = _SIMPLE[text]
        if cls in NEGATED and self._peek_operator("!"):
            self.at += 1
            return NEGATED[cls](self._required(token).text)
        if cls.OPERAND == "none":
            return cls()
        if cls.OPERAND == "optional":
            value = self._value()
            return cls(None if value is None else value.text)
        return cls(self._required(token).text)

    def _if_missing(self, token: Token) -> QueryOperation:
        value = self._required(token)
        kind = self._value()
        try:
            return IfMissing(value.text, None if kind is None else kind.text)
        except ValueError:
            if kind is not None and kind.text not in _type_names():
                raise self._error(
                    f'invalid value: "{kind.text}"\nvalue must be: a type name\n'
                    "for the parameter: type\nfor the operation: ||",
                    kind,
                ) from None
            must = f"a valid {kind.text if kind else 'value'}"
            raise self._error(
                f'invalid value: "{value.text}"\nvalue must be: {must}\n'
                "for the parameter: value\nfor the operation: ||",
                value,
            ) from None

    def _registered(self, token: Token) -> QueryOperation:
        name = self._required(token)
        registry: dict[str, Any] = ELTWISE if token.text == "%" else REDUCTIONS
        cls = registry.get(name.text)
        if cls is None:
            kind = "eltwise" if token.text == "%" else "reduce"
            raise self._error(f"unknown {kind} operation: {name.text}", name)
        params: dict[str, str] = {}
        where: dict[str, Token] = {}
        while (key := self._value()) is not None:
            if key.text in params:
                raise self._error(
                    f"repeated parameter: {key.text}\nfor the operation: {name.text}", key
                )
            value = self._required(key)
            params[key.text] = value.text
            where[key.text] = value
        try:
            op: RegisteredOperation = cls(**params)
        except DafQueryParameterError as exc:
            at = where.get(exc.param or "")
            if at is not None and "does not exist" in str(exc):
                at = self.tokens[self.tokens.index(at) - 1]
            raise self._error(str(exc), at or name) from None
        if token.text == ">|":
            return ReduceToColumn(op)  # type: ignore[arg-type]
        if token.text == ">-":
            return ReduceToRow(op)  # type: ignore[arg-type]
        return op


def _type_names() -> set[str]:
    from .literals import TYPES

    return set(TYPES)


def is_axis_query(query: Any) -> bool:
    """Whether the query gives the entries of one axis: ``@ axis`` followed by masks only.

    Parameters
    ----------
    query : str, QuerySequence or QueryOperation
        The query.

    Returns
    -------
    bool
        Whether it is an axis query (no data set is read).

    Raises
    ------
    DafQuerySyntaxError
        If the text does not parse.
    InvalidArgumentTypeError
        If ``query`` is neither a text nor a query object.

    Examples
    --------
    >>> from dafzarr.daf.query import is_axis_query
    >>> is_axis_query("@ cell [ age > 30 ]"), is_axis_query("@ cell : age")
    (True, False)
    """
    ops = list(parse_query(query))
    if not ops or type(ops[0]) is not _ops.Axis or ops[0].operand is None:
        return False
    inside = False
    for op in ops[1:]:
        if type(op) in (_ops.BeginMask, _ops.BeginNegatedMask) and not inside:
            inside = True
        elif type(op) is _ops.EndMask and inside:
            inside = False
        elif not inside:
            return False
    return not inside


def query_axis_name(query: Any) -> str:
    """The axis of an axis query (:func:`is_axis_query`).

    Parameters
    ----------
    query : str, QuerySequence or QueryOperation
        The axis query.

    Returns
    -------
    str
        The name of its axis.

    Raises
    ------
    DafQueryError
        If the query is not an axis query.
    DafQuerySyntaxError
        If the text does not parse.
    InvalidArgumentTypeError
        If ``query`` is neither a text nor a query object.

    Examples
    --------
    >>> from dafzarr.daf.query import query_axis_name
    >>> query_axis_name("@ cell [ ! is_doublet ]")
    'cell'
    """
    from ....errors import DafQueryError

    if not is_axis_query(query):
        raise DafQueryError(f"not an axis query: {parse_query(query)}")
    operand = parse_query(query)[0].operand
    assert operand is not None
    return str(operand)
