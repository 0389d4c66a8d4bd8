"""Daf views (``dafzarr.viewer``): axes and properties defined by queries over a base data set,
on the memory, directory and ZIP backends; the cases of DataAxesFormats.jl's view tests in
other data, plus zero-copy pass-through, following the base's writes, and queries answered as
on an equivalent plain data set."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import DafMissingError, DafQueryError, DafReadOnlyError

from .daf_helpers import assert_same_query_result, recorder

SAMPLES = np.array(["s1", "s2", "s3", "s4"], dtype=object)
DEPTH = np.array([10, 40, 20, 30], dtype=np.int64)
LANE = np.array(["L1", "L2", "L2", "L1"], dtype=object)
QC_FAIL = np.array([False, True, False, False])
PROBES = np.array(["p1", "p2", "p3"], dtype=object)
CONTROL = np.array([True, False, True])
READS = np.array([[1, 0, 7], [2, 5, 0], [0, 3, 4], [6, 1, 0]], dtype=np.int32)
LANES = np.array(["L1", "L2", "L3"], dtype=object)
FLOWCELL = np.array(["A", "B", "A"], dtype=object)


def _fill(d: Any) -> Any:
    d.set_scalar("run", "r7")
    d.set_scalar("gain", 1.5)
    d.add_axis("sample", SAMPLES)
    d.add_axis("probe", PROBES)
    d.add_axis("lane", LANES)
    d.set_vector("sample", "depth", DEPTH)
    d.set_vector("sample", "lane", LANE)
    d.set_vector("sample", "qc_fail", QC_FAIL)
    d.set_vector("probe", "control", CONTROL)
    d.set_vector("lane", "flowcell", FLOWCELL)
    d.set_matrix("sample", "probe", "reads", READS)
    d.set_matrix("probe", "sample", "signal", READS.T.astype(np.float32) / 2, relayout=False)
    d.set_matrix("sample", "probe", "hits", sp.csc_matrix(READS), relayout=False)
    return d


@pytest.fixture(params=["memory", "directory", "zip"])
def daf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield _fill(dafzarr.memory_daf("base!"))
        return
    suffix = ".daf.zarr" if request.param == "directory" else ".daf.zarr.zip"
    path = tmp_path / f"base{suffix}"
    d = dafzarr.open_daf(path, "w", name="base!")
    _fill(d)
    d.close()
    reopened = dafzarr.open_daf(path, "r+", name="base!")
    yield reopened
    reopened.close()


def _raises(cls: type[Exception], *lines: str) -> Any:
    """``pytest.raises`` for an error whose message starts with ``lines``."""
    return pytest.raises(cls, match="^" + re.escape("\n".join(lines)))


# --- Wrapping -------------------------------------------------------------------------------


def test_plain_view_exposes_everything_read_only(daf: Any) -> None:
    view = dafzarr.viewer(daf)
    assert view.name.startswith("base!.view")
    assert view.read_only
    assert view.scalars_set() == {"run", "gain"}
    assert view.get_scalar("run") == "r7"
    assert view.axes_set() == {"sample", "probe", "lane"}
    assert list(view.axis_np_entries("probe")) == list(PROBES)
    assert view.axis_length("sample") == 4
    assert view.axis_dict("lane") == {"L1": 0, "L2": 1, "L3": 2}
    assert list(view.axis_np_indices("lane", ["L3", "L1"])) == [2, 0]
    assert view.vectors_set("sample") == {"depth", "lane", "qc_fail"}
    assert view.matrices_set("sample", "probe", relayout=False) == {"reads", "hits"}
    assert view.matrices_set("probe", "sample", relayout=False) == {"reads", "signal"}
    assert view.matrices_set("sample", "probe") == {"reads", "hits", "signal"}
    np.testing.assert_array_equal(view.get_np_matrix("sample", "probe", "signal"), READS / 2)
    np.testing.assert_array_equal(view.get_np_matrix("probe", "sample", "hits").toarray(), READS.T)
    series = view.get_pd_vector("sample", "depth")
    assert list(series.index) == list(SAMPLES) and list(series) == list(DEPTH)
    frame = view.get_pd_matrix("sample", "probe", "reads")
    assert list(frame.columns) == list(PROBES)
    np.testing.assert_array_equal(frame.to_numpy(), READS)
    np.testing.assert_array_equal(view.get_np_vector("sample", "index"), np.arange(4))
    assert view.get_np_vector("sample", "nope", default=None) is None
    np.testing.assert_array_equal(view.get_np_vector("sample", "nope", default=3), [3] * 4)


def test_zarrdaf_views_and_chains_are_readers(daf: Any) -> None:
    view = dafzarr.viewer(daf)
    chain = dafzarr.chain_reader([daf, view])
    for reader in (daf, view, chain):
        assert isinstance(reader, dafzarr.daf.DafReader)
    assert not isinstance(object(), dafzarr.daf.DafReader)


def test_view_writers_raise(daf: Any) -> None:
    view = dafzarr.viewer(daf, name="frozen!")
    for call in (
        lambda: view.set_scalar("x", 1),
        lambda: view.delete_scalar("run"),
        lambda: view.add_axis("x", ["a"]),
        lambda: view.delete_axis("lane"),
        lambda: view.set_vector("sample", "x", 1),
        lambda: view.delete_vector("sample", "depth"),
        lambda: view.set_matrix("sample", "probe", "x", 1),
        lambda: view.delete_matrix("sample", "probe", "reads"),
        lambda: view.relayout_matrix("sample", "probe", "hits"),
        lambda: view.empty_dense_vector("sample", "x", np.int8),
    ):
        with _raises(DafReadOnlyError, "can't modify the read-only daf data: frozen!"):
            call()
    assert daf.vectors_set("sample") == {"depth", "lane", "qc_fail"}


def test_view_description(daf: Any) -> None:
    view = dafzarr.viewer(
        daf,
        name="described!",
        axes={"obs": "@ sample", "var": "@ probe"},
        data=[(("obs", "depth"), "="), (("obs", "var", "X"), ":: signal")],
    )
    text = view.description()
    assert text.startswith("name: described!\ntype: View\nbase: base!\n")
    assert "  obs: 4 entries\n  var: 3 entries\n" in text
    assert "  obs/depth: int64 dense\n" in text
    # signal is stored as probe x sample: the view has it as var x obs only.
    assert "  var,obs/X: float32 dense\n" in text
    assert "obs,var/X" not in text
    assert view.describe() == text


# --- Scalars --------------------------------------------------------------------------------


def test_view_scalars(daf: Any) -> None:
    only = dafzarr.viewer(daf, data=[("*", "=")])
    assert only.scalars_set() == {"run", "gain"}
    assert only.vectors_set("sample") == set()
    hidden = dafzarr.viewer(daf, data=[("*", "="), ("run", None)])
    assert hidden.scalars_set() == {"gain"}
    assert not hidden.has_scalar("run")
    reduced = dafzarr.viewer(
        daf,
        data={"total_depth": "@ sample : depth >> Sum", "tag": "run", "nothing": "missing_scalar"},
    )
    assert reduced.scalars_set() == {"total_depth", "tag"}
    assert reduced.get_scalar("total_depth") == DEPTH.sum()
    assert reduced.get_scalar("tag") == "r7"
    with _raises(DafMissingError, "missing scalar: nothing"):
        reduced.get_scalar("nothing")


def test_view_scalar_of_a_vector_query(daf: Any) -> None:
    view = dafzarr.viewer(daf, name="sv!", data={"depths": "@ sample : depth"})
    with _raises(
        DafQueryError,
        "vector query: @ sample : depth",
        "for the scalar: depths",
        "for the view: sv!",
        "of the daf data: base!",
    ):
        view.get_scalar("depths")


def test_view_wildcard_scalar_query(daf: Any) -> None:
    with _raises(
        DafQueryError,
        "invalid wildcard scalar query: run",
        'query for wildcard must be one of: "=", nothing',
        "for the view: wild!",
        "of the daf data: base!",
    ):
        dafzarr.viewer(daf, name="wild!", data=[("*", "run")])


# --- Axes -----------------------------------------------------------------------------------


def test_view_axes(daf: Any) -> None:
    assert dafzarr.viewer(daf, axes={"sample": "=", "lane": "="}).axes_set() == {"sample", "lane"}
    hidden = dafzarr.viewer(daf, axes=[("*", "="), ("probe", None)])
    assert hidden.axes_set() == {"sample", "lane"}
    assert not hidden.has_axis("probe")
    with _raises(DafMissingError, "missing axis: probe"):
        hidden.axis_np_entries("probe")
    masked = dafzarr.viewer(daf, axes=[("*", "="), ("probe", "@ probe [ control ]")])
    assert list(masked.axis_np_entries("probe")) == ["p1", "p3"]
    assert masked.axis_length("probe") == 2
    renamed = dafzarr.viewer(daf, axes={"obs": "sample", "var": "@ probe"})
    assert renamed.axes_set() == {"obs", "var"}
    assert list(renamed.axis_np_entries("obs")) == list(SAMPLES)
    last_wins = dafzarr.viewer(daf, axes=[("probe", "="), ("probe", "@ probe [ ! control ]")])
    assert list(last_wins.axis_np_entries("probe")) == ["p2"]


@pytest.mark.parametrize("query", ["@ sample : depth >> Max", "@ sample : depth"])
def test_view_axis_of_a_non_axis_query(daf: Any, query: str) -> None:
    view = dafzarr.viewer(daf, name="na!", axes={"sample": query})
    with _raises(
        DafQueryError,
        f"not an axis query: {query}",
        "for the axis: sample",
        "for the view: na!",
        "of the daf data: base!",
    ):
        view.axis_np_entries("sample")


def test_view_wildcard_axis_query(daf: Any) -> None:
    with pytest.raises(DafQueryError, match="invalid wildcard axis query: @ sample"):
        dafzarr.viewer(daf, axes={"*": "@ sample"})


# --- Vectors --------------------------------------------------------------------------------


def test_view_vectors(daf: Any) -> None:
    copied = dafzarr.viewer(daf, data=[(("*", "*"), "=")])
    assert copied.vectors_set("sample") == {"depth", "lane", "qc_fail"}
    np.testing.assert_array_equal(copied.get_np_vector("sample", "depth"), DEPTH)
    assert copied.scalars_set() == set()
    hidden = dafzarr.viewer(daf, data=[(("*", "*"), "="), (("sample", "depth"), None)])
    assert hidden.vectors_set("sample") == {"lane", "qc_fail"}
    assert not hidden.has_vector("sample", "depth")
    assert hidden.has_vector("sample", "name") and hidden.has_vector("sample", "index")
    with _raises(DafMissingError, "missing vector: depth", "for the axis: sample"):
        hidden.get_np_vector("sample", "depth")
    one = dafzarr.viewer(daf, data=[(("sample", "depth"), "=")])
    assert one.vectors_set("sample") == {"depth"}
    assert not one.has_vector("sample", "lane")
    renamed = dafzarr.viewer(
        daf, data=[(("sample", "coverage"), ": depth"), (("sample", "size"), "depth")]
    )
    assert renamed.vectors_set("sample") == {"coverage", "size"}
    np.testing.assert_array_equal(renamed.get_np_vector("sample", "coverage"), DEPTH)
    np.testing.assert_array_equal(renamed.get_np_vector("sample", "size"), DEPTH)


def test_view_vector_of_a_hidden_axis(daf: Any) -> None:
    view = dafzarr.viewer(daf, axes={"sample": None}, data=[(("sample", "depth"), "=")])
    assert not view.has_axis("sample")
    with _raises(DafMissingError, "missing axis: sample"):
        view.get_np_vector("sample", "depth")


def test_view_masked_vectors(daf: Any) -> None:
    view = dafzarr.viewer(
        daf,
        axes={"sample": "@ sample [ lane = L2 ]", "probe": "="},
        data=[
            (("sample", "depth"), "="),
            (("sample", "lane_cell"), ": lane : flowcell"),
            (("sample", "total"), "@ probe @ __axis__ :: reads >- Sum"),
            (("sample", "control_total"), "@ __axis__ @ probe [ control ] :: reads >| Sum"),
            (("probe", "full_index"), "index"),
        ],
    )
    assert view.vectors_set("sample") == {"depth", "lane_cell", "total", "control_total"}
    np.testing.assert_array_equal(view.get_np_vector("sample", "depth"), [40, 20])
    np.testing.assert_array_equal(view.get_np_vector("sample", "lane_cell"), ["B", "B"])
    np.testing.assert_array_equal(view.get_np_vector("sample", "total"), [7, 7])
    np.testing.assert_array_equal(view.get_np_vector("sample", "control_total"), [2, 4])
    np.testing.assert_array_equal(view.get_np_vector("probe", "full_index"), [1, 2, 3])
    subset = dafzarr.viewer(
        daf, axes={"probe": "@ probe [ control ]"}, data=[(("probe", "full_index"), "index")]
    )
    # 1-based positions in the base, as DataAxesFormats.jl gives them.
    np.testing.assert_array_equal(subset.get_np_vector("probe", "full_index"), [1, 3])


def test_view_vector_of_a_matrix_query(daf: Any) -> None:
    view = dafzarr.viewer(
        daf, name="vm!", data=[(("sample", "all"), "@ __axis__ @ probe :: reads")]
    )
    with _raises(
        DafQueryError,
        "matrix query: @ sample @ probe :: reads",
        "for the vector: all",
        "for the axis: sample",
        "for the view: vm!",
        "of the daf data: base!",
    ):
        view.get_np_vector("sample", "all")


@pytest.mark.parametrize(
    ("key", "axis", "name"), [(("sample", "*"), "sample", "*"), (("*", "depth"), "*", "depth")]
)
def test_view_wildcard_vector_query(daf: Any, key: Any, axis: str, name: str) -> None:
    with _raises(
        DafQueryError,
        "invalid wildcard vector query: depth",
        'query for wildcard must be one of: "=", nothing',
        f"for the vector property: {name}",
        f"for the vector axis: {axis}",
        "for the view: wv!",
        "of the daf data: base!",
    ):
        dafzarr.viewer(daf, name="wv!", data=[(key, "depth")])


# --- Matrices -------------------------------------------------------------------------------


def test_view_matrices(daf: Any) -> None:
    copied = dafzarr.viewer(daf, data=[(("*", "*", "*"), "=")])
    assert copied.matrices_set("sample", "probe", relayout=False) == {"reads", "hits"}
    assert copied.matrices_set("probe", "sample", relayout=False) == {"reads", "signal"}
    np.testing.assert_array_equal(copied.get_np_matrix("probe", "sample", "reads"), READS.T)
    hidden = dafzarr.viewer(
        daf, data=[(("*", "*", "*"), "="), (("probe", "sample", "reads"), None)]
    )
    assert hidden.matrices_set("sample", "probe") == {"hits", "signal"}
    assert not hidden.has_matrix("sample", "probe", "reads")
    with _raises(DafMissingError, "missing matrix: reads", "for the rows axis: sample"):
        hidden.get_np_matrix("sample", "probe", "reads")
    other = dafzarr.viewer(daf, data=[(("sample", "probe", "nothing"), "=")])
    assert other.matrices_set("sample", "probe") == set()


def test_view_matrix_query_needs_no_relayout(daf: Any) -> None:
    view = dafzarr.viewer(daf, data=[(("sample", "probe", "level"), ":: hits % Abs")])
    assert view.matrices_set("sample", "probe", relayout=False) == {"level"}
    assert view.matrices_set("probe", "sample", relayout=False) == set()
    assert view.matrices_set("probe", "sample") == {"level"}
    assert view.has_matrix("probe", "sample", "level")
    assert not view.has_matrix("probe", "sample", "level", relayout=False)
    level = view.get_np_matrix("sample", "probe", "level")
    assert sp.issparse(level)
    np.testing.assert_array_equal(level.toarray(), READS)
    np.testing.assert_array_equal(view.get_np_matrix("probe", "sample", "level").toarray(), READS.T)
    assert view.get_np_matrix("sample", "probe", "level", sparse_class="csc_array").format == "csc"
    with _raises(DafMissingError, "missing matrix: level"):
        view.get_np_matrix("probe", "sample", "level", relayout=False)


def test_view_renamed_matrix_in_its_stored_layout_only(daf: Any) -> None:
    view = dafzarr.viewer(
        daf, axes={"obs": "@ sample", "var": "@ probe"}, data=[(("obs", "var", "X"), ":: signal")]
    )
    assert view.matrices_set("var", "obs", relayout=False) == {"X"}
    assert view.matrices_set("obs", "var", relayout=False) == set()
    np.testing.assert_array_equal(view.get_np_matrix("obs", "var", "X"), READS / 2)


def test_view_masked_matrices(daf: Any) -> None:
    view = dafzarr.viewer(daf, axes={"sample": "=", "probe": "@ probe [ control ]"})
    assert view.matrices_set("sample", "probe", relayout=False) == {"reads", "hits"}
    np.testing.assert_array_equal(view.get_np_matrix("sample", "probe", "reads"), READS[:, [0, 2]])
    np.testing.assert_array_equal(
        view.get_np_matrix("probe", "sample", "reads"), READS[:, [0, 2]].T
    )
    np.testing.assert_array_equal(
        view.get_np_matrix("sample", "probe", "hits").toarray(), READS[:, [0, 2]]
    )
    square = dafzarr.viewer(
        daf,
        axes={"sample": "=", "probe": "="},
        data=[
            (
                ("sample", "probe", "both"),
                "@ __rows_axis__ [ ! qc_fail ] @ __columns_axis__ [ control ] :: reads",
            )
        ],
    )
    # The query's rows and columns are not the view's axes: refused when read.
    with _raises(
        DafQueryError,
        "the matrix query: @ sample [ ! qc_fail ] @ probe [ control ] :: reads",
        "gives: 3 x 2 values",
        "for the matrix: both",
        "for the rows axis: sample (4 entries)",
        "and the columns axis: probe (3 entries)",
    ):
        square.get_np_matrix("sample", "probe", "both")


def test_view_matrix_of_a_vector_query(daf: Any) -> None:
    view = dafzarr.viewer(daf, name="mv!", data=[(("sample", "probe", "sums"), ":: reads >| Sum")])
    with _raises(
        DafQueryError,
        "vector query: @ sample @ probe :: reads >| Sum",
        "for the matrix: sums",
        "for the rows axis: sample",
        "and the columns axis: probe",
        "for the view: mv!",
        "of the daf data: base!",
    ):
        view.get_np_matrix("sample", "probe", "sums")


@pytest.mark.parametrize(
    "key", [("*", "probe", "reads"), ("sample", "*", "reads"), ("sample", "probe", "*")]
)
def test_view_wildcard_matrix_query(daf: Any, key: tuple[str, str, str]) -> None:
    with _raises(
        DafQueryError,
        "invalid wildcard matrix query: reads",
        'query for wildcard must be one of: "=", nothing',
        f"for the matrix property: {key[2]}",
        f"for the rows axis: {key[0]}",
        f"for the columns axis: {key[1]}",
        "for the view: wm!",
        "of the daf data: base!",
    ):
        dafzarr.viewer(daf, name="wm!", data=[(key, "reads")])


def test_view_tensors(daf: Any) -> None:
    daf.add_axis("batch", ["B1", "B2"])
    daf.set_matrix("sample", "probe", "B1_reads", READS, relayout=False)
    daf.set_matrix("sample", "probe", "B2_reads", READS * 2, relayout=False)
    daf.set_matrix("sample", "probe", "B3_reads", READS * 3, relayout=False)  # not an entry
    hidden = dafzarr.viewer(
        daf, data=[(("*", "*", "*"), "="), (("batch", "probe", "sample", "reads"), None)]
    )
    assert hidden.matrices_set("sample", "probe", relayout=False) == {"reads", "hits", "B3_reads"}
    assert not hidden.has_matrix("sample", "probe", "B1_reads")
    only = dafzarr.viewer(daf, data=[(("batch", "sample", "probe", "reads"), "=")])
    assert only.matrices_set("sample", "probe") == {"B1_reads", "B2_reads"}
    assert only.matrices_set("probe", "sample", relayout=False) == set()
    np.testing.assert_array_equal(only.get_np_matrix("sample", "probe", "B2_reads"), READS * 2)
    masked = dafzarr.viewer(
        daf, axes={"*": "=", "batch": None}, data=[(("batch", "sample", "probe", "reads"), "=")]
    )
    with _raises(DafQueryError, "hidden tensor main axis: batch", "for the matrix: reads"):
        masked.matrices_set("sample", "probe")


@pytest.mark.parametrize(
    ("key", "query", "first"),
    [
        (("batch", "sample", "*", "reads"), "=", "unsupported tensor wildcard"),
        (
            ("batch", "sample", "probe", "reads"),
            ":: reads",
            'unsupported tensor query: :: reads\nquery for tensor must be one of: "=", nothing',
        ),
    ],
)
def test_view_tensor_keys_take_only_identity(daf: Any, key: Any, query: str, first: str) -> None:
    with _raises(
        DafQueryError,
        first,
        "for the matrix: reads",
        "for the main axis: batch",
        "and the rows axis: sample",
        f"and the columns axis: {key[2]}",
        "for the view: tk!",
        "of the daf data: base!",
    ):
        dafzarr.viewer(daf, name="tk!", data=[(key, query)])
    with pytest.raises(dafzarr.errors.InvalidArgumentError, match="invalid view data key"):
        dafzarr.viewer(daf, data=[(("a", "b", "c", "d", "e"), "=")])


# --- Zero copy, following the base, views of views ------------------------------------------


def _recording(daf: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every array the base's readers return."""
    returned: list[Any] = []
    for method in ("axis_np_entries", "get_np_vector", "get_np_matrix"):
        monkeypatch.setattr(daf, method, recorder(getattr(daf, method), returned))
    return returned


def test_identity_pairs_are_zero_copy(daf: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    view = dafzarr.viewer(daf, axes={"*": "=", "lane": "@ lane [ flowcell = A ]"})
    returned = _recording(daf, monkeypatch)
    for read in (
        lambda: view.axis_np_entries("sample"),
        lambda: view.get_np_vector("sample", "depth"),
        lambda: view.get_np_matrix("sample", "probe", "reads"),
        lambda: view.get_np_matrix("probe", "sample", "signal"),
        lambda: view.get_np_matrix("sample", "probe", "hits"),
    ):
        got = read()
        assert any(got is out for out in returned)  # the base's own array, passed through
        data = got.data if sp.issparse(got) else got
        assert any(
            np.shares_memory(data, out.data if sp.issparse(out) else out) for out in returned
        )
    assert not view.get_np_vector("sample", "depth").flags.writeable
    # A masked axis is computed, not the base's.
    assert list(view.axis_np_entries("lane")) == ["L1", "L3"]
    if daf.path == "memory":  # one buffer per property: every read shares it
        assert np.shares_memory(
            view.get_np_vector("sample", "depth"), daf.get_np_vector("sample", "depth")
        )


def test_view_sees_later_writes_to_its_base(daf: Any) -> None:
    view = dafzarr.viewer(
        daf,
        axes={"*": "=", "sample": "@ sample [ depth > 15 ]"},
        data=[("*", "="), (("*", "*"), "="), ("deepest", "@ sample : depth >> Max")],
    )
    assert list(view.axis_np_entries("sample")) == ["s2", "s3", "s4"]
    assert view.get_scalar("deepest") == 40
    assert list(view.get_pd_query("@ sample : depth")) == [40, 20, 30]
    daf.set_vector("sample", "depth", np.array([50, 1, 60, 2]), overwrite=True)
    daf.set_vector("sample", "batch", np.array([1, 2, 3, 4]))
    daf.set_scalar("operator", "kim")
    assert list(view.axis_np_entries("sample")) == ["s1", "s3"]
    assert view.get_scalar("deepest") == 60
    assert list(view.get_pd_query("@ sample : depth")) == [50, 60]
    assert "batch" in view.vectors_set("sample")
    np.testing.assert_array_equal(view.get_np_vector("sample", "batch"), [1, 3])
    assert view.get_scalar("operator") == "kim"
    daf.delete_vector("sample", "qc_fail")
    assert not view.has_vector("sample", "qc_fail")


def test_view_of_a_view(daf: Any) -> None:
    inner = dafzarr.viewer(daf, axes={"obs": "@ sample [ ! qc_fail ]", "var": "@ probe"})
    outer = dafzarr.viewer(
        inner, axes={"cells": "@ obs [ lane = L1 ]"}, data=[(("cells", "depth"), "=")]
    )
    assert outer.name.startswith(inner.name + ".view")
    assert list(outer.axis_np_entries("cells")) == ["s1", "s4"]
    np.testing.assert_array_equal(outer.get_np_vector("cells", "depth"), [10, 30])
    assert outer.description().startswith(f"name: {outer.name}\ntype: View\nbase: {inner.name}")


# --- Queries on a view ----------------------------------------------------------------------

QUERIES = [
    ". run",
    ". ?",
    "@ ?",
    "@ cells : ?",
    "@ cells @ genes :: ?",
    "@ cells",
    "@ cells : depth",
    "@ cells [ depth > 15 ] : lane",
    "@ cells : lane : flowcell",
    "@ cells : depth >> Sum",
    "@ cells @ genes :: reads",
    "@ genes @ cells :: reads",
    "@ cells @ genes :: hits % Abs",
    "@ cells @ genes :: reads >| Sum",
    "@ cells @ genes :: reads >- Max",
    "@ cells @ genes :: reads -/ lane >- Sum",
    "@ cells : depth / lane >> Mean",
    "@ genes : control",
    "@ genes [ control ] : index",
    "@ cells : depth % Log base 2 eps 1",
    "@ cells [ depth > 15 & lane = L2 ] : depth",
    "@ lane : flowcell",
]


def _equivalent(daf: Any) -> Any:
    """A plain data set holding what the view of ``test_queries_on_a_view`` shows."""
    keep = ~QC_FAIL
    plain = dafzarr.memory_daf("plain")
    plain.set_scalar("run", "r7")
    plain.add_axis("cells", SAMPLES[keep])
    plain.add_axis("genes", PROBES)
    plain.add_axis("lane", LANES)
    plain.set_vector("cells", "depth", DEPTH[keep])
    plain.set_vector("cells", "lane", LANE[keep])
    plain.set_vector("genes", "control", CONTROL)
    plain.set_vector("lane", "flowcell", FLOWCELL)
    plain.set_matrix("cells", "genes", "reads", READS[keep])
    plain.set_matrix("cells", "genes", "hits", sp.csc_matrix(READS[keep]), relayout=False)
    return plain


def test_queries_on_a_view(daf: Any) -> None:
    view = dafzarr.viewer(
        daf,
        axes={"cells": "@ sample [ ! qc_fail ]", "genes": "probe", "lane": "="},
        data=[
            ("run", "="),
            (("cells", "depth"), "="),
            (("cells", "lane"), "="),
            (("genes", "control"), "="),
            (("lane", "*"), "="),
            (("cells", "genes", "reads"), "="),
            (("cells", "genes", "hits"), "="),
        ],
    )
    plain = _equivalent(daf)
    for query in QUERIES:
        assert view.has_query(query) == plain.has_query(query), query
        assert_same_query_result(view.get_pd_query(query), plain.get_pd_query(query), query)
        assert_same_query_result(view[query], plain[query], query)
    assert not view.has_query("@ sample : depth")
    assert not view.has_query("@ cells : qc_fail")
    frame = view.get_pd_frame("cells")
    assert list(frame.columns) == ["name", "depth", "lane"]
    assert list(frame.index) == ["s1", "s3", "s4"]
    assert dafzarr.daf.query.query_requires_relayout(view, "@ genes @ cells :: hits")
    assert not dafzarr.daf.query.query_requires_relayout(view, "@ genes @ cells :: reads")
    view.empty_cache()
    np.testing.assert_array_equal(view.get_np_query("@ cells : depth"), [10, 20, 30])


def test_daf_to_anndata_of_a_view(daf: Any) -> None:
    pytest.importorskip("anndata")
    from dafzarr.anndata import daf_to_anndata

    view = dafzarr.viewer(
        daf,
        axes={"obs": "@ sample [ ! qc_fail ]", "var": "@ probe"},
        data=[
            (("obs", "depth"), "="),
            (("var", "control"), "="),
            (("obs", "var", "X"), ":: reads"),
            (("obs", "var", "raw"), ":: hits"),
        ],
    )
    adata = daf_to_anndata(view, "obs", "var", X="X")
    assert list(adata.obs_names) == ["s1", "s3", "s4"]
    assert list(adata.var_names) == list(PROBES)
    np.testing.assert_array_equal(np.asarray(adata.X), READS[~QC_FAIL])
    np.testing.assert_array_equal(adata.obs["depth"].to_numpy(), [10, 20, 30])
    np.testing.assert_array_equal(adata.layers["raw"].toarray(), READS[~QC_FAIL])


def test_view_to_xarray(daf: Any) -> None:
    xr = pytest.importorskip("xarray")
    pytest.importorskip("sparse")
    whole = dafzarr.viewer(daf).to_xarray()
    stored = daf.to_xarray()
    assert set(whole.data_vars) == set(stored.data_vars)
    xr.testing.assert_identical(
        whole.drop_vars("sample.probe.hits"), stored.drop_vars("sample.probe.hits")
    )
    np.testing.assert_array_equal(
        whole["sample.probe.hits"].data.todense(), stored["sample.probe.hits"].data.todense()
    )
    view = dafzarr.viewer(
        daf,
        axes={"obs": "@ sample [ ! qc_fail ]", "var": "@ probe"},
        data=[(("obs", "depth"), "="), (("obs", "var", "X"), ":: hits")],
    )
    ds = view.to_xarray()
    assert set(ds.data_vars) == {"obs.depth", "obs.var.X"}
    assert list(ds["obs"].values) == ["s1", "s3", "s4"]
    np.testing.assert_array_equal(ds["obs.var.X"].data.todense(), READS[~QC_FAIL])
