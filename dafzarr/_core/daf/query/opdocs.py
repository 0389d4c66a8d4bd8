"""The numpydoc text of the query operation classes: their sections and the small data sets
their examples query.

Every operation class (``[ property``, ``> value``, ``/ property``, ``% Log``, ``>> Sum``, ...)
documents the phrase it stands for and shows it run through a query string on one of the
data sets below (each built in memory by the example itself).
"""

from __future__ import annotations

__all__ = [
    "EX_AGES",
    "EX_MASKS",
    "EX_TYPES",
    "EX_UMIS",
    "operation_doc",
    "registered_doc",
    "registered_example",
]

#: Three cells with an ``age``.
EX_AGES = """\
>>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"])
>>> d = d.set_vector("cell", "age", np.array([20, 35, 41]))"""

#: :data:`EX_AGES`, a Bool ``is_doublet`` and a String ``type`` of each cell.
EX_MASKS = (
    EX_AGES
    + """
>>> d = d.set_vector("cell", "is_doublet", np.array([False, True, False]))
>>> d = d.set_vector("cell", "type", np.array(["T", "B", "T"]))"""
)

#: :data:`EX_AGES` and a ``type`` axis with a ``color``; the type of cell ``B`` is empty.
EX_TYPES = (
    EX_AGES
    + """
>>> d = d.add_axis("type", ["T", "B"]).set_vector("type", "color", np.array(["red", "blue"]))
>>> d = d.set_vector("cell", "type", np.array(["T", "", "T"]))"""
)

#: Three cells, two genes and the ``UMIs`` of each (cell, gene); a ``module`` of each gene.
EX_UMIS = """\
>>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"]).add_axis("gene", ["X", "Y"])
>>> d = d.set_matrix("cell", "gene", "UMIs", np.array([[1, 0], [3, 4], [0, 6]], "int32"))
>>> d = d.set_vector("cell", "is_doublet", np.array([False, True, False]))
>>> d = d.set_vector("gene", "module", np.array(["m", "m"]))"""

_OPERAND = {
    "none": """\
operand : None
    This operator takes no operand.""",
    "optional": """\
operand : str or None
    The name or value following the operator (unescaped), if any.""",
    "required": """\
operand : str
    The name or value following the operator (unescaped).""",
}

_RAISES_OPERAND = """\
InvalidArgumentTypeError
    If ``operand`` is missing where the operator requires one, or given where it takes
    none."""


def operation_doc(summary: str, operand: str, examples: str, details: str = "") -> str:
    """The docstring of a structural operation class: ``summary``, ``details``, the
    parameters of an operation whose operand is ``operand`` (``"none"``, ``"optional"`` or
    ``"required"``) and ``examples`` (doctest lines)."""
    more = f"\n\n{details}" if details else ""
    return (
        f"{summary}{more}\n\nParameters\n----------\n{_OPERAND[operand]}\n\n"
        f"Raises\n------\n{_RAISES_OPERAND}\n\nExamples\n--------\n{examples}\n"
    )


def registered_doc(summary: str, parameters: str, examples: str, details: str = "") -> str:
    """The docstring of an element-wise or reduction operation class: ``summary``,
    ``details``, the description of its ``parameters`` (``name (type, default)``: meaning,
    one a line, or ``""`` for none) and ``examples`` (doctest lines)."""
    more = f"\n\n{details}" if details else ""
    items = [line.split(" ", 1) for line in parameters.splitlines()]
    text = (
        "\n\n" + "\n".join(f"    * ``{name}`` {rest}" for name, rest in items)
        if items
        else ("\n    This operation has no parameters.")
    )
    return (
        f"{summary}{more}\n\nParameters\n----------\n**params : str or float\n"
        f"    The parameters by name, as given after the operation's name in a query."
        f"{text}\n\nRaises\n------\nDafQueryParameterError\n"
        f"    If a parameter does not exist for the operation, a required one is missing "
        f"or a value\n    is not valid (not a number, not a type name, out of range).\n\n"
        f"Examples\n--------\n{examples}\n"
    )


def registered_example(query: str, result: str, made: str, text: str, setup: str = EX_AGES) -> str:
    """Doctest lines: ``query`` on the data of ``setup`` gives ``result``; the operation
    ``made`` in code prints as ``text``."""
    name = made.split("(")[0]
    return (
        f"{setup}\n>>> d.get_np_query({query!r})\n{result}\n"
        f">>> from dafzarr.daf.query import {name}\n>>> str({made})\n{text!r}"
    )
