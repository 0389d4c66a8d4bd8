"""The operations a query is made of, each a class of its own (their base and the sequence
they make, :class:`QueryOperation` and :class:`QuerySequence`, are in :mod:`.sequence`, and
re-exported here).

The element-wise and reduction operations (``% Log base 2.0``, ``>| Sum``) are defined in
:mod:`._registry`; this module holds the structural ones.
"""

from __future__ import annotations

from ....errors import InvalidArgumentError
from .literals import TYPES, format_value, guess_value, parse_as, type_name
from .opdocs import EX_AGES, EX_MASKS, EX_TYPES, EX_UMIS, operation_doc
from .sequence import QueryOperation, QuerySequence
from .tokens import escape_value

__all__ = [
    "NEGATED",
    "AndMask",
    "AndNegatedMask",
    "AsAxis",
    "Axis",
    "Bang",
    "BeginMask",
    "BeginNegatedMask",
    "CountBy",
    "EndMask",
    "GroupBy",
    "GroupColumnsBy",
    "GroupRowsBy",
    "IfMissing",
    "IfNot",
    "IsEqual",
    "IsGreater",
    "IsGreaterEqual",
    "IsLess",
    "IsLessEqual",
    "IsMatch",
    "IsNotEqual",
    "IsNotMatch",
    "LookupMatrix",
    "LookupScalar",
    "LookupVector",
    "Names",
    "OrMask",
    "OrNegatedMask",
    "QueryOperation",
    "QuerySequence",
    "SquareColumnIs",
    "SquareRowIs",
    "XorMask",
    "XorNegatedMask",
]


def _made(
    op: str, name: str, operand: str, base: type[QueryOperation], doc: str
) -> type[QueryOperation]:
    return type(
        name,
        (base,),
        {
            "OPERATOR": op,
            "OPERAND": operand,
            "__doc__": doc,
            "__module__": __name__,
            "__qualname__": name,
        },
    )


def _none(op: str, name: str, doc: str) -> type[QueryOperation]:
    return _made(op, name, "none", QueryOperation, doc)


def _optional(op: str, name: str, doc: str) -> type[QueryOperation]:
    return _made(op, name, "optional", QueryOperation, doc)


def _required(op: str, name: str, doc: str) -> type[QueryOperation]:
    return _made(op, name, "required", QueryOperation, doc)


def _example(setup: str, query: str, result: str, at: int, parsed: str) -> str:
    """Doctest lines: ``query`` run on the data of ``setup`` gives ``result``; its operation
    ``at`` parses as ``parsed``."""
    return (
        f"{setup}\n>>> d.get_np_query({query!r})\n{result}\n"
        f">>> dafzarr.parse_query({query!r})[{at}]\n{parsed}"
    )


def _mask(query: str, result: str, at: int, parsed: str) -> str:
    return _example(EX_MASKS, f"@ cell [ {query} ] : age", result, at, parsed)


Names = _none(
    "?",
    "Names",
    operation_doc(
        "``?``: the names of the scalars, axes, vectors or matrices (a ``set``).",
        "none",
        f"""{EX_AGES}
>>> sorted(d.get_np_query("@ ?")), sorted(d.get_np_query("@ cell : ?"))
(['cell'], ['age'])
>>> dafzarr.parse_query("@ cell : ?")[2]
Names('?')""",
    ),
)
EndMask = _none(
    "]",
    "EndMask",
    operation_doc(
        "``]``: the end of a mask.", "none", _mask("age > 30", "array([35, 41])", 3, "EndMask(']')")
    ),
)
Bang = _none("!", "Bang", "``!`` where no mask operation takes it (no phrase accepts it).")
LookupScalar = _optional(
    ".",
    "LookupScalar",
    operation_doc(
        "``. name``: a scalar.",
        "optional",
        """>>> d = dafzarr.memory_daf("d").set_scalar("version", "1.0")
>>> d.get_np_query(". version")
'1.0'
>>> dafzarr.parse_query(". version")[0]
LookupScalar('. version')""",
    ),
)
LookupVector = _optional(
    ":",
    "LookupVector",
    operation_doc(
        "``: name``: a vector property (also of the values of the previous lookup, as entries "
        "of an axis).",
        "optional",
        _example(EX_TYPES, "@ cell : age", "array([20, 35, 41])", 1, "LookupVector(': age')"),
    ),
)
LookupMatrix = _optional(
    "::",
    "LookupMatrix",
    operation_doc(
        "``:: name``: a matrix property.",
        "optional",
        _example(
            EX_UMIS,
            "@ cell @ gene :: UMIs",
            "array([[1, 0],\n       [3, 4],\n       [0, 6]], dtype=int32)",
            2,
            "LookupMatrix(':: UMIs')",
        ),
    ),
)
Axis = _optional(
    "@",
    "Axis",
    operation_doc(
        "``@ axis``: an axis (its entries), or ``@ axis = entry``: one entry.",
        "optional",
        _example(EX_AGES, ": age @ cell = B", "35", 1, "Axis('@ cell')"),
    ),
)
AsAxis = _optional(
    "=@",
    "AsAxis",
    operation_doc(
        "``=@ [axis]``: the values are entries of an axis (by default, the axis named as the "
        "property): a group-by gives a value for every entry.",
        "optional",
        _example(
            EX_TYPES, "@ cell : age / type =@ >> Max || 0", "array([41,  0])", 3, "AsAxis('=@')"
        ),
    ),
)
IfNot = _optional(
    "??",
    "IfNot",
    operation_doc(
        "``?? [value]``: what an empty value becomes before a chained lookup (without a value: "
        "the entry is dropped).",
        "optional",
        _example(
            EX_TYPES,
            "@ cell : type ?? gray : color",
            "array(['red', 'gray', 'red'], dtype=object)",
            2,
            "IfNot('?? gray')",
        ),
    ),
)
SquareColumnIs = _required(
    "@|",
    "SquareColumnIs",
    operation_doc(
        "``@| entry``: a column of a square matrix.",
        "required",
        _example(
            """>>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"])
>>> d = d.set_matrix("cell", "cell", "distance", np.array([[0, 1], [2, 0]]))""",
            "@ cell :: distance @| A",
            "array([0, 2])",
            2,
            "SquareColumnIs('@| A')",
        ),
    ),
)
SquareRowIs = _required(
    "@-",
    "SquareRowIs",
    operation_doc(
        "``@- entry``: a row of a square matrix.",
        "required",
        _example(
            """>>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"])
>>> d = d.set_matrix("cell", "cell", "distance", np.array([[0, 1], [2, 0]]))""",
            "@ cell :: distance @- A",
            "array([0, 1])",
            2,
            "SquareRowIs('@- A')",
        ),
    ),
)
BeginMask = _required(
    "[",
    "BeginMask",
    operation_doc(
        "``[ property``: the first term of a mask (a Bool property, or compared to a value).",
        "required",
        _mask("is_doublet", "array([35])", 1, "BeginMask('[ is_doublet')"),
    ),
)
AndMask = _required(
    "&",
    "AndMask",
    operation_doc(
        "``& property``: and with another term.",
        "required",
        _mask("age > 30 & is_doublet", "array([35])", 3, "AndMask('& is_doublet')"),
    ),
)
OrMask = _required(
    "|",
    "OrMask",
    operation_doc(
        "``| property``: or with another term.",
        "required",
        _mask("age < 30 | is_doublet", "array([20, 35])", 3, "OrMask('| is_doublet')"),
    ),
)
XorMask = _required(
    "^",
    "XorMask",
    operation_doc(
        "``^ property``: exclusive or with another term.",
        "required",
        _mask("age > 30 ^ is_doublet", "array([41])", 3, "XorMask('^ is_doublet')"),
    ),
)
IsEqual = _required(
    "=",
    "IsEqual",
    operation_doc(
        "``= value``: equal (in a mask term, or ``@ axis = entry``).",
        "required",
        _mask("type = T", "array([20, 41])", 2, "IsEqual('= T')"),
    ),
)
IsNotEqual = _required(
    "!=",
    "IsNotEqual",
    operation_doc(
        "``!= value``: not equal.",
        "required",
        _mask("type != T", "array([35])", 2, "IsNotEqual('!= T')"),
    ),
)
IsLess = _required(
    "<",
    "IsLess",
    operation_doc(
        "``< value``: less than.", "required", _mask("age < 35", "array([20])", 2, "IsLess('< 35')")
    ),
)
IsLessEqual = _required(
    "<=",
    "IsLessEqual",
    operation_doc(
        "``<= value``: at most.",
        "required",
        _mask("age <= 35", "array([20, 35])", 2, "IsLessEqual('<= 35')"),
    ),
)
IsGreater = _required(
    ">",
    "IsGreater",
    operation_doc(
        "``> value``: greater than.",
        "required",
        _mask("age > 30", "array([35, 41])", 2, "IsGreater('> 30')"),
    ),
)
IsGreaterEqual = _required(
    ">=",
    "IsGreaterEqual",
    operation_doc(
        "``>= value``: at least.",
        "required",
        _mask("age >= 35", "array([35, 41])", 2, "IsGreaterEqual('>= 35')"),
    ),
)
IsMatch = _required(
    "~",
    "IsMatch",
    operation_doc(
        "``~ regex``: the regular expression is found in the value (``re.search``; escape "
        "``^`` as ``\\^`` to anchor it).",
        "required",
        _mask("type ~ T", "array([20, 41])", 2, "IsMatch('~ T')"),
    ),
)
IsNotMatch = _required(
    "!~",
    "IsNotMatch",
    operation_doc(
        "``!~ regex``: the regular expression is not found in the value.",
        "required",
        _mask("type !~ T", "array([35])", 2, "IsNotMatch('!~ T')"),
    ),
)
GroupBy = _required(
    "/",
    "GroupBy",
    operation_doc(
        "``/ property``: group a vector's values by the values of a property, then reduce each "
        "group (``>> Name``); the result is over the sorted group values.",
        "required",
        _example(
            EX_MASKS,
            "@ cell : age / is_doublet >> Mean",
            "array([30.5, 35. ])",
            2,
            "GroupBy('/ is_doublet')",
        ),
    ),
)
GroupRowsBy = _required(
    "-/",
    "GroupRowsBy",
    operation_doc(
        "``-/ property``: group a matrix's rows, then reduce each column of each group "
        "(``>- Name``).",
        "required",
        _example(
            EX_UMIS,
            "@ cell @ gene :: UMIs -/ is_doublet >- Sum",
            "array([[1, 6],\n       [3, 4]], dtype=int32)",
            3,
            "GroupRowsBy('-/ is_doublet')",
        ),
    ),
)
GroupColumnsBy = _required(
    "|/",
    "GroupColumnsBy",
    operation_doc(
        "``|/ property``: group a matrix's columns, then reduce each row of each group "
        "(``>| Name``).",
        "required",
        _example(
            EX_UMIS,
            "@ cell @ gene :: UMIs |/ module >| Sum",
            "array([[1],\n       [7],\n       [6]], dtype=int32)",
            3,
            "GroupColumnsBy('|/ module')",
        ),
    ),
)
CountBy = _required(
    "*",
    "CountBy",
    operation_doc(
        "``* property``: count the pairs of values of two vectors (a matrix over the sorted "
        "values of each).",
        "required",
        _example(
            EX_MASKS,
            "@ cell : type * is_doublet",
            "array([[0, 1],\n       [2, 0]], dtype=uint8)",
            2,
            "CountBy('* is_doublet')",
        ),
    ),
)


class _Negated(QueryOperation):
    """A mask operation followed by ``!`` (printed ``op ! operand``)."""

    OPERAND = "required"

    def text(self) -> str:
        return f"{self.OPERATOR} ! {escape_value(self.operand or '')}"


def _negated(op: str, name: str, doc: str) -> type[QueryOperation]:
    return _made(op, name, "required", _Negated, doc)


BeginNegatedMask = _negated(
    "[",
    "BeginNegatedMask",
    operation_doc(
        "``[ ! property``: a negated first term of a mask.",
        "required",
        _mask("! is_doublet", "array([20, 41])", 1, "BeginNegatedMask('[ ! is_doublet')"),
    ),
)
AndNegatedMask = _negated(
    "&",
    "AndNegatedMask",
    operation_doc(
        "``& ! property``: and not another term.",
        "required",
        _mask("age > 30 & ! is_doublet", "array([41])", 3, "AndNegatedMask('& ! is_doublet')"),
    ),
)
OrNegatedMask = _negated(
    "|",
    "OrNegatedMask",
    operation_doc(
        "``| ! property``: or not another term.",
        "required",
        _mask(
            "age > 30 | ! is_doublet", "array([20, 35, 41])", 3, "OrNegatedMask('| ! is_doublet')"
        ),
    ),
)
XorNegatedMask = _negated(
    "^",
    "XorNegatedMask",
    operation_doc(
        "``^ ! property``: exclusive or with the negation of another term.",
        "required",
        _mask("age > 30 ^ ! is_doublet", "array([20, 35])", 3, "XorNegatedMask('^ ! is_doublet')"),
    ),
)

#: The negated variant of each mask operation.
NEGATED: dict[type[QueryOperation], type[QueryOperation]] = {
    BeginMask: BeginNegatedMask,
    AndMask: AndNegatedMask,
    OrMask: OrNegatedMask,
    XorMask: XorNegatedMask,
}


class IfMissing(QueryOperation):
    """``|| value [type]``: the default of a missing property or of an empty reduction.

    Parameters
    ----------
    operand : str
        The value, as text. Without ``type`` its type is guessed: ``true``/``false`` Bool,
        ``e``/``pi`` and other non-integral numbers Float64, integers Int64, else String.
    type : str or None
        The name of the value's type (``Int32``, ``Float32``, ``String``, ...); the value is
        parsed as that type.

    Raises
    ------
    InvalidArgumentTypeError
        If ``operand`` is missing.
    InvalidArgumentError
        If ``type`` is not a type name, or the value is not valid for it.

    Examples
    --------
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"])
    >>> d.get_np_query("@ cell : age || 0")
    array([0, 0])
    >>> d.get_np_query(". version || 1.5 Float32")
    1.5
    >>> dafzarr.parse_query(". version || 1.5 Float32")[1]
    IfMissing('|| 1.5 Float32')
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
            try:
                self.value = parse_as(text, TYPES[type])
            except ValueError:
                raise InvalidArgumentError(
                    f'invalid value: "{text}"\nvalue must be: a valid {type}\nfor the operation: ||'
                ) from None
            self.type_name = type_name(TYPES[type])
        self.dtype = TYPES[self.type_name]

    def text(self) -> str:
        shown = format_value(self.value) if self.dtype is not None else str(self.value)
        guessed = guess_value(shown)[1]
        suffix = "" if guessed == self.type_name else f" {self.type_name}"
        return f"|| {escape_value(shown)}{suffix}"
