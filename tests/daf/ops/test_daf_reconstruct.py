"""``dafzarr.reconstruct_axis``: an axis rebuilt from a vector that names an implicit entry per
element; the cases of DataAxesFormats.jl's reconstruction tests in other data, on memory,
directory and ZIP data sets, every refusal leaving the data set as it was, an AnnData object
with per-type data stored per cell, and a property test against a pandas group-by."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dafzarr
from dafzarr.errors import (
    AppendOnlyError,
    DafExistsError,
    DafMismatchError,
    DafMissingError,
    DafReadOnlyError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    RecoveryWarning,
    UnsafeCastError,
)

Maker = Callable[[str], Any]


@pytest.fixture
def make(writable_dafs: Maker) -> Maker:
    """Makes empty writable data sets of one backend (memory, directory, ZIP)."""
    return writable_dafs


def _raises(cls: type[Exception], *lines: str) -> Any:
    return pytest.raises(cls, match="^" + re.escape("\n".join(lines)))


def _orchard(make: Maker) -> Any:
    """Four trees with an age and a height (the age is per plot, the height is not)."""
    d = make("orchard!")
    d.add_axis("tree", ["t1", "t2", "t3", "t4"])
    d.set_vector("tree", "age", np.array([7, 7, 12, 30]))
    d.set_vector("tree", "height", np.array([2.0, 2.5, 4.0, 9.0]))
    return d


def snapshot(d: Any) -> dict[str, Any]:
    """Every axis, scalar and vector of a data set, as plain data."""
    out: dict[str, Any] = {"scalars": {s: d.get_scalar(s) for s in d.scalars_set()}}
    for axis in sorted(d.axes_set()):
        out[axis] = list(d.axis_np_entries(axis))
        for name in sorted(d.vectors_set(axis)):
            v = d.get_np_vector(axis, name)
            out[f"{axis}/{name}"] = (str(v.dtype), v.tolist())
    return out


# --- DataAxesFormats.jl's cases ------------------------------------------------------------


def test_string_implicit_values_make_an_axis_of_the_consistent_vectors(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["north", "north", "south", ""], dtype=object))
    empties = dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
    assert empties == {"age": 30}
    assert sorted(d.axes_set()) == ["plot", "tree"]
    assert list(d.axis_np_entries("plot")) == ["north", "south"]
    assert d.vectors_set("plot") == {"age"}
    assert d.get_np_vector("plot", "age").tolist() == [7, 12]
    assert d.get_np_vector("plot", "age").dtype == np.int64
    assert d.vectors_set("tree") == {"plot", "height"}
    # A string vector with the default empty marker is left as it is.
    assert d.get_np_vector("tree", "plot").tolist() == ["north", "north", "south", ""]
    assert d.get_np_query("@ tree : plot ?? 30 : age").tolist() == [7, 7, 12, 30]


def test_an_inconsistent_explicit_property_is_refused_with_nothing_written(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["north", "north", "south", ""], dtype=object))
    before = snapshot(d)
    with _raises(
        DafMismatchError,
        "inconsistent values: 2.5 != 2.0",
        "of the property: height",
        "for the same implicit axis value: north",
        "of the axis: tree",
        "for the reconstructed axis: plot",
        "in the daf data: orchard!",
    ):
        dafzarr.reconstruct_axis(
            d, existing_axis="tree", implicit_axis="plot", implicit_properties={"age", "height"}
        )
    assert snapshot(d) == before


def test_integer_implicit_values_with_an_empty_marker_become_strings(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array([10, 10, 9, 0]))
    empties = dafzarr.reconstruct_axis(
        d, existing_axis="tree", implicit_axis="plot", empty_implicit=0
    )
    assert empties == {"age": 30}
    assert list(d.axis_np_entries("plot")) == ["9", "10"]  # sorted as numbers
    assert d.get_np_vector("plot", "age").tolist() == [12, 7]
    assert d.get_np_vector("tree", "plot").tolist() == ["10", "10", "9", ""]
    assert d.vectors_set("tree") == {"plot", "height"}


def test_an_existing_axis_must_hold_every_used_value(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["north", "north", "south", ""], dtype=object))
    d.add_axis("plot", ["north", "west"])
    before = snapshot(d)
    with _raises(
        DafMismatchError,
        "missing used entry: south",
        "from the existing reconstructed axis: plot",
        "in the daf data: orchard!",
    ):
        dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
    assert snapshot(d) == before


def test_unused_entries_of_an_existing_axis_need_a_default(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["north", "north", "south", ""], dtype=object))
    d.add_axis("plot", ["north", "south", "west"])
    before = snapshot(d)
    with _raises(
        DafMismatchError,
        "no default value specified for the unused entry: west",
        "of the reconstructed property: age",
        "in the daf data: orchard!",
    ):
        dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
    assert snapshot(d) == before
    empties = dafzarr.reconstruct_axis(
        d, existing_axis="tree", implicit_axis="plot", properties_defaults={"age": 1}
    )
    assert empties == {"age": 30}
    assert list(d.axis_np_entries("plot")) == ["north", "south", "west"]
    assert d.get_np_vector("plot", "age").tolist() == [7, 12, 1]
    assert d.get_np_vector("plot", "age").dtype == np.int64


def test_existing_axis_order_is_kept(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["north", "north", "south", "east"], dtype=object))
    d.add_axis("plot", ["south", "north", "east"])
    assert dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot") == {"age": None}
    assert d.get_np_vector("plot", "age").tolist() == [12, 7, 30]


# --- Options -------------------------------------------------------------------------------


def test_rename_skip_and_explicit_properties(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    d.set_vector("tree", "soil", np.array(["clay", "clay", "sand", "sand"], dtype=object))
    d.set_vector("tree", "irrigated", np.array([True, True, False, False]))
    empties = dafzarr.reconstruct_axis(
        d,
        existing_axis="tree",
        implicit_axis="plot",
        rename_axis="field",
        implicit_properties={"soil", "irrigated", "no_such_vector"},
        skipped_properties={"irrigated"},
    )
    assert empties == {"soil": None}
    assert not d.has_axis("plot")
    assert list(d.axis_np_entries("field")) == ["n", "s"]
    assert d.vectors_set("field") == {"soil"}
    assert d.get_np_vector("field", "soil").tolist() == ["clay", "sand"]
    assert d.vectors_set("tree") == {"age", "height", "plot", "irrigated"}


def test_a_non_empty_string_marker_is_rewritten_and_the_empty_string_counts_too(
    make: Maker,
) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "none", "", "n"], dtype=object))
    d.set_vector("tree", "fenced", np.array([True, False, False, True]))
    empties = dafzarr.reconstruct_axis(
        d,
        existing_axis="tree",
        implicit_axis="plot",
        empty_implicit="none",
        implicit_properties={"fenced"},
    )
    assert empties == {"fenced": False}
    assert list(d.axis_np_entries("plot")) == ["n"]
    assert d.get_np_vector("tree", "plot").tolist() == ["n", "", "", "n"]


def test_float_and_bool_implicit_values_print_as_julia_does(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "dose", np.array([0.5, 0.5, 1.0, np.nan], dtype=np.float32))
    d.set_vector("tree", "sick", np.array([True, True, False, False]))
    empties = dafzarr.reconstruct_axis(
        d,
        existing_axis="tree",
        implicit_axis="dose",
        empty_implicit=float("nan"),
        implicit_properties={"sick"},
    )
    assert empties == {"sick": False}
    assert list(d.axis_np_entries("dose")) == ["0.5", "1.0"]
    assert d.get_np_vector("tree", "dose").tolist() == ["0.5", "0.5", "1.0", ""]
    assert d.get_np_vector("dose", "sick").tolist() == [True, False]
    d.set_vector("tree", "wet", np.array([True, False, False, True]))
    dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="wet")
    assert list(d.axis_np_entries("wet")) == ["false", "true"]
    assert d.get_np_vector("tree", "wet").tolist() == ["true", "false", "false", "true"]


def test_nan_property_values_are_consistent_with_each_other(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    d.set_vector("tree", "ph", np.array([np.nan, np.nan, 6.5, 6.5]))
    dafzarr.reconstruct_axis(
        d, existing_axis="tree", implicit_axis="plot", implicit_properties={"ph"}
    )
    got = d.get_np_vector("plot", "ph")
    assert np.isnan(got[0]) and got[1] == 6.5


def test_inconsistent_automatic_candidates_stay(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
    assert d.vectors_set("plot") == set()
    assert d.vectors_set("tree") == {"age", "height", "plot"}


def test_the_empty_key_must_be_consistent_too(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "", ""], dtype=object))
    with _raises(
        DafMismatchError,
        "inconsistent values: 30 != 12",
        "of the property: age",
        "for the same implicit axis value: ",
        "of the axis: tree",
    ):
        dafzarr.reconstruct_axis(
            d, existing_axis="tree", implicit_axis="plot", implicit_properties=["age"]
        )


# --- Refusals ------------------------------------------------------------------------------


def test_missing_axes_and_vectors(make: Maker) -> None:
    d = _orchard(make)
    with _raises(DafMissingError, "missing axis: plant"):
        dafzarr.reconstruct_axis(d, existing_axis="plant", implicit_axis="plot")
    with _raises(
        DafMissingError, "missing vector: plot", "for the axis: tree", "in the daf data: orchard!"
    ):
        dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")


def test_a_data_set_is_needed() -> None:
    with pytest.raises(
        InvalidArgumentTypeError,
        match="not a Daf data set: None\nfor reconstructing the axis: type",
    ):
        dafzarr.reconstruct_axis(None, existing_axis="cell", implicit_axis="type")


def test_bad_arguments(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    before = snapshot(d)
    for kwargs, text in (
        ({"implicit_properties": {"plot"}}, "implicit_properties contains the implicit axis: plot"),
        ({"skipped_properties": ["plot"]}, "skipped_properties contains the implicit axis: plot"),
        ({"implicit_properties": "age"}, "implicit_properties must be a collection of names"),
        ({"properties_defaults": {"age": [1, 2]}}, "invalid property default: [1, 2]"),
        ({"properties_defaults": {1: 2}}, "invalid property name: 1"),
        ({"properties_defaults": [("age",)]}, "invalid properties_defaults item: ('age',)"),
        ({"empty_implicit": 0}, "empty_implicit: 0 is not a value of the vector: plot"),
    ):
        with pytest.raises(InvalidArgumentError, match=re.escape(text)):
            dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot", **kwargs)
    d.set_vector("tree", "code", np.array([1, 1, 2, 2]))
    with pytest.raises(
        InvalidArgumentError,
        match="empty_implicit: 'x' is not a value of the vector: code\nwhich holds int64",
    ):
        dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="code", empty_implicit="x")
    d.delete_vector("tree", "code")
    assert snapshot(d) == before


def test_defaults_must_fit_the_element_type(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    d.set_vector("tree", "soil", np.array(["clay", "clay", "sand", "sand"], dtype=object))
    d.set_vector("tree", "rows", np.array([3, 3, 5, 5], dtype=np.uint8))
    d.add_axis("plot", ["n", "s", "w"])
    before = snapshot(d)
    for defaults, cls, text in (
        ({"rows": 1.5, "soil": "-"}, UnsafeCastError, "reconstructed property: rows"),
        ({"rows": -1, "soil": "-"}, UnsafeCastError, "reconstructed property: rows"),
        ({"rows": "1", "soil": "-"}, InvalidArgumentError, "the string '1' is not a uint8"),
        ({"rows": 1, "soil": 0}, InvalidArgumentError, "0 is not a string"),
    ):
        with pytest.raises(cls, match=re.escape(text)):
            dafzarr.reconstruct_axis(
                d,
                existing_axis="tree",
                implicit_axis="plot",
                implicit_properties={"rows", "soil"},
                properties_defaults=defaults,
            )
        assert snapshot(d) == before


def test_a_vector_already_on_the_axis_is_refused_before_writing(make: Maker) -> None:
    d = _orchard(make)
    d.set_vector("tree", "plot", np.array([1, 1, 2, 2]))
    d.set_vector("tree", "rows", np.array([3, 3, 5, 5]))
    d.add_axis("plot", ["1", "2"])
    d.set_vector("plot", "rows", np.array([0, 0]))
    before = snapshot(d)
    with _raises(
        DafExistsError, "existing vector: rows", "for the axis: plot", "in the daf data: orchard!"
    ):
        dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
    assert snapshot(d) == before


def test_read_only_data_sets_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "ro.daf.zarr"
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("tree", ["a", "b"])
        d.set_vector("tree", "plot", np.array(["n", "s"], dtype=object))
    with dafzarr.open_daf(path, "r") as ro, pytest.raises(DafReadOnlyError, match="ro"):
        dafzarr.reconstruct_axis(ro, existing_axis="tree", implicit_axis="plot")


def test_an_append_only_zip_refusal_rolls_back_every_write(tmp_path: Path) -> None:
    path = tmp_path / "append.daf.zarr.zip"
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("tree", ["a", "b", "c"])
        d.set_vector("tree", "plot", np.array([1, 1, 2]))
        d.set_vector("tree", "age", np.array([3, 3, 4]))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with dafzarr.open_daf(path, "r+", append_only=True) as d:
        before = snapshot(d)
        with pytest.raises(AppendOnlyError):
            dafzarr.reconstruct_axis(d, existing_axis="tree", implicit_axis="plot")
        assert snapshot(d) == before
    with dafzarr.open_daf(path, "r") as d:
        assert snapshot(d) == before
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_works_through_a_writer_chain(make: Maker) -> None:
    base = _orchard(make)
    base.set_vector("tree", "plot", np.array(["n", "n", "s", "s"], dtype=object))
    top = make("top!")
    chain = dafzarr.chain_writer([base, top])
    chain.set_vector("tree", "fenced", np.array([True, True, False, False]))
    dafzarr.reconstruct_axis(
        chain, existing_axis="tree", implicit_axis="plot", implicit_properties={"fenced"}
    )
    assert top.get_np_vector("plot", "fenced").tolist() == [True, False]
    assert not top.has_vector("tree", "fenced")
    assert not base.has_axis("plot")


CHILD = """
import sys, numpy as np, dafzarr
d = dafzarr.open_daf(sys.argv[1], "w+")
n = 20000
if not d.has_axis("cell"):
    d.add_axis("cell", [f"c{i}" for i in range(n)])
codes = np.random.default_rng(0).integers(0, 30, n)
types = np.array([f"t{c:02d}" for c in codes], dtype=object)
colors = np.array([f"color{c:02d}" for c in codes], dtype=object)
i = 0
while True:
    if not d.has_vector("cell", f"type{i:04d}"):
        d.set_vector("cell", f"type{i:04d}", types)
        d.set_vector("cell", f"color{i:04d}", colors)
        dafzarr.reconstruct_axis(d, existing_axis="cell", implicit_axis=f"type{i:04d}",
                                 implicit_properties={f"color{i:04d}"})
        if i >= 1:
            print("ready", flush=True)
    i += 1
"""


@pytest.mark.slow
def test_a_reconstruction_killed_on_zip_is_all_or_nothing(tmp_path: Path) -> None:
    """A writer killed with SIGKILL during reconstructions leaves each one whole or absent:
    the new axis with its vector and the cells without it, or the cells with it."""
    path = str(tmp_path / "cells.daf.zarr.zip")
    for delay in (0.05, 0.3):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecoveryWarning)  # the ZIP's writable recovery
            d = dafzarr.open_daf(path, "r+")
        try:
            done = 0
            for name in sorted(n for n in d.vectors_set("cell") if n.startswith("type")):
                color = f"color{name[4:]}"
                if d.has_axis(name):
                    assert not d.has_vector("cell", color), name
                    entries = list(d.axis_np_entries(name))
                    assert entries == [f"t{c:02d}" for c in range(30)], name
                    assert d.get_np_vector(name, color).tolist() == [
                        f"color{c:02d}" for c in range(30)
                    ], name
                    done += 1
            assert {a for a in d.axes_set() if a.startswith("type")} <= d.vectors_set("cell")
            assert done >= 2
        finally:
            d.close()


# --- An AnnData object ---------------------------------------------------------------------


def test_anndata_per_type_colors_move_to_a_type_axis(tmp_path: Path) -> None:
    ad = pytest.importorskip("anndata")
    rng = np.random.default_rng(5)
    types = np.array(["T", "B", "NK", "B", "T", "T", "", "NK"], dtype=object)
    palette = {"T": "red", "B": "blue", "NK": "green", "": "gray"}
    obs = pd.DataFrame(
        {
            "type": types,
            "color": [palette[t] for t in types],
            "score": rng.random(len(types)),
        },
        index=[f"c{i}" for i in range(len(types))],
    )
    adata = ad.AnnData(
        X=rng.integers(0, 5, (len(types), 3)).astype(np.float32),
        obs=obs,
        var=pd.DataFrame(index=["g1", "g2", "g3"]),
    )
    from dafzarr.anndata import anndata_to_daf

    d = anndata_to_daf(adata, tmp_path / "cells.daf.zarr.zip")
    try:
        empties = dafzarr.reconstruct_axis(d, existing_axis="cell", implicit_axis="type")
        assert empties == {"color": "gray"}
        assert list(d.axis_np_entries("type")) == ["B", "NK", "T"]
        assert d.get_np_vector("type", "color").tolist() == ["blue", "green", "red"]
        assert not d.has_vector("cell", "color")
        assert d.has_vector("cell", "score")
        # The per-cell colors come back through the new axis.
        back = d.get_np_query("@ cell : type ?? gray : color")
        assert back.tolist() == obs["color"].tolist()
    finally:
        d.close()


# --- Against a pandas group-by -------------------------------------------------------------


def _expected(
    implicit: list[int], props: dict[str, list[int]]
) -> tuple[list[str], dict[str, list[int]], dict[str, Any]]:
    """What reconstruct_axis should do, from pandas: entries, moved vectors, empties."""
    frame = pd.DataFrame({"key": implicit, **props})
    used = frame[frame["key"] != 0]
    entries = [str(k) for k in sorted(used["key"].unique())]
    moved: dict[str, list[int]] = {}
    empties: dict[str, Any] = {}
    for name in props:
        if (frame.groupby("key")[name].nunique() <= 1).all():
            moved[name] = [int(used[used["key"] == int(e)][name].iloc[0]) for e in entries]
            empty = frame[frame["key"] == 0][name]
            empties[name] = int(empty.iloc[0]) if len(empty) else None
    return entries, moved, empties


@settings(deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.lists(st.integers(-2, 2), min_size=n, max_size=n), min_size=1, max_size=3),
        )
    )
)
def test_matches_a_pandas_group_by(case: tuple[list[int], list[list[int]]]) -> None:
    implicit, columns = case
    props = {f"p{i}": c for i, c in enumerate(columns)}
    d = dafzarr.memory_daf("hyp")
    d.add_axis("cell", [f"c{i}" for i in range(len(implicit))])
    d.set_vector("cell", "key", np.array(implicit))
    for name, values in props.items():
        d.set_vector("cell", name, np.array(values))
    entries, moved, empties = _expected(implicit, props)
    got = dafzarr.reconstruct_axis(d, existing_axis="cell", implicit_axis="key", empty_implicit=0)
    assert got == empties
    assert list(d.axis_np_entries("key")) == entries
    assert d.vectors_set("key") == set(moved)
    for name, values in moved.items():
        assert d.get_np_vector("key", name).tolist() == values
    assert d.vectors_set("cell") == {"key"} | (set(props) - set(moved))
    assert d.get_np_vector("cell", "key").tolist() == [str(k) if k else "" for k in implicit]


@settings(deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.sampled_from(["", "b", "a", "ab"]), min_size=n, max_size=n),
            st.lists(st.sampled_from(["x", "y", "é"]), min_size=n, max_size=n),
            st.lists(st.sampled_from([0.5, -1.0, np.nan]), min_size=n, max_size=n),
        )
    )
)
def test_string_keys_match_a_pandas_group_by(
    case: tuple[list[str], list[str], list[float]],
) -> None:
    implicit, words, numbers = case
    d = dafzarr.memory_daf("hyp")
    d.add_axis("cell", [f"c{i}" for i in range(len(implicit))])
    d.set_vector("cell", "key", np.array(implicit, dtype=object))
    d.set_vector("cell", "word", np.array(words, dtype=object))
    d.set_vector("cell", "number", np.array(numbers))
    frame = pd.DataFrame({"key": implicit, "word": words, "number": numbers})
    per_key = frame.groupby("key").nunique(dropna=False).le(1).all()
    used = frame[frame["key"] != ""]
    entries = sorted(used["key"].unique())
    got = dafzarr.reconstruct_axis(d, existing_axis="cell", implicit_axis="key")
    assert list(d.axis_np_entries("key")) == entries
    assert set(got) == {name for name in ("word", "number") if per_key[name]}
    for name in got:
        firsts = used.groupby("key")[name].first() if len(used) else pd.Series(dtype=object)
        want = [firsts[e] for e in entries]
        np.testing.assert_array_equal(
            d.get_np_vector("key", name),
            np.array(want, dtype=(object if name == "word" else float)),
        )
        empty = frame[frame["key"] == ""][name]
        if len(empty):
            assert got[name] == empty.iloc[0] or (np.isnan(got[name]) and np.isnan(empty.iloc[0]))
        else:
            assert got[name] is None
    assert d.get_np_vector("cell", "key").tolist() == implicit
