"""Daf chains (``dafzarr.chain_reader``, ``dafzarr.chain_writer``): data sets read as one, the
later overriding the earlier, writes into the last; the cases of DataAxesFormats.jl's chain
tests in other data, on the memory, directory and ZIP backends, plus zero-copy reads, files of
the earlier members left untouched, and queries answered as on an equivalent plain data set."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import (
    DafExistsError,
    DafMissingError,
    DafReadOnlyError,
    InvalidArgumentError,
)

from .daf_helpers import assert_same_query_result, recorder

SITES = np.array(["north", "east", "south"], dtype=object)
SPECIES = np.array(["oak", "ash", "elm", "yew"], dtype=object)

Maker = Callable[[str], Any]


@pytest.fixture
def make(writable_dafs: Maker) -> Maker:
    """Makes empty writable data sets of one backend (memory, directory, ZIP)."""
    return writable_dafs


def _raises(cls: type[Exception], *lines: str) -> Any:
    return pytest.raises(cls, match="^" + re.escape("\n".join(lines)))


# --- Making chains --------------------------------------------------------------------------


def test_empty_chains_are_refused() -> None:
    for make_chain in (dafzarr.chain_reader, dafzarr.chain_writer):
        with _raises(InvalidArgumentError, "empty chain: none!"):
            make_chain([], name="none!")
        with pytest.raises(InvalidArgumentError, match=r"^empty chain$"):
            make_chain([])


def test_chains_of_one(make: Maker) -> None:
    first = make("one!")
    reader = dafzarr.chain_reader([first])
    assert reader.read_only and reader.name == "one!"
    with _raises(DafReadOnlyError, "can't modify the read-only daf data: one!"):
        reader.set_scalar("x", 1)
    assert dafzarr.chain_writer([first]) is first
    named = dafzarr.chain_writer([first], name="named!")
    named.set_scalar("x", 1)
    assert first.get_scalar("x") == 1


def test_writer_chain_needs_a_writable_last(make: Maker) -> None:
    first, second = make("first!"), make("second!")
    frozen = second.read_only_view()
    with _raises(
        DafReadOnlyError, f"read-only final data: {frozen.name}", "in write chain: chain!"
    ):
        dafzarr.chain_writer([first, frozen], name="chain!")
    reader = dafzarr.chain_reader([first, frozen])
    assert reader.name.startswith(f"first!;{frozen.name}")
    assert not dafzarr.chain_writer([frozen, first]).read_only


@pytest.mark.parametrize(
    ("second_entries", "lines"),
    [
        (
            ["north", "east", "west"],
            [
                "different entry#3: west",
                "for the axis: site",
                "in the daf data: second!",
                "from the entry#3: south",
                "for the axis: site",
                "in the daf data: first!",
                "in the chain: chain!",
            ],
        ),
        (
            ["east", "north", "south"],
            [
                "different entry#1: east",
                "for the axis: site",
                "in the daf data: second!",
                "from the entry#1: north",
            ],
        ),
        (
            ["north", "east"],
            [
                "different number of entries: 2",
                "for the axis: site",
                "in the daf data: second!",
                "from the number of entries: 3",
                "for the axis: site",
                "in the daf data: first!",
                "in the chain: chain!",
            ],
        ),
    ],
)
def test_chains_refuse_different_axes(
    make: Maker, second_entries: list[str], lines: list[str]
) -> None:
    first, second = make("first!"), make("second!")
    first.add_axis("site", SITES)
    second.add_axis("site", second_entries)
    for make_chain in (dafzarr.chain_reader, dafzarr.chain_writer):
        with _raises(InvalidArgumentError, *lines):
            make_chain([first, second], name="chain!")


# --- Reading --------------------------------------------------------------------------------


@pytest.fixture(params=["reader", "writer"])
def pair(request: pytest.FixtureRequest, make: Maker) -> tuple[Any, Any, Any]:
    first, second = make("first!"), make("second!")
    make_chain = dafzarr.chain_reader if request.param == "reader" else dafzarr.chain_writer
    return first, second, make_chain([first, second], name="chain!")


def test_chain_scalars(pair: tuple[Any, Any, Any]) -> None:
    first, second, chain = pair
    first.set_scalar("season", "spring")
    assert chain.has_scalar("season") and chain.get_scalar("season") == "spring"
    second.set_scalar("plot", 7)
    assert chain.scalars_set() == {"season", "plot"}
    second.set_scalar("season", "autumn")
    assert chain.get_scalar("season") == "autumn"
    assert not chain.has_scalar("observer")
    with _raises(DafMissingError, "missing scalar: observer", "in the daf data: chain!"):
        chain.get_scalar("observer")
    assert chain.get_scalar("observer", default=None) is None
    kind = "ReadOnly" if chain.read_only else "Write"
    assert chain.description() == (
        f"name: chain!\ntype: {kind} Chain\nchain:\n- first!\n"
        "- second!\nscalars:\n  plot: 7\n  season: 'autumn'\n"
    )
    assert chain.describe() == chain.description()


def test_chain_axes(pair: tuple[Any, Any, Any]) -> None:
    first, second, chain = pair
    first.add_axis("site", SITES)
    assert chain.has_axis("site") and list(chain.axis_np_entries("site")) == list(SITES)
    second.add_axis("species", SPECIES)
    assert chain.axes_set() == {"site", "species"}
    assert chain.axis_length("species") == 4
    assert chain.axis_dict("site") == {"north": 0, "east": 1, "south": 2}
    assert not chain.has_axis("plot")
    with _raises(DafMissingError, "missing axis: plot", "in the daf data: chain!"):
        chain.axis_np_entries("plot")


def test_chain_vectors(pair: tuple[Any, Any, Any]) -> None:
    first, second, chain = pair
    first.add_axis("site", SITES)
    first.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    first.set_vector("site", "soil", np.array(["clay", "sand", "loam"], dtype=object))
    np.testing.assert_array_equal(chain.get_np_vector("site", "rain"), [1, 2, 3])
    second.add_axis("site", SITES)
    second.set_vector("site", "rain", np.array([5.0, 6.0, 7.0]))
    second.set_vector("site", "area", np.array([10, 20, 30]))
    assert chain.vectors_set("site") == {"rain", "soil", "area"}
    np.testing.assert_array_equal(chain.get_np_vector("site", "rain"), [5, 6, 7])
    np.testing.assert_array_equal(chain.get_np_vector("site", "soil"), ["clay", "sand", "loam"])
    assert chain.has_vector("site", "area") and not chain.has_vector("site", "slope")
    series = chain.get_pd_vector("site", "area")
    assert list(series.index) == list(SITES) and list(series) == [10, 20, 30]
    with _raises(
        DafMissingError, "missing vector: slope", "for the axis: site", "in the daf data: chain!"
    ):
        chain.get_np_vector("site", "slope")


def test_chain_matrices(pair: tuple[Any, Any, Any]) -> None:
    first, second, chain = pair
    counts = np.arange(12, dtype=np.int16).reshape(3, 4)
    for d in (first, second):
        d.add_axis("site", SITES)
        d.add_axis("species", SPECIES)
    first.set_matrix("site", "species", "count", counts, relayout=False)
    assert chain.matrices_set("site", "species", relayout=False) == {"count"}
    assert chain.matrices_set("species", "site", relayout=False) == set()
    np.testing.assert_array_equal(chain.get_np_matrix("species", "site", "count"), counts.T)
    # A later member's other layout: the requested layout is read where it is stored.
    second.set_matrix("species", "site", "count", (counts * 10).T, relayout=False)
    np.testing.assert_array_equal(chain.get_np_matrix("site", "species", "count"), counts)
    np.testing.assert_array_equal(chain.get_np_matrix("species", "site", "count"), (counts * 10).T)
    second.set_matrix("site", "species", "count", counts * 2, relayout=False)
    np.testing.assert_array_equal(chain.get_np_matrix("site", "species", "count"), counts * 2)
    second.set_matrix("site", "species", "cover", sp.csc_matrix(counts > 5))
    assert chain.matrices_set("species", "site") == {"count", "cover"}
    assert sp.issparse(chain.get_np_matrix("species", "site", "cover"))
    frame = chain.get_pd_matrix("site", "species", "count")
    assert list(frame.index) == list(SITES) and list(frame.columns) == list(SPECIES)
    with _raises(DafMissingError, "missing matrix: shade", "for the rows axis: site"):
        chain.get_np_matrix("site", "species", "shade")


def test_chain_reads_are_zero_copy(
    pair: tuple[Any, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, chain = pair
    first.add_axis("site", SITES)
    first.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    first.set_matrix("site", "site", "distance", np.eye(3))
    second.add_axis("site", SITES)
    second.set_matrix("site", "site", "border", sp.csc_matrix(np.eye(3, k=1)))
    returned: list[Any] = []
    for daf in (first, second):
        for method in ("axis_np_entries", "get_np_vector", "get_np_matrix"):
            monkeypatch.setattr(daf, method, recorder(getattr(daf, method), returned))
    for read in (
        lambda: chain.get_np_vector("site", "rain"),
        lambda: chain.get_np_matrix("site", "site", "distance"),
        lambda: chain.get_np_matrix("site", "site", "border"),
        lambda: chain.axis_np_entries("site"),
    ):
        got = read()
        assert any(got is out for out in returned)  # the member's own array, passed through
    if first.path == "memory":  # one buffer per property: every read shares it
        assert np.shares_memory(
            chain.get_np_vector("site", "rain"), first.get_np_vector("site", "rain")
        )


def test_chain_queries_match_a_plain_data_set(pair: tuple[Any, Any, Any]) -> None:
    first, second, chain = pair
    counts = np.array([[3, 0, 1, 0], [0, 2, 0, 5], [4, 4, 0, 1]], dtype=np.int32)
    first.set_scalar("season", "spring")
    first.add_axis("site", SITES)
    first.add_axis("species", SPECIES)
    first.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    first.set_vector("site", "zone", np.array(["a", "b", "a"], dtype=object))
    first.set_matrix("site", "species", "count", counts)
    second.add_axis("species", SPECIES)
    second.set_vector("species", "native", np.array([True, True, False, True]))
    plain = dafzarr.memory_daf("plain")
    plain.set_scalar("season", "spring")
    plain.add_axis("site", SITES)
    plain.add_axis("species", SPECIES)
    plain.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    plain.set_vector("site", "zone", np.array(["a", "b", "a"], dtype=object))
    plain.set_vector("species", "native", np.array([True, True, False, True]))
    plain.set_matrix("site", "species", "count", counts)
    for query in (
        ". season",
        ". ?",
        "@ ?",
        "@ site : ?",
        "@ species : ?",
        "@ site : rain",
        "@ site [ zone = a ] : rain",
        "@ species [ native ]",
        "@ site @ species [ native ] :: count",
        "@ site @ species :: count >| Sum",
        "@ species @ site :: count",
        "@ site @ species :: count -/ zone >- Max",
        "@ site : rain / zone >> Sum",
        "@ site @ species :: ?",
    ):
        assert_same_query_result(chain.get_pd_query(query), plain.get_pd_query(query), query)
        assert chain.has_query(query)
    assert not chain.has_query("@ site : slope")
    # The chain follows later writes to its members.
    second.add_axis("site", SITES)
    second.set_vector("site", "rain", np.array([9.0, 8.0, 7.0]))
    assert list(chain.get_pd_query("@ site : rain")) == [9, 8, 7]
    first.set_scalar("season", "winter", overwrite=True)
    assert chain.get_np_query(". season") == "winter"


# --- Writing --------------------------------------------------------------------------------


@pytest.fixture
def writer(make: Maker) -> tuple[Any, Any, Any]:
    first, second = make("first!"), make("second!")
    return first, second, dafzarr.chain_writer([first, second], name="chain!")


def _refused(what: str, *more: str) -> Any:
    return _raises(
        DafReadOnlyError,
        f"failed to delete the {what}",
        *more,
        "from the daf data: second!",
        "of the chain: chain!",
        "because it exists in the earlier: first!",
    )


def test_write_scalars(writer: tuple[Any, Any, Any]) -> None:
    first, second, chain = writer
    chain.set_scalar("season", "spring")
    assert not first.has_scalar("season") and second.get_scalar("season") == "spring"
    chain.delete_scalar("season")
    assert not chain.has_scalar("season") and not second.has_scalar("season")
    first.set_scalar("season", "summer")
    with _refused("scalar: season"):
        chain.delete_scalar("season")
    with _raises(DafExistsError, "existing scalar: season", "in the daf data: chain!"):
        chain.set_scalar("season", "autumn")
    chain.set_scalar("season", "autumn", overwrite=True)
    assert first.get_scalar("season") == "summer"
    assert second.get_scalar("season") == "autumn" == chain.get_scalar("season")
    with _refused("scalar: season"):
        chain.delete_scalar("season")
    assert second.has_scalar("season")
    chain.delete_scalar("plot", must_exist=False)


def test_write_axes(writer: tuple[Any, Any, Any]) -> None:
    first, second, chain = writer
    chain.add_axis("site", SITES)
    assert not first.has_axis("site") and list(second.axis_np_entries("site")) == list(SITES)
    chain.delete_axis("site")
    assert not chain.has_axis("site")
    first.add_axis("site", SITES)
    assert list(chain.axis_np_entries("site")) == list(SITES)
    with _refused("axis: site"):
        chain.delete_axis("site")
    with _raises(DafExistsError, "existing axis: site"):
        chain.add_axis("site", SITES)
    second.add_axis("site", SITES)
    with _refused("axis: site"):
        chain.delete_axis("site")
    assert second.has_axis("site")


def test_write_vectors(writer: tuple[Any, Any, Any]) -> None:
    first, second, chain = writer
    first.add_axis("site", SITES)
    chain.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    assert not first.has_vector("site", "rain")
    assert list(second.axis_np_entries("site")) == list(SITES)  # the axis was copied
    np.testing.assert_array_equal(second.get_np_vector("site", "rain"), [1, 2, 3])
    chain.delete_vector("site", "rain")
    assert second.has_axis("site") and not chain.has_vector("site", "rain")
    with chain.empty_dense_vector("site", "depth", np.int16) as dense:
        dense[:] = [4, 5, 6]
    np.testing.assert_array_equal(second.get_np_vector("site", "depth"), [4, 5, 6])
    with chain.empty_sparse_vector("site", "frost", np.int16, 1) as (nzind, nzval):
        nzind[:] = [2]
        nzval[:] = [9]
    np.testing.assert_array_equal(chain.get_np_vector("site", "frost"), [0, 9, 0])
    assert not first.has_vector("site", "frost")
    first.set_vector("site", "zone", np.array(["a", "b", "a"], dtype=object))
    with _raises(DafExistsError, "existing vector: zone", "for the axis: site"):
        chain.set_vector("site", "zone", "c")
    chain.set_vector("site", "zone", "c", overwrite=True)
    assert list(chain.get_np_vector("site", "zone")) == ["c"] * 3
    assert list(first.get_np_vector("site", "zone")) == ["a", "b", "a"]
    with _refused("vector: zone", "of the axis: site"):
        chain.delete_vector("site", "zone")


def test_write_matrices(writer: tuple[Any, Any, Any]) -> None:
    first, second, chain = writer
    first.add_axis("site", SITES)
    first.add_axis("species", SPECIES)
    counts = np.arange(12, dtype=np.int32).reshape(3, 4)
    chain.set_matrix("site", "species", "count", counts, relayout=False)
    assert second.axes_set() == {"site", "species"}
    assert second.matrices_set("site", "species", relayout=False) == {"count"}
    assert first.matrices_set("site", "species") == set()
    chain.relayout_matrix("site", "species", "count")
    assert second.matrices_set("species", "site", relayout=False) == {"count"}
    chain.delete_matrix("site", "species", "count")
    assert chain.matrices_set("site", "species") == set()
    with chain.empty_dense_matrix("site", "species", "cover", np.float32) as dense:
        dense[:] = 0.5
    assert float(chain.get_np_matrix("species", "site", "cover").sum()) == 6.0
    with chain.empty_sparse_matrix("site", "species", "seen", np.int8, 1) as (
        colptr,
        rowval,
        nzval,
    ):
        colptr[:] = [1, 2, 2, 2, 2]
        rowval[:] = [3]
        nzval[:] = [1]
    assert chain.get_np_matrix("site", "species", "seen").toarray()[2, 0] == 1
    first.set_matrix("site", "species", "count", counts)
    with _raises(DafExistsError, "existing matrix: count"):
        chain.set_matrix("site", "species", "count", counts)
    chain.set_matrix("site", "species", "count", counts * 3, overwrite=True)
    np.testing.assert_array_equal(chain.get_np_matrix("site", "species", "count"), counts * 3)
    np.testing.assert_array_equal(first.get_np_matrix("site", "species", "count"), counts)
    with _refused("matrix: count", "for the rows axis: site", "and the columns axis: species"):
        chain.delete_matrix("site", "species", "count")


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("suffix", [".daf.zarr", ".daf.zarr.zip"])
def test_writes_touch_the_last_member_only(tmp_path: Path, suffix: str) -> None:
    base_path = tmp_path / f"base{suffix}"
    base = dafzarr.open_daf(base_path, "w", name="base!")
    base.set_scalar("season", "spring")
    base.add_axis("site", SITES)
    base.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    base.close()
    before = (
        _snapshot(tmp_path)
        if suffix == ".daf.zarr"
        else {"base": hashlib.sha256(base_path.read_bytes()).hexdigest()}
    )
    base = dafzarr.open_daf(base_path, "r", name="base!")
    scratch = dafzarr.open_daf(tmp_path / f"scratch{suffix}", "w", name="scratch!")
    chain = dafzarr.chain_writer([base, scratch])
    chain.set_vector("site", "rain", np.array([7.0, 8.0, 9.0]), overwrite=True)
    chain.set_scalar("season", "winter", overwrite=True)
    chain.add_axis("species", SPECIES)
    chain.set_matrix("site", "species", "count", np.ones((3, 4), dtype=np.int8))
    np.testing.assert_array_equal(chain.get_np_vector("site", "rain"), [7, 8, 9])
    base.close()
    scratch.close()
    if suffix == ".daf.zarr":
        after = {k: v for k, v in _snapshot(tmp_path).items() if k.startswith("base")}
        assert after == before
    else:
        assert hashlib.sha256(base_path.read_bytes()).hexdigest() == before["base"]
    reopened = dafzarr.open_daf(tmp_path / f"scratch{suffix}", "r")
    assert reopened.get_scalar("season") == "winter"
    assert reopened.axes_set() == {"site", "species"}
    np.testing.assert_array_equal(reopened.get_np_vector("site", "rain"), [7, 8, 9])
    reopened.close()


def test_view_of_a_chain(writer: tuple[Any, Any, Any]) -> None:
    first, _, chain = writer
    first.add_axis("site", SITES)
    first.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    chain.set_vector("site", "wet", np.array([False, True, True]))
    view = dafzarr.viewer(
        chain, axes={"wet_site": "@ site [ wet ]"}, data=[(("wet_site", "rain"), "=")]
    )
    np.testing.assert_array_equal(view.get_np_vector("wet_site", "rain"), [2, 3])
    assert view.description().startswith(f"name: {view.name}\ntype: View\nbase: chain!\n")


def test_daf_to_anndata_of_a_chain(writer: tuple[Any, Any, Any]) -> None:
    pytest.importorskip("anndata")
    from dafzarr.anndata import daf_to_anndata

    first, _, chain = writer
    first.add_axis("site", SITES)
    first.add_axis("species", SPECIES)
    first.set_matrix("site", "species", "count", np.ones((3, 4), dtype=np.int32))
    chain.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    chain.set_matrix("site", "species", "count", np.full((3, 4), 2, dtype=np.int32), overwrite=True)
    adata = daf_to_anndata(chain, "site", "species", X="count")
    assert list(adata.obs_names) == list(SITES)
    np.testing.assert_array_equal(np.asarray(adata.X), np.full((3, 4), 2))
    np.testing.assert_array_equal(adata.obs["rain"].to_numpy(), [1, 2, 3])


def test_chain_to_xarray(pair: tuple[Any, Any, Any]) -> None:
    pytest.importorskip("xarray")
    first, second, chain = pair
    first.add_axis("site", SITES)
    first.set_vector("site", "rain", np.array([1.0, 2.0, 3.0]))
    second.add_axis("site", SITES)
    second.set_vector("site", "rain", np.array([4.0, 5.0, 6.0]))
    second.set_scalar("season", "spring")
    ds = chain.to_xarray()
    assert set(ds.data_vars) == {"site.rain"}
    np.testing.assert_array_equal(ds["site.rain"].values, [4, 5, 6])
    assert ds.attrs == {"season": "spring"}
