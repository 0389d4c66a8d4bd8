"""Parity of views and chains with DataAxesFormats.jl: the cases of its view and chain tests not
already in ``test_daf_views.py`` / ``test_daf_chains.py``, restated on data of our own.

Left out as Julia-only: object identity of wrappers (``viewer(view) === view``,
``read_only(chain) === chain``), ``brief``, ``complete_path``, version counters, the
``description`` text (dafzarr's has its own layout) and tensors listed collapsed
(``/batch/_is_high``). Deliberate differences (see the queries page of the docs): ``viewer``
without ``axes`` and ``data`` is a view (the anchor returns its read-only wrapper, with the same
answers); a view's matrix key whose query gives a vector says ``vector query:`` (the anchor
says ``matrix query:``, one kind off); a missing axis reads ``missing axis: a`` /
``in the daf data: D`` as every dafzarr storage error does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dafzarr
from dafzarr.errors import DafMissingError, DafReadOnlyError

OBS = ["o1", "o2", "o3"]
VAR = ["v1", "v2"]
X = np.array([[1, 0], [2, 5], [0, 7]], dtype=np.int64)


def _base() -> Any:
    d = dafzarr.memory_daf("memory!")
    d.set_scalar("release", "3.1")
    d.add_axis("cell", OBS)
    d.add_axis("gene", VAR)
    d.add_axis("donor", ["D1", "D2"])
    d.set_vector("cell", "donor", np.array(["D1", "D2", "D2"], dtype=object))
    d.set_vector("cell", "score", np.array([-0.5, 1.5, 2.5]))
    d.set_vector("donor", "sex", np.array(["F", "M"], dtype=object))
    d.set_matrix("gene", "cell", "UMIs", X.T, relayout=False)
    return d


def test_view_scalars_of_a_read_only_base() -> None:
    view = dafzarr.viewer(_base().read_only_view(), name="view!", data=[("*", "=")])
    assert view.scalars_set() == {"release"} and view.get_scalar("release") == "3.1"
    assert view.vectors_set("cell") == set()


def test_view_vector_of_a_complete_reduction_query() -> None:
    view = dafzarr.viewer(_base(), data=[(("cell", "total"), "@ cell @ gene :: UMIs >| Sum")])
    np.testing.assert_array_equal(view.get_np_vector("cell", "total"), X.sum(axis=1))


def test_view_renaming_axes_for_a_computation() -> None:
    view = dafzarr.viewer(
        _base(),
        name="view!",
        axes={"obs": "@ cell", "var": "@ gene"},
        data=[("*", None), (("*", "*"), "="), (("obs", "var", "X"), ":: UMIs")],
    )
    assert view.axes_set() == {"obs", "var"}
    assert view.scalars_set() == set()
    assert view.vectors_set("obs") == {"donor", "score"}
    assert view.vectors_set("var") == set()
    with pytest.raises(DafMissingError, match="missing axis: donor"):
        view.vectors_set("donor")
    # Stored gene x cell: the view has var x obs without relayout, obs x var through it.
    assert view.matrices_set("var", "obs", relayout=False) == {"X"}
    assert view.matrices_set("obs", "var", relayout=False) == set()
    np.testing.assert_array_equal(view.get_np_matrix("var", "obs", "X"), X.T)
    np.testing.assert_array_equal(view.get_np_matrix("obs", "var", "X"), X)
    assert dafzarr.daf.query.query_requires_relayout(view, "@ obs @ var :: X")
    assert not dafzarr.daf.query.query_requires_relayout(view, "@ var @ obs :: X")


@pytest.mark.parametrize("make", [dafzarr.chain_reader, dafzarr.chain_writer])
def test_chain_over_a_read_only_member(make: Any) -> None:
    first, second = dafzarr.memory_daf("first!"), dafzarr.memory_daf("second!")
    members = (
        [first, second.read_only_view()]
        if make is dafzarr.chain_reader
        else [first.read_only_view(), second]
    )
    chain = make(members, name="chain!")
    first.set_scalar("release", 1.0)
    assert chain.get_scalar("release") == 1.0
    second.set_scalar("release", 2.0)
    assert chain.get_scalar("release") == 2.0 and chain.scalars_set() == {"release"}
    first.add_axis("cell", OBS)
    second.add_axis("cell", OBS)
    first.set_vector("cell", "score", np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(chain.get_np_vector("cell", "score"), [1, 2, 3])
    second.set_vector("cell", "score", np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(chain.get_np_vector("cell", "score"), [4, 5, 6])


def test_chain_writes_past_a_read_only_first_member() -> None:
    first, second = dafzarr.memory_daf("first!"), dafzarr.memory_daf("second!")
    chain = dafzarr.chain_writer([first.read_only_view(), second], name="chain!")
    first.add_axis("cell", OBS)
    first.add_axis("gene", VAR)
    chain.set_vector("cell", "score", np.array([1.0, 2.0, 3.0]))
    chain.set_matrix("cell", "gene", "UMIs", X)
    assert not first.has_vector("cell", "score") and not first.matrices_set("cell", "gene")
    assert second.axes_set() == {"cell", "gene"}
    np.testing.assert_array_equal(second.get_np_matrix("cell", "gene", "UMIs"), X)
    chain.delete_matrix("cell", "gene", "UMIs")
    assert second.has_axis("gene") and not chain.has_matrix("cell", "gene", "UMIs")
    first.set_scalar("release", 1.0)
    chain.set_scalar("release", 2.0, overwrite=True)
    assert first.get_scalar("release") == 1.0 and chain.get_scalar("release") == 2.0
    with pytest.raises(DafReadOnlyError, match="because it exists in the earlier: first!"):
        chain.delete_scalar("release")
    with pytest.raises(DafReadOnlyError, match="because it exists in the earlier: first!"):
        chain.delete_axis("cell")
