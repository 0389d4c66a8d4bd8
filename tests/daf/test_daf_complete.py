"""Complete chains (``dafzarr.complete_chain``, ``dafzarr.complete_daf``): a data set that
records the data set it extends (``base_daf_repository``, and ``base_daf_view`` for a view of
it), opened later with all its bases, on directories, ZIPs and data sets inside one ZIP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr._core.daf.complete import parse_view_json, view_json
from dafzarr.errors import DafFormatError, DafReadOnlyError, InvalidArgumentError


def _cells(path: Path | str) -> None:
    Path(str(path).split("#")[0]).parent.mkdir(parents=True, exist_ok=True)
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", ["c1", "c2", "c3", "c4"])
        d.add_axis("gene", ["g1", "g2"])
        d.set_vector("cell", "age", np.array([3.0, 5.0, 7.0, 9.0]))
        d.set_vector("cell", "is_good", np.array([True, False, True, True]))
        d.set_matrix("cell", "gene", "UMIs", np.arange(8, dtype=np.float32).reshape(4, 2))
        d.set_scalar("organism", "mouse")


@pytest.mark.parametrize("suffix", [".daf.zarr", ".daf.zarr.zip"])
def test_a_chain_on_a_base_reopens_with_its_base_after_the_tree_moves(
    tmp_path: Path, suffix: str
) -> None:
    _cells(tmp_path / "tree" / f"cells{suffix}")
    base = dafzarr.open_daf(tmp_path / "tree" / f"cells{suffix}", "r")
    (tmp_path / "tree" / "runs").mkdir()
    new = dafzarr.open_daf(tmp_path / "tree" / "runs" / f"metacells{suffix}", "w")
    chain = dafzarr.complete_chain(base_daf=base, new_daf=new)
    chain.set_vector("cell", "score", np.array([1.0, 2.0, 3.0, 4.0]))
    assert new.get_scalar("base_daf_repository") == f"../cells{suffix}"
    assert not new.has_scalar("base_daf_view")
    base.close()
    new.close()
    shutil.move(tmp_path / "tree", tmp_path / "moved")  # relative paths survive a move
    leaf = tmp_path / "moved" / "runs" / f"metacells{suffix}"
    complete = dafzarr.complete_daf(leaf)
    assert complete.name == f"{leaf}.complete"
    assert complete.get_scalar("organism") == "mouse"
    np.testing.assert_array_equal(complete.get_np_vector("cell", "age"), [3, 5, 7, 9])
    np.testing.assert_array_equal(complete.get_np_vector("cell", "score"), [1, 2, 3, 4])
    assert list(complete.get_np_query("@ cell [ age > 4 ] : score")) == [2.0, 3.0, 4.0]
    with pytest.raises(DafReadOnlyError):
        complete.set_scalar("x", 1)
    complete.close()
    with dafzarr.complete_daf(leaf, "r+") as writable:
        writable.set_scalar("note", "written")
    assert dafzarr.open_daf(leaf).get_scalar("note") == "written"
    assert not dafzarr.open_daf(tmp_path / "moved" / f"cells{suffix}").has_scalar("note")


def test_a_chain_on_a_view_of_its_base_records_the_view(tmp_path: Path) -> None:
    _cells(tmp_path / "cells.daf.zarr")
    base = dafzarr.open_daf(tmp_path / "cells.daf.zarr", "r")
    new = dafzarr.open_daf(tmp_path / "good.daf.zarr", "w")
    axes = [("obs", "@ cell [ is_good ]"), ("gene", "=")]
    data = [(("obs", "age"), "="), (("obs", "gene", "UMIs"), "="), ("organism", None)]
    chain = dafzarr.complete_chain(base_daf=base, new_daf=new, axes=axes, data=data)
    assert chain.axes_set() == {"obs", "gene"}
    stored = json.loads(new.get_scalar("base_daf_view"))
    assert stored["axes"] == [{"obs": "@ cell [ is_good ]"}, {"gene": "="}]
    assert stored["data"][0] == {'("obs", "age")': "="}
    assert stored["data"][2] == {"organism": None}
    complete = dafzarr.complete_daf(tmp_path / "good.daf.zarr")
    np.testing.assert_array_equal(complete.axis_np_entries("obs"), ["c1", "c3", "c4"])
    np.testing.assert_array_equal(complete.get_np_vector("obs", "age"), [3, 7, 9])
    np.testing.assert_array_equal(
        complete.get_np_matrix("obs", "gene", "UMIs"), [[0, 1], [4, 5], [6, 7]]
    )
    assert not complete.has_scalar("organism")
    assert not complete.has_vector("obs", "is_good")


def test_a_chain_of_three_inside_one_zip(tmp_path: Path) -> None:
    """Data sets inside one multi-data-set ZIP name each other by their groups (relative to
    the archive, as DataAxesFormats.jl computes them), and open read-only as one chain."""
    archive = tmp_path / "all.dafs.zarr.zip"
    _cells(f"{archive}#/cells")
    with dafzarr.open_daf(f"{archive}#/middle", "w+") as middle:
        middle.set_scalar("base_daf_repository", "cells")
        middle.add_axis("cell", ["c1", "c2", "c3", "c4"])
        middle.set_vector("cell", "batch", np.array(["a", "a", "b", "b"], dtype=object))
    with dafzarr.open_daf(f"{archive}#/leaf", "w+") as leaf:
        leaf.set_scalar("base_daf_repository", "middle")
        leaf.set_scalar("depth", 3)
    with dafzarr.complete_daf(f"{archive}#/leaf") as complete:
        assert complete.get_scalar("depth") == 3
        assert complete.get_scalar("organism") == "mouse"
        assert list(complete.get_np_vector("cell", "batch")) == ["a", "a", "b", "b"]
        assert [d.path for d in complete.dafs] == [
            f"{archive}#/cells",
            f"{archive}#/middle",
            f"{archive}#/leaf",
        ]


def test_absolute_base_paths_and_refusals(tmp_path: Path) -> None:
    _cells(tmp_path / "cells.daf.zarr")
    base = dafzarr.open_daf(tmp_path / "cells.daf.zarr")
    (tmp_path / "sub").mkdir()
    new = dafzarr.open_daf(tmp_path / "sub" / "new.daf.zarr", "w")
    dafzarr.complete_chain(base_daf=base, new_daf=new, absolute=True)
    assert new.get_scalar("base_daf_repository") == str(tmp_path / "cells.daf.zarr")
    with pytest.raises(InvalidArgumentError, match="complete chain records paths"):
        dafzarr.complete_chain(base_daf=dafzarr.memory_daf("m"), new_daf=new)
    with pytest.raises(InvalidArgumentError, match="mode must be 'r' or 'r\\+'"):
        dafzarr.complete_daf(tmp_path / "cells.daf.zarr", "w")


def test_bases_that_loop_or_are_not_paths_are_clear_errors(tmp_path: Path) -> None:
    for name, base in (("a", "b.daf.zarr"), ("b", "a.daf.zarr")):
        with dafzarr.open_daf(tmp_path / f"{name}.daf.zarr", "w") as d:
            d.set_scalar("base_daf_repository", base)
    with pytest.raises(DafFormatError, match="name each other as their base"):
        dafzarr.complete_daf(tmp_path / "a.daf.zarr")
    with dafzarr.open_daf(tmp_path / "c.daf.zarr", "w") as d:
        d.set_scalar("base_daf_repository", 7)
    with pytest.raises(DafFormatError, match="is not a path: 7"):
        dafzarr.complete_daf(tmp_path / "c.daf.zarr")
    _cells(tmp_path / "cells.daf.zarr")
    with dafzarr.open_daf(tmp_path / "d.daf.zarr", "w") as d:
        d.set_scalar("base_daf_repository", "cells.daf.zarr")
        d.set_scalar("base_daf_view", "{not json")
    with pytest.raises(DafFormatError, match="not the JSON of a view"):
        dafzarr.complete_daf(tmp_path / "d.daf.zarr")


def test_the_view_text_is_read_as_datasxesformats_writes_it() -> None:
    """The JSON a Julia data set stores: one-key objects, tuple keys as Julia prints them."""
    text = ('{"axes":[{"cell":"@ cell [ is_good ]"},{"gene":null}],'
            '"data":[{"(\\"cell\\", \\"age\\")":"="},{"(\\"cell\\", \\"gene\\", \\"UMIs\\")":'
            '"="},{"organism":null}]}')  # fmt: skip
    axes, data = parse_view_json(text, "d")
    assert axes == [("cell", "@ cell [ is_good ]"), ("gene", None)]
    assert data == [(("cell", "age"), "="), (("cell", "gene", "UMIs"), "="), ("organism", None)]
    assert parse_view_json(view_json(axes, data), "d") == (axes, data)
    assert parse_view_json('{"axes":[{"cell":"="}]}', "d") == ([("cell", "=")], None)
