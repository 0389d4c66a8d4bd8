"""The operations a query is made of, and their canonical text.

A parsed query is a :class:`QuerySequence`: a flat list of :class:`QueryOperation` objects, one
per operator with its operand. Every operation prints back as ``op operand`` (the operand
escaped); a sequence joins them with single spaces. Operations combine with ``|`` as in dafpy:
``Axis("cell") | LookupVector("age")`` prints ``@ cell : age``.

The element-wise and reduction operations (``% Log base 2.0``, ``>| Sum``) are defined in
:mod:`._registry`; this module holds the structural ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from ....errors import InvalidArgumentError, InvalidArgumentTypeError
from .literals import TYPES, format_value, guess_value, parse_as, type_name
from .tokens import escape_value

__all__ = [
    "NEGATED", "AndMask", "AndNegatedMask", "AsAxis", "Axis", "Bang", "BeginMask",
    "BeginNegatedMask", "CountBy", "EndMask", "GroupBy", "GroupColumnsBy", "GroupRowsBy",
    "IfMissing", "IfNot", "IsEqual", "IsGreater", "IsGreaterEqual", "IsLess", "IsLessEqual",
    "IsMatch", "IsNotEqual", "IsNotMatch", "LookupMatrix", "LookupScalar", "LookupVector",
    "Names", "OrMask", "OrNegatedMask", "QueryOperation", "QuerySequence", "SquareColumnIs",
    "SquareRowIs", "XorMask", "XorNegatedMask",
]


class QueryOperation:
    """One operation of a query: an ``operator`` with an optional value ``operand``.

    ``OPERAND`` is ``"none"``, ``"optional"`` or ``"required"``. ``start``/``end`` locate the
    operation's tokens in the parsed text (``-1`` when built in code).
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
        """The canonical text of this operation alone."""
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


def _none(op: str, name: str, doc: str) -> type[QueryOperation]:
    return type(name, (QueryOperation,), {"OPERATOR": op, "OPERAND": "none", "__doc__": doc})


def _optional(op: str, name: str, doc: str) -> type[QueryOperation]:
    return type(name, (QueryOperation,), {"OPERATOR": op, "OPERAND": "optional", "__doc__": doc})


def _required(op: str, name: str, doc: str) -> type[QueryOperation]:
    return type(name, (QueryOperation,), {"OPERATOR": op, "OPERAND": "required", "__doc__": doc})


Names = _none("?", "Names", "``?``: ask for the names of scalars, axes, vectors or matrices.")
EndMask = _none("]", "EndMask", "``]``: the end of a mask.")
Bang = _none("!", "Bang", "``!`` where no mask operation takes it (no phrase accepts it).")
LookupScalar = _optional(".", "LookupScalar", "``. name``: a scalar.")
LookupVector = _optional(":", "LookupVector", "``: name``: a vector property.")
LookupMatrix = _optional("::", "LookupMatrix", "``:: name``: a matrix property.")
Axis = _optional("@", "Axis", "``@ axis``: an axis (or ``@ axis = entry``).")
AsAxis = _optional("=@", "AsAxis", "``=@ [axis]``: the values are entries of an axis.")
IfNot = _optional("??", "IfNot", "``?? [value]``: empty values before a chained lookup.")
SquareColumnIs = _required("@|", "SquareColumnIs", "``@| entry``: a column of a square matrix.")
SquareRowIs = _required("@-", "SquareRowIs", "``@- entry``: a row of a square matrix.")
BeginMask = _required("[", "BeginMask", "``[ property``: the first term of a mask.")
AndMask = _required("&", "AndMask", "``& property``: and with another term.")
OrMask = _required("|", "OrMask", "``| property``: or with another term.")
XorMask = _required("^", "XorMask", "``^ property``: exclusive or with another term.")
IsEqual = _required("=", "IsEqual", "``= value``: equal.")
IsNotEqual = _required("!=", "IsNotEqual", "``!= value``: not equal.")
IsLess = _required("<", "IsLess", "``< value``: less than.")
IsLessEqual = _required("<=", "IsLessEqual", "``<= value``: at most.")
IsGreater = _required(">", "IsGreater", "``> value``: greater than.")
IsGreaterEqual = _required(">=", "IsGreaterEqual", "``>= value``: at least.")
IsMatch = _required("~", "IsMatch", "``~ regex``: the regular expression is found.")
IsNotMatch = _required("!~", "IsNotMatch", "``!~ regex``: the regular expression is not found.")
GroupBy = _required("/", "GroupBy", "``/ property``: group a vector's values.")
GroupRowsBy = _required("-/", "GroupRowsBy", "``-/ property``: group a matrix's rows.")
GroupColumnsBy = _required("|/", "GroupColumnsBy", "``|/ property``: group a matrix's columns.")
CountBy = _required("*", "CountBy", "``* property``: count pairs of values.")


class _Negated(QueryOperation):
    """A mask operation followed by ``!`` (printed ``op ! operand``)."""

    OPERAND = "required"

    def text(self) -> str:
        return f"{self.OPERATOR} ! {escape_value(self.operand or '')}"


def _negated(op: str, name: str, doc: str) -> type[QueryOperation]:
    return type(name, (_Negated,), {"OPERATOR": op, "__doc__": doc})


BeginNegatedMask = _negated("[", "BeginNegatedMask", "``[ ! property``: a negated first term.")
AndNegatedMask = _negated("&", "AndNegatedMask", "``& ! property``: and not another term.")
OrNegatedMask = _negated("|", "OrNegatedMask", "``| ! property``: or not another term.")
XorNegatedMask = _negated("^", "XorNegatedMask", "``^ ! property``: xor not another term.")

#: The negated variant of each mask operation.
NEGATED: dict[type[QueryOperation], type[QueryOperation]] = {
    BeginMask: BeginNegatedMask, AndMask: AndNegatedMask, OrMask: OrNegatedMask,
    XorMask: XorNegatedMask,
}


class IfMissing(QueryOperation):
    """``|| value [type]``: the default of a missing property or of an empty reduction.

    ``value`` is text; without ``type`` it is guessed (``true``/``false`` Bool, ``e``/``pi``
    and other non-integral numbers Float64, integers Int64, else String). With a type it is
    parsed as that type (``ValueError`` if it is not valid).
    """

    OPERATOR = "||"
    OPERAND = "required"

    def __init__(self, operand: str | None = None, type: str | None = None) -> None:
        super().__init__(operand)
        text = operand or ""
        if type is None:
            self.value, self.type_name = guess_value(text)
        else:
            if type not in TYPES:
                raise InvalidArgumentError(type)
            self.value = parse_as(text, TYPES[type])
            self.type_name = type_name(TYPES[type])
        self.dtype = TYPES[self.type_name]

    def text(self) -> str:
        shown = format_value(self.value) if self.dtype is not None else str(self.value)
        guessed = guess_value(shown)[1]
        suffix = "" if guessed == self.type_name else f" {self.type_name}"
        return f"|| {escape_value(shown)}{suffix}"


class QuerySequence(Sequence[QueryOperation]):
    """A whole query: a sequence of operations; ``str()`` is the canonical text."""

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
            raise InvalidArgumentTypeError(f"a query combines with a query or an operation, "
                                           f"not {type(other).__name__}")
        more = other.operations if isinstance(other, QuerySequence) else (other,)
        return QuerySequence(self.operations + tuple(more))

    def __ror__(self, other: str) -> QuerySequence:
        from .parse import parse_query

        return parse_query(other) | self
