"""Contracts of computations (``dafzarr.Contract``, ``dafzarr.contractor``): the cases of
DataAxesFormats.jl's contract tests in other data, on memory, directory and ZIP data sets -
combining contracts, verifying inputs and outputs of each kind and expectation, refused and
tracked accesses (also through queries), tensors - plus the contract types themselves."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import (
    Contract,
    ContractExpectation,
    CreatedOutput,
    GuaranteedOutput,
    OptionalInput,
    OptionalOutput,
    RequiredInput,
    contractor,
)
from dafzarr.daf.ops import ContractDaf, ElementType
from dafzarr.errors import DafContractError, InvalidArgumentError, InvalidArgumentTypeError

Maker = Callable[[str], Any]
ALL = (RequiredInput, OptionalInput, CreatedOutput, GuaranteedOutput, OptionalOutput)
WHERE = ("for the computation: computation", "on the daf data: memory!")


@pytest.fixture
def make(writable_dafs: Maker) -> Maker:
    """Makes empty writable data sets of one backend (memory, directory, ZIP)."""
    return writable_dafs


def _raises(*lines: str, cls: type[Exception] = DafContractError) -> Any:
    return pytest.raises(cls, match="^" + re.escape("\n".join(lines)) + "$")


def _filled(make: Maker) -> Any:
    d = make("memory!")
    d.set_scalar("version", 1)
    d.add_axis("cell", ["A", "B"])
    d.add_axis("gene", ["X", "Y", "Z"])
    d.set_vector("cell", "age", np.array([1, 2]))
    d.set_matrix("cell", "gene", "UMIs", np.array([[0, 1, 2], [3, 4, 5]]))
    return d


# --- Combining contracts -------------------------------------------------------------------


def _axis_of(contract: Contract) -> Any:
    return dict(contract.axes)["cell"].expectation


@pytest.mark.parametrize(("first", "then", "combined"), [
    (RequiredInput, RequiredInput, RequiredInput),
    (RequiredInput, OptionalInput, RequiredInput),
    (OptionalInput, RequiredInput, RequiredInput),
    (OptionalInput, OptionalInput, OptionalInput),
    (CreatedOutput, RequiredInput, CreatedOutput),
    (CreatedOutput, OptionalInput, CreatedOutput),
    (GuaranteedOutput, RequiredInput, GuaranteedOutput),
    (GuaranteedOutput, OptionalInput, GuaranteedOutput),
    (OptionalOutput, OptionalInput, OptionalOutput),
])  # fmt: skip
def test_combined_expectations(first: Any, then: Any, combined: Any) -> None:
    left = Contract(axes={"cell": (first, "description")})
    right = Contract(axes=[("cell", (then, "description"))])
    assert _axis_of(left >> right) is combined
    assert _axis_of(left.then(right)) is combined


@pytest.mark.parametrize(("first", "then"), [
    (OptionalOutput, OptionalOutput), (OptionalOutput, RequiredInput),
    (RequiredInput, CreatedOutput), (CreatedOutput, CreatedOutput),
    (OptionalInput, GuaranteedOutput),
])  # fmt: skip
def test_incompatible_expectations(first: Any, then: Any) -> None:
    left = Contract(axes={"cell": (first, "description")})
    right = Contract(axes={"cell": (then, "description")})
    with _raises(
        f"incompatible expectation: {first}",
        f"and expectation: {then}",
        "for the contracts axis: cell",
    ):
        left >> right


def test_combining_keeps_one_sided_entries_names_and_relaxation() -> None:
    left = Contract(name="first", axes={"cell": (RequiredInput, "cells")})
    assert (left >> Contract()).axes == left.axes
    assert (Contract() >> left).axes == left.axes
    both = left >> Contract(name="second", is_relaxed=True, axes={"gene": (CreatedOutput, "genes")})
    assert both.name == "first_second" and both.is_relaxed
    assert [a for a, _ in both.axes] == ["cell", "gene"]
    assert (Contract() >> Contract(name="x")).name == "x"
    with _raises(
        "different description: 'other'", "and description: 'cells'", "for the contracts axis: cell"
    ):
        left >> Contract(axes={"cell": (RequiredInput, "other")})


@pytest.mark.parametrize(("first", "then", "narrowed"), [
    (np.int32, np.int32, "int32"), (np.int32, "integer", "int32"),
    ("integer", np.int32, "int32"), ("real", (np.float32, np.float64), "float32 | float64"),
])  # fmt: skip
def test_combined_types_narrow(first: Any, then: Any, narrowed: str) -> None:
    key = ("cell", "age")
    left = Contract(data={key: (RequiredInput, first, "description")})
    right = Contract(data={key: (RequiredInput, then, "description")})
    assert str(dict((left >> right).data)[key].type) == narrowed


def test_incompatible_types() -> None:
    key = ("cell", "age")
    left = Contract(data={key: (RequiredInput, np.int64, "description")})
    right = Contract(data={key: (RequiredInput, np.int32, "description")})
    with _raises(
        "incompatible type: int64", "and type: int32", "for the contracts data: ('cell', 'age')"
    ):
        left >> right


# --- The contract's own types --------------------------------------------------------------


def test_element_types() -> None:
    assert ElementType.of(int) == ElementType.of("int64") == ElementType.of(np.int64)
    assert str(ElementType.of(float)) == "float64"
    assert str(ElementType.of(str)) == "str" and ElementType.of(str).admits("str")
    integer = ElementType.of("integer")
    assert integer == ElementType.of(np.integer)
    assert integer.admits("uint8") and not integer.admits("bool")
    assert not integer.admits("float32")
    assert ElementType.of(np.floating).dtypes == {"float32", "float64"}
    assert ElementType.of("number").admits("float32")
    assert ElementType.of(bool).admits("bool") and not ElementType.of(bool).admits("uint8")
    union = ElementType.of((np.uint8, np.uint16))
    assert str(union) == "uint8 | uint16" and union.dtypes == {"uint8", "uint16"}
    for bad in (complex, "datetime64[ns]", "nonsense", (), object):
        with pytest.raises(InvalidArgumentError, match="invalid element type"):
            ElementType.of(bad)


def test_specifications_may_be_lists() -> None:
    listed = Contract(
        axes={"cell": [RequiredInput, "d"]}, data={("cell", "age"): [RequiredInput, int, "d"]}
    )
    assert listed == Contract(
        axes={"cell": (RequiredInput, "d")}, data={("cell", "age"): (RequiredInput, int, "d")}
    )
    assert hash(listed) == hash(
        Contract(
            axes={"cell": (RequiredInput, "d")}, data={("cell", "age"): (RequiredInput, int, "d")}
        )
    )


def test_expectations() -> None:
    assert str(CreatedOutput) == "CreatedOutput"
    assert [e.label for e in ContractExpectation] == [
        "required",
        "optional",
        "created",
        "guaranteed",
        "optional",
    ]
    assert len(ContractExpectation) == 5
    assert dafzarr.RequiredInput is ContractExpectation.RequiredInput


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"axes": {1: (RequiredInput, "d")}}, "invalid axis key: 1"),
    ({"axes": {"cell": (RequiredInput,)}}, "invalid axis specification: "),
    ({"axes": {"cell": ("required", "d")}}, "invalid expectation: 'required'"),
    ({"axes": {"cell": (RequiredInput, 3)}}, "invalid description: 3"),
    ({"axes": ["cell"]}, "invalid contract axes item: 'cell'"),
    ({"data": {("a",): (RequiredInput, int, "d")}}, "invalid data key: ('a',)"),
    ({"data": {("a", 1): (RequiredInput, int, "d")}}, "invalid data key: ('a', 1)"),
    ({"data": {"v": (RequiredInput, "d")}}, "invalid data specification: "),
    ({"data": {"v": (RequiredInput, "huge", "d")}}, "invalid element type: 'huge'"),
    ({"name": 3}, "invalid contract name: 3"),
])  # fmt: skip
def test_invalid_contracts(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(text)):
        Contract(**kwargs)


def test_contractor_needs_a_contract(make: Maker) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="not a Contract"):
        contractor("computation", {"axes": {}}, make("memory!"))  # type: ignore[arg-type]
    with pytest.raises(
        InvalidArgumentTypeError,
        match="not a Daf data set: 'daf'\nfor the computation: computation",
    ):
        contractor("computation", Contract(), "daf")


# --- Verifying each kind and expectation ---------------------------------------------------


def _contract_for(kind: str, expectation: Any, element: Any = np.int64) -> Contract:
    axes = {"cell": (RequiredInput, "cells"), "gene": (RequiredInput, "genes")}
    if kind == "axis":
        return Contract(axes={"cell": (expectation, "description")})
    key = {"scalar": "version", "vector": ("cell", "age"), "matrix": ("cell", "gene", "UMIs")}[kind]
    return Contract(
        axes=axes if kind != "scalar" else None, data={key: (expectation, element, "description")}
    )


def _touch_axes(proxy: ContractDaf, kind: str) -> None:
    if kind in ("vector", "matrix"):
        assert proxy.axis_length("cell") == 2 and proxy.axis_length("gene") == 3


def _read(proxy: ContractDaf, kind: str) -> None:
    if kind == "scalar":
        assert proxy.get_scalar("version") == 1
    elif kind == "axis":
        assert proxy.axis_length("cell") == 2
    elif kind == "vector":
        assert proxy.get_np_vector("cell", "age").tolist() == [1, 2]
    else:
        assert proxy.get_np_matrix("cell", "gene", "UMIs").tolist() == [[0, 1, 2], [3, 4, 5]]


def _what(kind: str) -> tuple[str, ...]:
    return {
        "scalar": ("scalar: version",),
        "axis": ("axis: cell",),
        "vector": ("vector: age", "of the axis: cell"),
        "matrix": ("matrix: UMIs", "of the rows axis: cell", "and the columns axis: gene"),
    }[kind]


# The whole matrix of cases on the memory backend by default; on stored ones in the slow run
# (the checks read the same metadata on every backend).
_MEMORY_FIRST = pytest.mark.parametrize(
    "writable_dafs",
    [
        "memory",
        pytest.param("directory", marks=pytest.mark.slow),
        pytest.param("zip", marks=pytest.mark.slow),
    ],
    indirect=True,
)


@_MEMORY_FIRST
@pytest.mark.parametrize("kind", ["scalar", "axis", "vector", "matrix"])
@pytest.mark.parametrize("expectation", ALL, ids=str)
@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("direction", ["input", "output"])
@pytest.mark.parametrize("accessed", [False, True])
def test_existing_properties(
    make: Maker, kind: str, expectation: Any, overwrite: bool, direction: str, accessed: bool
) -> None:
    d = _filled(make)
    proxy = contractor("computation", _contract_for(kind, expectation), d, overwrite=overwrite)
    _touch_axes(proxy, kind)
    if accessed:
        _read(proxy, kind)
    verify = proxy.verify_input if direction == "input" else proxy.verify_output
    head, *rest = _what(kind)
    if direction == "output" and expectation is RequiredInput and not accessed:
        with _raises(
            f"unused RequiredInput {head}",
            *rest,
            "of the computation: computation",
            "on the daf data: memory!",
        ):
            verify()
    elif direction == "input" and expectation is CreatedOutput and not overwrite:
        with _raises(f"pre-existing CreatedOutput {head}", *rest, *WHERE):
            verify()
    else:
        verify()


@pytest.mark.parametrize("kind", ["scalar", "axis", "vector", "matrix"])
@pytest.mark.parametrize("expectation", ALL, ids=str)
def test_missing_properties(make: Maker, kind: str, expectation: Any) -> None:
    d = make("memory!")
    if kind in ("vector", "matrix"):
        d.add_axis("cell", ["A", "B"])
        d.add_axis("gene", ["X", "Y", "Z"])
    proxy = contractor("computation", _contract_for(kind, expectation), d)
    _touch_axes(proxy, kind)
    head, *rest = _what(kind)
    typed = (
        ()
        if kind == "axis"
        else ("with type: int64" if kind == "scalar" else "with element type: int64",)
    )
    if expectation is RequiredInput:
        with _raises(f"missing input {head}", *rest, *typed, *WHERE):
            proxy.verify_input()
    else:
        proxy.verify_input()
    if expectation is CreatedOutput:
        with _raises(f"missing output {head}", *rest, *typed, *WHERE):
            proxy.verify_output()
    else:
        proxy.verify_output()


@pytest.mark.parametrize("kind", ["scalar", "vector", "matrix"])
@pytest.mark.parametrize("expectation", ALL, ids=str)
def test_unexpected_element_types(make: Maker, kind: str, expectation: Any) -> None:
    d = make("memory!")
    d.set_scalar("version", "1.0")
    d.add_axis("cell", ["A", "B"])
    d.add_axis("gene", ["X", "Y", "Z"])
    d.set_vector("cell", "age", np.array([1.0, 2.0]))
    d.set_matrix("gene", "cell", "UMIs", sp.csc_matrix(np.array([[0.0, 1], [2, 0], [0, 3]])))
    proxy = contractor("computation", _contract_for(kind, expectation), d, overwrite=True)
    _touch_axes(proxy, kind)
    head, *rest = _what(kind)
    found = "str" if kind == "scalar" else "float64"
    for direction, verify in (("input", proxy.verify_input), ("output", proxy.verify_output)):
        with _raises(
            f"unexpected type: {found}",
            "instead of type: int64",
            f"for the {direction} {head}",
            *rest,
            *WHERE,
        ):
            verify()
    fine = contractor(
        "computation", _contract_for(kind, expectation, (str, "float")), d, overwrite=True
    )
    fine.verify_input()


def test_axes_of_properties_must_be_listed_and_compatible(make: Maker) -> None:
    d = _filled(make)
    with _raises("non-contract axis: cell", "for the RequiredInput vector: age", *WHERE):
        contractor("computation", Contract(data={("cell", "age"): (RequiredInput, int, "d")}), d)
    with _raises(
        "incompatible OptionalInput axis: cell", "for the RequiredInput vector: age", *WHERE
    ):
        contractor(
            "computation",
            Contract(
                axes={"cell": (OptionalInput, "d")},
                data={("cell", "age"): (RequiredInput, int, "d")},
            ),
            d,
        )
    with _raises(
        "non-contract axis: gene",
        "for the columns of the CreatedOutput matrix: UMIs",
        "with the rows axis: cell",
        *WHERE,
    ):
        contractor(
            "computation",
            Contract(
                axes={"cell": (RequiredInput, "d")},
                data={("cell", "gene", "UMIs"): (CreatedOutput, int, "d")},
            ),
            d,
        )
    with _raises(
        "incompatible OptionalOutput axis: cell",
        "for the rows of the CreatedOutput matrix: UMIs",
        "with the columns axis: gene",
        *WHERE,
    ):
        contractor(
            "computation",
            Contract(
                axes={"cell": (OptionalOutput, "d"), "gene": (RequiredInput, "d")},
                data={("cell", "gene", "UMIs"): (CreatedOutput, int, "d")},
            ),
            d,
        )


# --- Accesses ------------------------------------------------------------------------------


def test_relaxed_contracts_allow_everything(make: Maker) -> None:
    d = _filled(make)
    proxy = contractor("computation", Contract(is_relaxed=True), d)
    assert proxy.name == "memory!.for.computation"
    assert repr(proxy) == "Contract ZarrDaf memory!.for.computation"
    assert proxy.description() == d.description()
    assert proxy.axes_set() == {"cell", "gene"} == proxy.get_np_query("@ ?")
    assert proxy.axis_np_entries("cell").tolist() == ["A", "B"]
    assert proxy.get_np_query("@ cell").tolist() == ["A", "B"]
    assert proxy.axis_dict("cell") == {"A": 0, "B": 1}
    assert proxy.axis_np_indices("cell", ["B", "A"]).tolist() == [1, 0]
    assert proxy.get_scalar("version") == 1 and proxy.get_np_query(". version") == 1
    assert proxy.has_scalar("version") and not proxy.has_scalar("quality")
    assert proxy.has_vector("cell", "age") and not proxy.has_vector("cell", "batch")
    assert proxy.get_pd_query("@ cell : age").tolist() == [1, 2]
    assert proxy.get_pd_vector("cell", "age").index.tolist() == ["A", "B"]
    assert proxy.has_matrix("gene", "cell", "UMIs")
    assert proxy.matrices_set("cell", "gene") == {"UMIs"}
    assert proxy.get_np_query("@ cell @ gene :: UMIs").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert proxy.get_pd_matrix("gene", "cell", "UMIs").shape == (3, 2)
    proxy.empty_cache()
    proxy.verify_input()
    proxy.verify_output()


def test_an_empty_contract_refuses_every_read_but_allows_listings(make: Maker) -> None:
    d = _filled(make)
    proxy = contractor("computation", Contract(), d)
    assert proxy.axes_set() == d.axes_set() and proxy.scalars_set() == {"version"}
    assert proxy.has_axis("cell") and proxy.vectors_set("cell") == {"age"}
    assert proxy.matrices_set("cell", "gene") == {"UMIs"}
    axis = ("accessing non-contract axis: cell", *WHERE)
    for read in (
        lambda: proxy.axis_np_entries("cell"),
        lambda: proxy.axis_length("cell"),
        lambda: proxy.axis_np_indices("cell", ["A"]),
        lambda: proxy.axis_dict("cell"),
        lambda: proxy.get_np_query("@ cell"),
        lambda: proxy.get_np_vector("cell", "name"),
    ):
        with _raises(*axis):
            read()
    for read in (lambda: proxy.get_scalar("version"), lambda: proxy.get_np_query(". version")):
        with _raises("accessing non-contract scalar: version", *WHERE):
            read()


def test_listed_axes_do_not_open_their_properties(make: Maker) -> None:
    d = _filled(make)
    proxy = contractor(
        "computation",
        Contract(axes={"cell": (OptionalInput, "d"), "gene": (OptionalInput, "d")}),
        d,
    )
    assert proxy.get_np_vector("cell", "name").tolist() == ["A", "B"]
    assert proxy.get_np_vector("cell", "index").tolist() == [0, 1]
    reads: tuple[Callable[[], Any], ...] = (
        lambda: proxy.get_np_vector("cell", "age"),
        lambda: proxy.get_np_query("@ cell : age"),
    )
    for read in reads:
        with _raises("accessing non-contract vector: age", "of the axis: cell", *WHERE):
            read()
    for read in (
        lambda: proxy.get_np_matrix("cell", "gene", "UMIs"),
        lambda: proxy.get_np_query("@ cell @ gene :: UMIs"),
    ):
        with _raises(
            "accessing non-contract matrix: UMIs",
            "of the rows axis: cell",
            "and the columns axis: gene",
            *WHERE,
        ):
            read()


FULL_INPUTS = Contract(
    axes={"cell": (OptionalInput, "d"), "gene": (OptionalInput, "d")},
    data={
        "version": (OptionalInput, "integer", "d"),
        ("cell", "age"): (OptionalInput, "real", "d"),
        ("cell", "gene", "UMIs"): (OptionalInput, "number", "d"),
    },
)


def test_inputs_read_alike_and_may_not_be_modified(make: Maker) -> None:
    d = _filled(make)
    proxy = contractor("computation", FULL_INPUTS, d)
    assert proxy.get_scalar("version") == d.get_scalar("version")
    assert proxy.get_np_vector("cell", "age").tolist() == [1, 2]
    assert proxy.get_np_matrix("gene", "cell", "UMIs").shape == (3, 2)
    umis = ("of the rows axis: cell", "and the columns axis: gene")
    for write, lines in (
        (lambda: proxy.add_axis("cell", ["C"]), ("modifying OptionalInput axis: cell",)),
        (lambda: proxy.delete_axis("cell"), ("modifying OptionalInput axis: cell",)),
        (
            lambda: proxy.set_scalar("version", 2, overwrite=True),
            ("modifying OptionalInput scalar: version",),
        ),
        (lambda: proxy.delete_scalar("version"), ("modifying OptionalInput scalar: version",)),
        (
            lambda: proxy.set_vector("cell", "age", [3, 4], overwrite=True),
            ("modifying OptionalInput vector: age", "of the axis: cell"),
        ),
        (
            lambda: proxy.delete_vector("cell", "age"),
            ("modifying OptionalInput vector: age", "of the axis: cell"),
        ),
        (
            lambda: proxy.set_matrix("cell", "gene", "UMIs", np.zeros((2, 3)), overwrite=True),
            ("modifying OptionalInput matrix: UMIs", *umis),
        ),
        (
            lambda: proxy.delete_matrix("cell", "gene", "UMIs"),
            ("modifying OptionalInput matrix: UMIs", *umis),
        ),
        (
            lambda: proxy.relayout_matrix("cell", "gene", "UMIs", overwrite=True),
            (
                "modifying OptionalInput matrix: UMIs",
                "of the rows axis: gene",
                "and the columns axis: cell",
            ),
        ),
        (
            lambda: proxy.empty_dense_vector("cell", "age", np.float32, overwrite=True),
            ("modifying OptionalInput vector: age", "of the axis: cell"),
        ),
        (
            lambda: proxy.empty_dense_matrix("cell", "gene", "UMIs", np.float32, overwrite=True),
            ("modifying OptionalInput matrix: UMIs", *umis),
        ),
    ):
        with _raises(*lines, *WHERE):
            write()
    assert d.get_np_vector("cell", "age").tolist() == [1, 2]  # nothing was written


def test_outputs_are_written_through(make: Maker) -> None:
    contract = Contract(
        axes={"cell": (OptionalOutput, "d"), "gene": (OptionalOutput, "d")},
        data={
            "version": (OptionalOutput, "integer", "d"),
            ("cell", "age"): (OptionalOutput, "float", "d"),
            ("cell", "gene", "UMIs"): (OptionalOutput, "float", "d"),
        },
    )
    d = make("memory!")
    proxy = contractor("computation", contract, d)
    proxy.set_scalar("version", 1).add_axis("cell", ["A", "B"]).add_axis("gene", ["X", "Y", "Z"])
    proxy.set_vector("cell", "age", np.array([1.0, 2.0]))
    proxy.set_matrix("cell", "gene", "UMIs", np.ones((2, 3)), relayout=False)
    proxy.relayout_matrix("cell", "gene", "UMIs")
    assert d.has_matrix("gene", "cell", "UMIs", relayout=False)
    with proxy.empty_dense_vector("cell", "age", np.float32, overwrite=True) as ages:
        ages[:] = [3, 4]
    assert d.get_np_vector("cell", "age").tolist() == [3, 4]
    with proxy.empty_dense_matrix("cell", "gene", "UMIs", np.float32, overwrite=True) as m:
        m[:] = 2
    assert d.get_np_matrix("cell", "gene", "UMIs").sum() == 12
    with proxy.empty_sparse_vector("cell", "age", np.float32, 1, overwrite=True) as (ind, val):
        ind[:] = [2]
        val[:] = [5]
    assert d.get_np_vector("cell", "age").tolist() == [0, 5]
    with proxy.empty_sparse_matrix("cell", "gene", "UMIs", np.float32, 2, overwrite=True) as (
        colptr,
        rowval,
        nzval,
    ):
        colptr[:] = [1, 2, 2, 3]
        rowval[:] = [1, 2]
        nzval[:] = [7, 8]
    assert d.get_np_matrix("cell", "gene", "UMIs").toarray().tolist() == [[7, 0, 0], [0, 0, 8]]
    proxy.verify_output()
    proxy.delete_matrix("cell", "gene", "UMIs").delete_vector("cell", "age")
    proxy.delete_scalar("version").delete_axis("cell")
    assert d.axes_set() == {"gene"} and not d.has_scalar("version")


def test_queries_mark_what_they_read(make: Maker) -> None:
    d = _filled(make)
    contract = Contract(
        axes={"cell": (RequiredInput, "d")},
        data={
            ("cell", "age"): (RequiredInput, "integer", "d"),
            "version": (RequiredInput, "integer", "d"),
        },
    )
    proxy = contractor("computation", contract, d)
    proxy.verify_input()
    assert proxy.get_np_query("@ cell : age >> Sum") == 3
    with _raises(
        "unused RequiredInput scalar: version",
        "of the computation: computation",
        "on the daf data: memory!",
    ):
        proxy.verify_output()
    assert proxy.get_np_query(". version") == 1
    proxy.verify_output()


def test_writes_through_the_wrapper_refresh_its_query_results(make: Maker) -> None:
    d = _filled(make)
    contract = Contract(
        axes={"cell": (RequiredInput, "d")}, data={("cell", "score"): (CreatedOutput, "float", "d")}
    )
    proxy = contractor("computation", contract, d)
    proxy.set_vector("cell", "score", np.array([0.5, 1.5]))
    assert proxy.get_np_query("@ cell : score >> Sum") == 2.0
    proxy.set_vector("cell", "score", np.array([1.5, 1.5]), overwrite=True)
    assert proxy.get_np_query("@ cell : score >> Sum") == 3.0
    proxy.verify_output()


# --- Tensors -------------------------------------------------------------------------------


def _tensor(main: Any, data: Any, axes: Any = RequiredInput) -> Contract:
    return Contract(
        axes={"gene": (axes, "d"), "cell": (axes, "d"), "batch": (main, "d")},
        data={("batch", "cell", "gene", "is_high"): (data, bool, "d")},
    )


def _cells_and_genes(make: Maker, batches: bool = True, name: str = "memory!") -> Any:
    d = make(name)
    d.add_axis("cell", ["A", "B"])
    d.add_axis("gene", ["X", "Y", "Z"])
    if batches:
        d.add_axis("batch", ["U", "V"])
    return d


U = np.array([[True, False], [False, True], [True, False]])


def test_tensor_inputs_are_the_matrices_of_each_entry(make: Maker) -> None:
    d = _cells_and_genes(make)
    d.set_matrix("gene", "cell", "U_is_high", U)
    proxy = contractor("computation", _tensor(RequiredInput, RequiredInput), d)
    proxy.get_np_matrix("gene", "cell", "U_is_high")
    with _raises(
        "missing input matrix: V_is_high",
        "of the rows axis: cell",
        "and the columns axis: gene",
        "with element type: bool",
        *WHERE,
    ):
        proxy.verify_input()
    d.set_matrix("gene", "cell", "V_is_high", ~U)
    proxy = contractor("computation", _tensor(RequiredInput, RequiredInput), d)
    proxy.verify_input()
    proxy.get_np_matrix("gene", "cell", "U_is_high")  # one entry marks the tensor used
    proxy.verify_output()


def test_tensor_outputs(make: Maker) -> None:
    d = _cells_and_genes(make)
    proxy = contractor("computation", _tensor(RequiredInput, CreatedOutput), d)
    proxy.verify_input()
    proxy.set_matrix("gene", "cell", "U_is_high", U)
    with _raises(
        "missing output matrix: V_is_high",
        "of the rows axis: cell",
        "and the columns axis: gene",
        "with element type: bool",
        *WHERE,
    ):
        proxy.verify_output()
    proxy.set_matrix("gene", "cell", "V_is_high", ~U)
    proxy.verify_output()


def test_tensor_along_a_created_axis(make: Maker) -> None:
    d = _cells_and_genes(make, batches=False)
    proxy = contractor("computation", _tensor(CreatedOutput, CreatedOutput), d)
    proxy.verify_input()
    with _raises("missing output axis: batch", *WHERE):
        proxy.verify_output()
    proxy.add_axis("batch", ["U", "V"])
    with _raises(
        "missing output matrix: U_is_high",
        "of the rows axis: cell",
        "and the columns axis: gene",
        "with element type: bool",
        *WHERE,
    ):
        proxy.verify_output()
    proxy.set_matrix("gene", "cell", "U_is_high", U)
    proxy.set_matrix("gene", "cell", "V_is_high", ~U)
    proxy.verify_output()
    optional = contractor(
        "computation",
        _tensor(OptionalOutput, OptionalOutput, OptionalInput),
        _cells_and_genes(make, batches=False, name="other!"),
    )
    optional.verify_input()
    optional.verify_output()


# --- The computation decorator -------------------------------------------------------------

SINGLE = Contract(
    axes={
        "cell": (RequiredInput, "The sampled single cells."),
        "gene": (RequiredInput, "The sampled genes."),
        "block": (OptionalOutput, "Blocks of cells."),
    },
    data={
        "version": (OptionalInput, str, "In major.minor.patch format."),
        "quality": (CreatedOutput, float, "Overall output quality score between 0.0 and 1.0."),
        ("gene", "noisy"): (OptionalInput, bool, "Mask of genes with high variability."),
        ("cell", "special"): (
            OptionalOutput,
            bool,
            "Computed mask of special cells, if requested.",
        ),
        ("cell", "gene", "UMIs"): (
            RequiredInput,
            (np.uint8, np.uint16, np.uint32, np.uint64),
            "The number of sampled scRNA molecules.",
        ),
        ("block", "cell", "gene", "match"): (
            OptionalOutput,
            "float",
            "How well the gene of the cell match the block.",
        ),
    },
)


@dafzarr.computation(SINGLE)
def single(daf: Any, quality: float, optional: int = 1, *, named: str = "Foo") -> Any:
    """Single.

    The ``quality`` is mandatory.

    {CONTRACT}

    The end.
    """
    daf.get_np_matrix("cell", "gene", "UMIs")
    daf.set_scalar("quality", quality)
    return daf


SINGLE_DOC = """Single.

The ``quality`` is mandatory.

Inputs
------
Scalars
    version : str (optional)
        In major.minor.patch format.
Axes
    cell (required)
        The sampled single cells.
    gene (required)
        The sampled genes.
Vectors
    gene @ noisy : bool (optional)
        Mask of genes with high variability.
Matrices
    cell, gene @ UMIs : uint8 | uint16 | uint32 | uint64 (required)
        The number of sampled scRNA molecules.

Outputs
-------
Scalars
    quality : float64 (created)
        Overall output quality score between 0.0 and 1.0.
Axes
    block (optional)
        Blocks of cells.
Vectors
    cell @ special : bool (optional)
        Computed mask of special cells, if requested.
Tensors
    block; cell, gene @ match : float (optional)
        How well the gene of the cell match the block.

The end."""


def test_a_computation_runs_on_a_contract_wrapper(make: Maker) -> None:
    d = make("memory!")
    d.add_axis("cell", ["A", "B"])
    d.add_axis("gene", ["X", "Y", "Z"])
    d.set_matrix("cell", "gene", "UMIs", np.array([[0, 1, 2], [3, 4, 5]], dtype=np.uint8))
    seen = single(d, 0.5)
    assert isinstance(seen, ContractDaf) and seen.daf is d
    assert seen.name == "memory!.for.single"
    assert d.get_scalar("quality") == 0.5
    with _raises(
        "pre-existing CreatedOutput scalar: quality",
        f"for the computation: {__name__}.single",
        "on the daf data: memory!",
    ):
        single(d, 0.5)
    assert single.__name__ == "single"
    assert single.contracts == (SINGLE,)  # type: ignore[attr-defined]


def test_a_computation_refuses_missing_inputs(make: Maker) -> None:
    with _raises(
        "missing input axis: cell",
        f"for the computation: {__name__}.single",
        "on the daf data: memory!",
    ):
        single(make("memory!"), 0.0)


def test_a_computation_documents_its_contract() -> None:
    assert single.__doc__ == SINGLE_DOC


@dafzarr.computation(Contract(is_relaxed=True))
def relaxed(daf: Any) -> None:
    """Relaxed."""


def test_relaxed_documentation() -> None:
    assert relaxed.__doc__ == (
        "Relaxed.\n\nInputs\n------\nAdditional inputs may be used depending on the "
        "parameters.\n\nOutputs\n-------\nAdditional outputs may be created depending on the "
        "parameters."
    )


FIRST = Contract(
    data={
        "version": (RequiredInput, str, "In major.minor.patch format."),
        "quality": (CreatedOutput, float, "Overall output quality score between 0.0 and 1.0."),
    }
)
SECOND = Contract(
    name="second",
    data={
        "version": (CreatedOutput, str, "In major.minor.patch format."),
        "quality": (RequiredInput, float, "Overall output quality score between 0.0 and 1.0."),
    },
)
THIRD = Contract(name="third", data={"note": (CreatedOutput, str, "Some note.")})


@dafzarr.computation(FIRST, SECOND)
def cross(first: Any, *, second: Any, overwrite: bool = False) -> None:
    """Dual.

    First
    =====

    {CONTRACT1}

    Second
    ======

    {CONTRACT2}
    """
    second.set_scalar("version", first.get_scalar("version"), overwrite=overwrite)
    first.set_scalar("quality", second.get_scalar("quality"), overwrite=overwrite)


@dafzarr.computation(FIRST, SECOND, THIRD)
def cross_note(first: Any, *, second: Any, third: Any, overwrite: bool = False) -> None:
    """Triple."""
    third.set_scalar("note", "Noteworthy.")
    second.set_scalar("version", first.get_scalar("version"), overwrite=overwrite)
    first.set_scalar("quality", second.get_scalar("quality"), overwrite=overwrite)


def test_computations_of_several_data_sets(make: Maker) -> None:
    first, second, third = make("first!"), make("second!"), make("third!")
    first.set_scalar("version", "0.0")
    second.set_scalar("quality", 1.0)
    cross(first, second=second)
    assert first.get_scalar("quality") == 1.0 and second.get_scalar("version") == "0.0"
    cross_note(first, second=second, third=third, overwrite=True)
    assert third.get_scalar("note") == "Noteworthy."


def test_overwrite_is_passed_to_the_contracts(make: Maker) -> None:
    first, second = make("first!"), make("second!")
    first.set_scalar("version", "0.0")
    first.set_scalar("quality", 0.0)
    second.set_scalar("quality", 1.0)
    second.set_scalar("version", "1.0")
    with _raises(
        "pre-existing CreatedOutput scalar: quality",
        f"for the computation: {__name__}.cross",
        "on the daf data: first!",
    ):
        cross(first, second=second)
    assert first.get_scalar("quality") == 0.0 and second.get_scalar("version") == "1.0"
    cross(first, second=second, overwrite=True)
    assert first.get_scalar("quality") == 1.0 and second.get_scalar("version") == "0.0"
    with pytest.raises(InvalidArgumentTypeError, match="non-bool overwrite parameter: 1"):
        cross(first, second=second, overwrite=1)  # type: ignore[arg-type]


def test_missing_inputs_name_their_data_set(make: Maker) -> None:
    first, second = make("first!"), make("second!")
    second.set_scalar("quality", 0.0)
    with _raises(
        "missing input scalar: version",
        "with type: str",
        f"for the computation: {__name__}.cross",
        "on the daf data: first!",
    ):
        cross(first, second=second)
    first.set_scalar("version", "0.0")
    second.delete_scalar("quality")
    with _raises(
        "missing input scalar: quality",
        "with type: float64",
        f"for the computation: {__name__}.cross",
        "on the daf data: second!",
    ):
        cross(first, second=second)


def test_documentation_of_several_contracts() -> None:
    assert (
        cross.__doc__
        == """Dual.

First
=====

Inputs (first)
--------------
Scalars
    version : str (required)
        In major.minor.patch format.

Outputs (first)
---------------
Scalars
    quality : float64 (created)
        Overall output quality score between 0.0 and 1.0.

Second
======

Inputs (second)
---------------
Scalars
    quality : float64 (required)
        Overall output quality score between 0.0 and 1.0.

Outputs (second)
----------------
Scalars
    version : str (created)
        In major.minor.patch format."""
    )
    assert cross_note.__doc__ is not None
    assert cross_note.__doc__.startswith("Triple.\n\nInputs (first)\n")
    assert cross_note.__doc__.endswith(
        "Outputs (third)\n---------------\nScalars\n    note : str (created)\n        Some note."
    )


def test_contracts_of_steps_combine() -> None:
    combined = cross.contracts[0] >> relaxed.contracts[0]  # type: ignore[attr-defined]
    assert combined.is_relaxed and dict(combined.data)["quality"].expectation is CreatedOutput


def test_a_required_input_never_read_is_reported(make: Maker) -> None:
    @dafzarr.computation(Contract(axes={"cell": (RequiredInput, "cells")}))
    def lazy(daf: Any) -> int:
        return 7

    d = make("memory!")
    d.add_axis("cell", ["A"])
    with _raises(
        "unused RequiredInput axis: cell",
        f"of the computation: {lazy.__module__}."
        "test_a_required_input_never_read_is_reported.<locals>.lazy",
        "on the daf data: memory!",
    ):
        lazy(d)


def test_enforcement_can_be_turned_off(make: Maker, monkeypatch: pytest.MonkeyPatch) -> None:
    d = make("memory!")
    monkeypatch.setenv("DAFZARR_ENFORCE_CONTRACTS", "0")
    assert relaxed(d) is None
    seen: list[Any] = []

    @dafzarr.computation(Contract())
    def peek(daf: Any) -> None:
        seen.append(daf)

    peek(d)
    assert seen == [d]
    monkeypatch.setenv("DAFZARR_ENFORCE_CONTRACTS", "on")
    peek(d)
    assert isinstance(seen[-1], ContractDaf)
    monkeypatch.setenv("DAFZARR_ENFORCE_CONTRACTS", "maybe")
    with pytest.raises(InvalidArgumentError, match="invalid value of DAFZARR_ENFORCE_CONTRACTS"):
        peek(d)


def test_bad_decorations() -> None:
    with pytest.raises(InvalidArgumentError, match="at most one contract can be for the unnamed"):
        dafzarr.computation(Contract(), Contract())
    with pytest.raises(InvalidArgumentTypeError, match="not a Contract"):
        dafzarr.computation("contract")  # type: ignore[arg-type]

    def two(first: Any, second: Any) -> None:
        """Two.

        {CONTRACT2}
        """

    with pytest.raises(InvalidArgumentError, match="missing daf parameter: third"):
        dafzarr.computation(Contract(name="third"))(two)
    with pytest.raises(InvalidArgumentError, match="no contract #2 associated with: "):
        dafzarr.computation(Contract())(two)
    with pytest.raises(InvalidArgumentError, match="several contracts for one parameter"):
        dafzarr.computation(Contract(), Contract(name="first"))(two)

    def keywords(*, daf: Any) -> None:
        pass

    with pytest.raises(InvalidArgumentError, match="no first parameter for the data set"):
        dafzarr.computation(Contract())(keywords)


# --- Other data sets under a contract ------------------------------------------------------


def test_a_wrapper_is_a_daf_reader_of_any_reader(make: Maker) -> None:
    d = make("memory!")
    d.set_scalar("version", "1.0")
    d.add_axis("cell", ["A", "B"])
    d.add_axis("gene", ["X", "Y", "Z"])
    d.set_vector("cell", "age", np.array([1.0, 2.0]))
    d.set_matrix("gene", "cell", "UMIs", np.ones((3, 2)), relayout=False)
    chain = dafzarr.chain_reader([d], name="chain!")
    for kind, found in (("scalar", "str"), ("vector", "float64"), ("matrix", "float64")):
        proxy = contractor("computation", _contract_for(kind, RequiredInput), chain)
        assert isinstance(proxy, dafzarr.daf.DafReader)
        head, *rest = _what(kind)
        with _raises(
            f"unexpected type: {found}",
            "instead of type: int64",
            f"for the input {head}",
            *rest,
            "for the computation: computation",
            "on the daf data: chain!",
        ):
            proxy.verify_input()
    fine = contractor("computation", _contract_for("matrix", RequiredInput, "float"), chain)
    fine.verify_input()
    assert fine.read_only
    assert fine.get_np_matrix("cell", "gene", "UMIs").shape == (2, 3)
    writer = contractor("computation", _contract_for("vector", CreatedOutput, "float"), chain)
    with pytest.raises(dafzarr.errors.DafReadOnlyError):  # the contract allows, the chain not
        writer.set_vector("cell", "age", np.array([0.0, 0.0]), overwrite=True)


def test_wrappers_nest(make: Maker) -> None:
    d = _filled(make)
    inner = contractor("inner", Contract(axes={"cell": (OptionalInput, "d")}), d)
    outer = contractor(
        "outer",
        Contract(
            axes={"cell": (RequiredInput, "d")},
            data={("cell", "age"): (RequiredInput, "integer", "d")},
        ),
        inner,
    )
    assert outer.name == "memory!.for.inner.for.outer"
    with _raises(
        "accessing non-contract vector: age",
        "of the axis: cell",
        "for the computation: inner",
        "on the daf data: memory!",
    ):
        outer.get_np_vector("cell", "age")


TYPES = Contract(
    axes={"cell": (RequiredInput, "The cells."), "type": (CreatedOutput, "The cell types.")},
    data={
        ("cell", "type"): (RequiredInput, str, "The type of each cell."),
        ("cell", "color"): (OptionalOutput, str, "Moved to the types."),
        ("type", "color"): (CreatedOutput, str, "The color of each type."),
    },
)


def test_reconstruction_under_a_contract(make: Maker) -> None:
    @dafzarr.computation(TYPES)
    def cell_types(daf: Any, *, moved: Any = ("color",)) -> Any:
        return dafzarr.reconstruct_axis(
            daf, existing_axis="cell", implicit_axis="type", implicit_properties=moved
        )

    d = make("memory!")
    d.add_axis("cell", ["A", "B", "C"])
    d.set_vector("cell", "type", np.array(["T", "B", "T"], dtype=object))
    d.set_vector("cell", "color", np.array(["red", "blue", "red"], dtype=object))
    d.set_vector("cell", "score", np.array([0.5, 0.5, 0.5]))
    with _raises(
        "accessing non-contract vector: score",
        "of the axis: cell",
        f"for the computation: {__name__}.test_reconstruction_under_a_contract.<locals>.cell_types",
        "on the daf data: memory!",
    ):
        cell_types(d, moved=None)
    assert d.axes_set() == {"cell"}
    assert cell_types(d) == {"color": None}
    assert d.get_np_vector("type", "color").tolist() == ["blue", "red"]


def test_methods_take_the_data_set_after_self(make: Maker) -> None:
    class Pipeline:
        factor = 3

        @dafzarr.computation(Contract(data={"version": (RequiredInput, "integer", "d")}))
        def scaled(self, daf: Any) -> Any:
            return daf.get_scalar("version") * self.factor

    d = make("memory!")
    d.set_scalar("version", 2)
    assert Pipeline().scaled(d) == 6
    with _raises(
        "missing input scalar: version",
        "with type: integer",
        f"for the computation: {__name__}.test_methods_take_the_data_set_after_self."
        "<locals>.Pipeline.scaled",
        "on the daf data: other!",
    ):
        Pipeline().scaled(make("other!"))


def test_a_data_set_parameter_left_out_and_an_ambiguous_placeholder(make: Maker) -> None:
    @dafzarr.computation(Contract())
    def optional_daf(daf: Any = None) -> None:
        """Nothing."""

    with pytest.raises(
        InvalidArgumentError, match="missing daf parameter: daf\nfor the computation: "
    ):
        optional_daf()
    optional_daf(make("memory!"))

    def two(first: Any, second: Any) -> None:
        """Two.

        {CONTRACT}
        """

    with pytest.raises(
        InvalidArgumentError, match=re.escape("ambiguous {CONTRACT} in the docstring of: ")
    ):
        dafzarr.computation(Contract(), Contract(name="second"))(two)
