"""``adapter`` (``dafzarr.daf.ops``): DataAxesFormats.jl's ``test/adapters.jl`` restated, with
subset and renamed inputs; and property tests of ``copy_vector``/``copy_matrix`` against a
plain evaluation of the alignment rule (values by entry name, ``empty`` elsewhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dafzarr
from dafzarr.daf.ops import adapter, copy_matrix, copy_vector
from dafzarr.errors import DafMismatchError, InvalidArgumentError

from .test_daf_copies import lines


def _cells(d: Any) -> Any:
    d.add_axis("cell", ["A", "B", "C", "D"])
    d.set_vector("cell", "is_good", [True, False, True, True])
    d.set_vector("cell", "age", [10, 20, 30, 40])
    return d


def test_scalar_in_and_out() -> None:
    daf = dafzarr.memory_daf("memory!")
    daf.set_scalar("INPUT", 1)
    with adapter(
        daf, input_data={"input": ". INPUT"}, output_data={"OUTPUT": ". output"}
    ) as adapted:
        assert adapted.name == "memory!.adapted"
        adapted.set_scalar("output", adapted[". input"])
    assert daf.get_scalar("OUTPUT") == 1
    assert not daf.has_scalar("output") and not daf.has_scalar("input")


@pytest.mark.parametrize("kind", ["memory", "zip"])
def test_subset_input_with_empty(tmp_path: Path, kind: str) -> None:
    daf = _cells(
        dafzarr.memory_daf("memory!")
        if kind == "memory"
        else dafzarr.open_daf(tmp_path / "d.daf.zarr.zip", "w+", name="zip!")
    )
    with adapter(
        daf,
        input_axes={"cell": "@ cell [ is_good ]"},
        output_data={("cell", "score"): "="},
        empty={("cell", "score"): -1},
    ) as adapted:
        assert adapted.axis_np_entries("cell").tolist() == ["A", "C", "D"]
        adapted.set_vector("cell", "score", adapted.get_np_vector("cell", "age") // 10)
    assert daf.get_np_vector("cell", "score").tolist() == [1, -1, 3, 4]
    with (
        pytest.raises(
            DafMismatchError,
            match=lines(
                "missing entries in the axis: cell",
                f"of the source daf data: {daf.name}.output",
                "which are needed for copying : data",
            ),
        ),
        adapter(
            daf, input_axes={"cell": "@ cell [ is_good ]"}, output_data={("cell", "other"): "="}
        ) as adapted,
    ):
        adapted.set_vector("cell", "other", [1, 2, 3])
    assert not daf.has_vector("cell", "other")
    daf.close()


def test_renamed_inputs_and_outputs() -> None:
    daf = _cells(dafzarr.memory_daf("memory!"))
    with adapter(
        daf,
        input_axes={"obs": "@ cell"},
        input_data={("obs", "years"): ": age"},
        output_axes={"cell": "@ obs"},
        output_data={("cell", "doubled"): ": twice"},
    ) as adapted:
        assert adapted.axes_set() == {"obs"}
        assert adapted.vectors_set("obs") == {"years"}
        adapted.set_vector("obs", "twice", adapted.get_np_vector("obs", "years") * 2)
    assert daf.axes_set() == {"cell"}
    assert daf.get_np_vector("cell", "doubled").tolist() == [20, 40, 60, 80]


def test_nothing_is_copied_when_the_block_raises() -> None:
    daf = _cells(dafzarr.memory_daf("memory!"))
    with (
        pytest.raises(RuntimeError, match="computation failed"),
        adapter(daf, output_data={("cell", "x"): "="}) as adapted,
    ):
        adapted.set_vector("cell", "x", [1, 2, 3, 4])
        raise RuntimeError("computation failed")
    assert not daf.has_vector("cell", "x")


def test_no_op_adapter() -> None:
    daf = dafzarr.memory_daf("memory!")
    with pytest.raises(InvalidArgumentError, match="no-op adapter"), adapter(daf):
        pass


def test_custom_capture(tmp_path: Path) -> None:
    daf = _cells(dafzarr.memory_daf("memory!"))
    made: list[Any] = []

    def capture(name: str) -> Any:
        made.append(dafzarr.open_daf(tmp_path / "capture.daf.zarr", "w+", name=name))
        return made[-1]

    with adapter(daf, capture=capture, output_data={("cell", "y"): "="}) as adapted:
        adapted.set_vector("cell", "y", [4, 3, 2, 1])
    assert made[0].name == "memory!.capture"
    assert made[0].get_np_vector("cell", "y").tolist() == [4, 3, 2, 1]
    assert daf.get_np_vector("cell", "y").tolist() == [4, 3, 2, 1]


# --- Property tests of the alignment rule ---------------------------------------------------


@st.composite
def related_axes(draw: Any) -> tuple[list[str], list[str]]:
    """Source and destination entries that are a permutation, a subset or a superset."""
    names = [f"e{i}" for i in range(draw(st.integers(1, 8)))]
    source = draw(st.permutations(names))
    mode = draw(st.sampled_from(["same", "destination_subset", "source_subset"]))
    if mode == "destination_subset":
        kept = draw(st.lists(st.sampled_from(source), min_size=1, unique=True))
        return source, kept
    if mode == "source_subset":
        extra = [f"x{i}" for i in range(draw(st.integers(1, 4)))]
        return source, draw(st.permutations(source + extra))
    return source, draw(st.permutations(source))


def expected_vector(
    source: list[str], values: list[int], destination: list[str], empty: int
) -> list[int]:
    by_name = dict(zip(source, values, strict=True))
    return [by_name.get(name, empty) for name in destination]


@settings(max_examples=60, deadline=None)
@given(axes=related_axes(), data=st.data(), sparse=st.booleans(), empty=st.integers(-3, 3))
def test_copy_vector_follows_the_alignment_rule(
    axes: tuple[list[str], list[str]], data: Any, sparse: bool, empty: int
) -> None:
    source_names, destination_names = axes
    values = data.draw(
        st.lists(st.integers(-2, 2), min_size=len(source_names), max_size=len(source_names))
    )
    src, dst = dafzarr.memory_daf("s"), dafzarr.memory_daf("d")
    src.add_axis("a", source_names)
    dst.add_axis("a", destination_names)
    array = np.array(values, dtype=np.int64)
    src.set_vector("a", "v", sp.csr_matrix(array) if sparse else array)
    copy_vector(source=src, destination=dst, axis="a", name="v", empty=empty)
    got = dst.get_np_vector("a", "v")
    assert got.tolist() == expected_vector(source_names, values, destination_names, empty)
    assert got.dtype == np.int64


@settings(max_examples=60, deadline=None)
@given(
    rows=related_axes(),
    columns=related_axes(),
    data=st.data(),
    sparse=st.booleans(),
    empty=st.integers(-2, 2),
)
def test_copy_matrix_follows_the_alignment_rule(
    rows: tuple[list[str], list[str]],
    columns: tuple[list[str], list[str]],
    data: Any,
    sparse: bool,
    empty: int,
) -> None:
    (rows_source, rows_destination), (columns_source, columns_destination) = rows, columns
    flat = data.draw(
        st.lists(
            st.integers(-2, 2),
            min_size=len(rows_source) * len(columns_source),
            max_size=len(rows_source) * len(columns_source),
        )
    )
    values = np.array(flat, dtype=np.int32).reshape(len(rows_source), len(columns_source))
    src, dst = dafzarr.memory_daf("s"), dafzarr.memory_daf("d")
    src.add_axis("r", rows_source)
    src.add_axis("c", [f"c_{n}" for n in columns_source])
    dst.add_axis("r", rows_destination)
    dst.add_axis("c", [f"c_{n}" for n in columns_destination])
    src.set_matrix("r", "c", "m", sp.csc_matrix(values) if sparse else values)
    copy_matrix(source=src, destination=dst, rows_axis="r", columns_axis="c", name="m", empty=empty)
    row_of = {name: i for i, name in enumerate(rows_source)}
    column_of = {name: j for j, name in enumerate(columns_source)}
    expected = [
        [
            int(values[row_of[r], column_of[c]]) if r in row_of and c in column_of else empty
            for c in columns_destination
        ]
        for r in rows_destination
    ]
    transposed = [[row[j] for row in expected] for j in range(len(columns_destination))]
    for r, c, want in (("r", "c", expected), ("c", "r", transposed)):
        got = dst.get_np_matrix(r, c, "m", relayout=False)
        assert (got.toarray() if sp.issparse(got) else np.asarray(got)).tolist() == want
        assert got.dtype == np.int32
