"""Daf queries without data: the lexer, the parser, canonical text, errors with their caret,
escaping, and the dimensions of a result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import dafzarr
from dafzarr.daf import query as Q
from dafzarr.errors import DafQueryError, DafQuerySyntaxError, DafzarrError


def _canon(text: str) -> str:
    return str(dafzarr.parse_query(text))


def _message(text: str) -> str:
    with pytest.raises(DafQuerySyntaxError) as info:
        dafzarr.parse_query(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("@cell:age", "@ cell : age"),
        ("@ cell [!is_doublet] : type : color", "@ cell [ ! is_doublet ] : type : color"),
        ("@ cell @ gene [ is_marker ] :: UMIs", "@ cell @ gene [ is_marker ] :: UMIs"),
        ("@ cell @ gene :: UMIs -/ type =@ >- Sum", "@ cell @ gene :: UMIs -/ type =@ >- Sum"),
        ("@ cell @ gene :: UMIs |/ kind >| Mean", "@ cell @ gene :: UMIs |/ kind >| Mean"),
        ("@ cell : score % Log base 2 eps 1", "@ cell : score % Log base 2.0 eps 1.0"),
        ("@ cell : score % Log", "@ cell : score % Log base e eps 0.0"),
        (
            "@ cell : score % Log type Float32 base pi",
            "@ cell : score % Log type Float32 base pi eps 0.0",
        ),
        ("@ cell : score % Abs", "@ cell : score % Abs"),
        ("@ cell : score >> Quantile p 0.25", "@ cell : score >> Quantile p 0.25"),
        ("@ cell : score >> Quantile p 1e-3", "@ cell : score >> Quantile p 0.001"),
        ("@ cell : score >> Quantile p 1e-7", "@ cell : score >> Quantile p 1.0e-7"),
        ("@ metacell != ''", "@ metacell != ''"),
        ("@ cell [ type = '' ]", "@ cell [ type = '' ]"),
        ("@ cell : age || 1.5 Float32", "@ cell : age || 1.5 Float32"),
        ("@ cell : age || 1.5", "@ cell : age || 1.5"),
        ("@ cell : age || 1 Float64", "@ cell : age || 1.0"),
        ("@ cell : age || 2 Int64", "@ cell : age || 2"),
        ("@ cell : age || 2 int8", "@ cell : age || 2 Int8"),
        ("@ cell : age || 7 String", "@ cell : age || 7 String"),
        ("@ cell : kind || true", "@ cell : kind || true"),
        ("@ cell : kind || pi", "@ cell : kind || pi"),
        ("@ cell : kind || none", "@ cell : kind || none"),
        ("@ cell : metacell ?? : type", "@ cell : metacell ?? : type"),
        ("@ cell : metacell ?? blue : type", "@ cell : metacell ?? blue : type"),
        ("@ cell [ a | b & ! c ^ ! d | ! e ]", "@ cell [ a | b & ! c ^ ! d | ! e ]"),
        ("@ cell :: edges @| A", "@ cell :: edges @| A"),
        ("@ cell :: edges @- A", "@ cell :: edges @- A"),
        ("@ cell : type =@ * batch =@ batch", "@ cell : type =@ * batch =@ batch"),
        ("@ cell : age > -1", "@ cell : age > -1"),
        ("@ cell : name ~ \\^HLA\\-", "@ cell : name ~ \\^HLA-"),
        ("@ gene = HLA-A", "@ gene = HLA-A"),
        ("@ cell : type.manual", "@ cell : type.manual"),
        ("# a comment\n@ cell # the axis\n : age\t", "@ cell : age"),
        (". ?", ". ?"),
        ("@ ?", "@ ?"),
        ("@ cell : ?", "@ cell : ?"),
        ("@ cell @ gene :: ?", "@ cell @ gene :: ?"),
        ("@ cell : type =@ cell_type : color", "@ cell : type =@ cell_type : color"),
        ("@ cell : 细胞", "@ cell : 细胞"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert _canon(text) == canonical
    assert _canon(canonical) == canonical  # the canonical text is a fixed point


def test_lexical_pitfalls() -> None:
    # operators win at a token start: `.5` is a scalar lookup of "5"
    assert [type(op) for op in dafzarr.parse_query(".5")] == [Q.LookupScalar]
    assert dafzarr.parse_query(".5")[0].operand == "5"
    # `>-1` is a reduction to a row named "1", which is not a reduction
    assert "unknown reduce operation: 1" in _message("@ a @ b :: m >-1")
    # values keep their signs, exponents, dots and dashes
    ops = dafzarr.parse_query("@ c : x > +2 < 1e-3 = type.manual != HLA-A")
    assert [op.operand for op in ops[2:]] == ["+2", "1e-3", "type.manual", "HLA-A"]
    # escapes make any character a value character, including quotes and spaces
    op = dafzarr.parse_query("@ c = a\\ b\\:c\\'\\'")[1]
    assert op.operand == "a b:c''"
    # the empty string token
    assert dafzarr.parse_query("@ c = ''")[1].operand == ""
    # a negation glued to a combinator is refused with a hint
    message = _message("@ c [ a &! b ]")
    assert message.startswith("unexpected operator: &!") and "'& !'" in message


@pytest.mark.parametrize(
    ("text", "first", "caret"),
    [
        ("cell", "expected: operator", "at: ▲▲▲▲"),
        (">>", "expected: value", "at:   ▲"),
        (">> .", "expected: value", "at:    ▲"),
        ("@ cell : é", "unexpected character: 'é'", "at:          ▲"),
        ("@ cell $ x", "unexpected character: '$'", "at:        ▲"),
        (". score % Frobulate", "unknown eltwise operation: Frobulate", "at:           ▲▲▲▲▲▲▲▲▲"),
        (". score >> Frob", "unknown reduce operation: Frob", "at:            ▲▲▲▲"),
        (
            ". score % Log phase 2",
            "the parameter: phase\ndoes not exist for the operation: Log",
            "at:               ▲▲▲▲▲",
        ),
        (
            ". score % Log base pi base e",
            "repeated parameter: base\nfor the operation: Log",
            "at:                       ▲▲▲▲",
        ),
        (
            ". s % Convert",
            "missing required parameter: type\nfor the eltwise operation: Convert",
            None,
        ),
        (". s >> Quantile", "missing required parameter: p", None),
        (
            ". s >> Quantile p 2",
            (
                'invalid value: "2"\nvalue must be: at most 1\n'
                "for the parameter: p\nfor the operation: Quantile"
            ),
            None,
        ),
        (". s >> Quantile p -0.5", "value must be: at least 0", None),
        (". s % Log base 0", "value must be: positive", None),
        (". s % Log eps -1", "value must be: not negative", None),
        (". s % Log base x", 'invalid value: "x"\nvalue must be: a valid Float64', None),
        (". s % Log type Int32", "value must be: a float type", None),
        (". s % Abs type Frob", "value must be: a number type", None),
        (". s % Clamp min 2 max 1", "value must be: larger than min (2.0)", None),
        (". s % Significant high 2 low 3", "value must be: at most high (2.0)", None),
        (
            ". s || 1.5 Int32",
            (
                'invalid value: "1.5"\nvalue must be: a valid Int32\n'
                "for the parameter: value\nfor the operation: ||"
            ),
            None,
        ),
        (". s || 300 UInt8", "value must be: a valid UInt8", None),
    ],
)
def test_syntax_errors(text: str, first: str, caret: str | None) -> None:
    message = _message(text)
    assert first in message, message
    assert not message.startswith(("in:", "at:"))
    lines = message.split("\n")
    assert lines[-2] == f"in: {text}"
    if caret is not None:
        assert lines[-1] == caret
    assert isinstance(DafQuerySyntaxError(""), DafQueryError | DafzarrError | ValueError)


def test_query_objects_combine_like_text() -> None:
    assert str(Q.Axis("cell") | Q.LookupVector("age")) == "@ cell : age"
    assert str(Q.Axis("cell") | ": age") == "@ cell : age"
    assert str("@ cell" | Q.LookupVector("age")) == "@ cell : age"
    three = Q.Axis("cell") | Q.Axis("gene") | Q.LookupMatrix("UMIs")
    assert str(three) == "@ cell @ gene :: UMIs"
    assert str(three | Q.Sum()) == "@ cell @ gene :: UMIs >> Sum"
    assert str(three | Q.ReduceToColumn(Q.Mean(type="Float32"))) == (
        "@ cell @ gene :: UMIs >| Mean type Float32"
    )
    assert str(Q.LookupVector("age") | Q.Log(base=2, eps=1)) == ": age % Log base 2.0 eps 1.0"
    assert str(Q.BeginNegatedMask("x")) == "[ ! x"
    assert str(Q.IfMissing("0.5", "Float32")) == "|| 0.5 Float32"
    assert dafzarr.parse_query("@ cell : age") == Q.Axis("cell") | Q.LookupVector("age")
    assert str(dafzarr.parse_query("cell", Q.Axis)) == "@ cell"
    assert str(dafzarr.parse_query("version", Q.LookupScalar)) == ". version"
    with pytest.raises(TypeError):
        Q.Axis("cell") | 3  # type: ignore[operator]


def test_user_operations_can_be_registered() -> None:
    @Q.register_eltwise
    class Double(Q.EltwiseOperation):
        NAME = "DoubleForTest"
        PARAMETERS = (Q.Parameter("by", "float", 2.0),)

        def apply(self, values: object) -> object:
            return values * self.params["by"]  # type: ignore[operator]

    assert _canon("@ c : x % DoubleForTest by 3") == "@ c : x % DoubleForTest by 3.0"
    d = dafzarr.memory_daf("registry")
    d.add_axis("c", ["a", "b"])
    d.set_vector("c", "x", [1.0, 2.0])
    assert list(d.get_np_query("@ c : x % DoubleForTest")) == [2.0, 4.0]


def test_a_user_reduction_needs_only_its_result_type_and_one_value() -> None:
    @Q.register_reduction
    class Spread(Q.ReductionOperation):
        NAME = "SpreadForTest"

        def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
            return dtype

        def one(self, values: Any) -> Any:
            return values.max() - values.min()

    # The evaluator's faster passes over stored values are not part of what a user defines.
    hooks = ("reduce", "segments", "keyed", "grouped_rows", "grouped_columns", "dense")
    assert not [name for name in hooks if hasattr(Q.ReductionOperation, name)]
    d = dafzarr.memory_daf("user-reduction").add_axis("cell", ["A", "B", "C"])
    d.add_axis("gene", ["X", "Y"]).set_vector("cell", "k", np.array(["a", "b", "a"]))
    d.set_vector("gene", "g", np.array(["u", "u"]))
    umis = sp.csc_matrix(np.array([[1, 0], [3, 4], [0, 6]], "int32"))
    d.set_matrix("cell", "gene", "UMIs", umis, relayout=False)
    got = {
        q: d.get_np_query(f"@ cell @ gene :: UMIs {q} SpreadForTest").tolist()
        for q in (">-", ">|", "-/ k >-", "|/ g >|")
    }
    assert got == {
        ">-": [3, 6],
        ">|": [1, 1, 6],
        "-/ k >-": [[1, 6], [0, 0]],
        "|/ g >|": [[1], [1], [6]],
    }
    assert d.get_np_query("@ cell @ gene :: UMIs >> SpreadForTest") == 6


def test_escaping_a_value_that_is_not_text_is_an_argument_type_error() -> None:
    with pytest.raises(dafzarr.InvalidArgumentTypeError, match="a query value is a str, not int"):
        dafzarr.escape_value(3)  # type: ignore[arg-type]
    with pytest.raises(dafzarr.InvalidArgumentTypeError, match="a query value is a str, not int"):
        dafzarr.unescape_value(3)  # type: ignore[arg-type]


def test_a_default_not_of_its_type_is_an_argument_error() -> None:
    with pytest.raises(dafzarr.InvalidArgumentError, match='"x"\nvalue must be: a valid Int32'):
        Q.IfMissing("x", "Int32")


@pytest.mark.parametrize(
    ("text", "dims"),
    [
        (". ?", -1),
        ("@ ?", -1),
        ("@ cell : ?", -1),
        ("@ cell @ gene :: ?", -1),
        (". version", 0),
        ("@ cell : age >> Sum", 0),
        (": age @ cell = A", 0),
        (":: UMIs @ cell = A @ gene = X", 0),
        ("@ cell @ gene :: UMIs >> Max", 0),
        ("@ cell", 1),
        ("@ cell : age", 1),
        ("@ cell [ a & b ] : type : color", 1),
        ("@ cell : age / type >> Sum", 1),
        ("@ cell @ gene :: UMIs >| Sum", 1),
        ("@ cell :: edges @| A", 1),
        ("@ cell = A", 1),
        ("@ cell :: UMIs @ gene = X", 1),
        ("@ cell @ gene :: UMIs", 2),
        ("@ cell : type * batch", 2),
        ("@ cell @ gene :: UMIs -/ type >- Sum", 2),
        ("@ cell @ gene [ m ] :: UMIs % Abs", 2),
        ("@ cell [ a ] @ gene [ b & c ] [ d ] :: UMIs |/ k ?? : t =@ >| Mean || 0", 2),
        ("@ cell : age / metacell ?? : type =@ >> Sum || 0 % Log", 1),
        ("@ cell : age / m @ gene = X >> Sum", 1),
        ("@ cell : age * d @| c1 = 2", 2),
        ("@ cell @ gene :: label =@ kind ?? 0 :: UMIs @ gene = g4 >| Max", 1),
        ("@ cell : age || 0 >> Sum || 0 % Abs", 0),
        ("@ cell :: UMIs @ gene = X >> Max", 0),
    ],
)
def test_query_result_dimensions(text: str, dims: int) -> None:
    assert dafzarr.query_result_dimensions(text) == dims


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("% Abs", "invalid operation(s)\nin the query: % Abs\nat location:  ▲▲▲▲▲"),
        ("? ?", "invalid operation(s)\nin the query: ? ?\nat location:  ▲"),
        (". score [ is_first ]", "at location:          ▲▲▲▲▲▲▲▲▲▲"),
        ("@ cell @ gene", "invalid query: @ cell @ gene"),
        ("@ cell : age / type", "invalid query"),
        ("@ cell @ gene :: UMIs -/ type >| Sum", f"at location:  {' ' * 30}▲▲▲▲▲▲"),
        ("@ cell @ gene :: UMIs |/ type >> Sum", "invalid operation"),
        ("@ cell : age / type >- Sum", "invalid operation"),
        ("@ cell : age >- Sum", "invalid operation"),
        (". ? ?", "invalid operation"),
        ("@ ? : x", "invalid operation"),
        ("@ cell [ a ] !", "invalid operation"),
        (": age @ cell", "invalid query"),
        ("@ cell : age * type * x", "invalid operation"),
        ("@ cell @ gene :: ? x", "expected: operator"),
    ],
)
def test_dimensions_of_invalid_queries_raise(text: str, message: str) -> None:
    with pytest.raises(DafQueryError) as info:
        dafzarr.query_result_dimensions(text)
    assert message in str(info.value)


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(_TEXT)
def test_escape_round_trips(value: str) -> None:
    escaped = dafzarr.escape_value(value)
    assert dafzarr.unescape_value(escaped) == value
    ops = dafzarr.parse_query(f"@ cell = {escaped}")
    assert ops[1].operand == value
    assert dafzarr.parse_query(str(ops)) == ops


def test_escape_examples() -> None:
    assert dafzarr.escape_value("") == "''"
    assert dafzarr.escape_value("HLA-A") == "HLA-A"
    assert dafzarr.escape_value("a b:c") == "a\\ b\\:c"
    assert dafzarr.escape_value("naïve") == "na\\ïve"
    assert dafzarr.escape_value("细胞") == "细胞"
    assert dafzarr.unescape_value("a\\ b") == "a b"


@pytest.mark.parametrize(
    ("text", "axis"),
    [
        ("@ cell", "cell"),
        ("@ cell [ a ]", "cell"),
        ("@ cell [ ! a & b @ gene = X ] [ c ]", "cell"),
        ("@ cell : age", None),
        ("@ cell [ a ] : age", None),
        ("@ cell @ gene :: UMIs", None),
        (". x", None),
        ("@ ?", None),
        ("@ cell [ a", None),
        ("@ cell = A", None),
    ],
)
def test_axis_queries(text: str, axis: str | None) -> None:
    assert Q.is_axis_query(text) == (axis is not None)
    if axis is None:
        with pytest.raises(DafQueryError, match="not an axis query"):
            Q.query_axis_name(text)
    else:
        assert Q.query_axis_name(text) == axis


def test_relayout_is_reported() -> None:
    d = dafzarr.memory_daf("layout")
    d.add_axis("cell", ["a", "b"])
    d.add_axis("gene", ["x"])
    d.set_matrix("gene", "cell", "UMIs", [[1, 2]], relayout=False)
    assert Q.query_requires_relayout(d, "@ cell @ gene :: UMIs")
    assert not Q.query_requires_relayout(d, "@ gene @ cell :: UMIs")
    # A column of one layout is a row of the other: read where it is stored, no relayout.
    assert not Q.query_requires_relayout(d, "@ cell :: UMIs @ gene = x")
    assert not Q.query_requires_relayout(d, ":: UMIs @ cell = a @ gene = x")
    assert not Q.query_requires_relayout(d, "@ cell : name")


def test_escape_of_a_leading_dot() -> None:
    assert dafzarr.escape_value(".5") == "\\.5"
    assert dafzarr.parse_query(f"@ cell = {dafzarr.escape_value('.5')}")[1].operand == ".5"
    assert dafzarr.escape_value("a.5") == "a.5"
