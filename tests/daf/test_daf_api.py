"""ZarrDaf's API: modes and their errors, names, append-only ZIPs, sub-dafs, shared stores,
in-place fills, read-only handles."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import AppendOnlyError, ArchiveLockedError, MmapZipStore
from dafzarr.errors import (
    DafArgumentError,
    DafExistsError,
    DafFormatError,
    DafMissingError,
    DafReadOnlyError,
    DafzarrError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from tests.helpers.common import check_zip_tools_accept

# --- Paths and modes ----------------------------------------------------------------------------


def test_invalid_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid mode: a"):
        dafzarr.open_daf(tmp_path / "x.daf.zarr", "a")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("x.zarr", "can't parse as ZarrDaf path: .*x.zarr\nexpected one of: <stem>.daf.zarr"),
        ("x.daf.zarr.zip#/g", "can't address a sub-daf in a singular ZarrDaf path"),
        ("x.dafs.zarr.zip", "missing '#/<group>' in plural ZarrDaf path"),
        ("x.dafs.zarr.zip#/", "empty group name after '#/' in ZarrDaf path"),
        ("x.dafs.zarr.zip#/a/../b", "invalid group name: '..'"),
    ],
)
def test_bad_paths(tmp_path: Path, path: str, message: str) -> None:
    with pytest.raises(DafFormatError, match=message):
        dafzarr.open_daf(f"{tmp_path}/{path}", "w+")


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_missing_stores(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "x.daf.zarr"
    with pytest.raises(FileNotFoundError, match=f"no such directory: {root}"):
        dafzarr.open_daf(root, mode)  # type: ignore[arg-type]
    path = tmp_path / "x.daf.zarr.zip"
    with pytest.raises(FileNotFoundError, match=f"no such file: {path}"):
        dafzarr.open_daf(path, mode)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="no such file"):
        dafzarr.open_daf(f"{tmp_path}/m.dafs.zarr.zip#/g", mode)  # type: ignore[arg-type]
    assert not root.exists() and not path.exists()


def test_not_a_group_and_not_a_daf(tmp_path: Path) -> None:
    import zarr

    root = tmp_path / "x.daf.zarr"
    root.mkdir()
    with pytest.raises(DafFormatError, match=f"not a zarr group: {root}"):
        dafzarr.open_daf(root, "r")
    g = zarr.open_group(str(root), mode="w", zarr_format=2)
    g.create_group("other")
    for mode in ("r", "r+"):
        with pytest.raises(DafFormatError, match=f"not a daf data set: {root}"):
            dafzarr.open_daf(root, mode)  # type: ignore[arg-type]
    d = dafzarr.open_daf(root, "w+")  # adopted
    d.add_axis("cell", ["a"])
    assert dafzarr.open_daf(root, "r").axes_set() == {"cell"}
    assert (root / "other" / ".zgroup").is_file()
    root3 = tmp_path / "y.daf.zarr"
    zarr.open_group(str(root3), mode="w", zarr_format=3, attributes={"keep": 1})
    with pytest.raises(DafFormatError, match="not a daf data set"):
        dafzarr.open_daf(root3, "r")
    dafzarr.open_daf(root3, "w+").close()
    assert zarr.open_group(str(root3), mode="r").attrs.asdict() == {"keep": 1, "daf": [1, 0]}


def test_incompatible_versions(tmp_path: Path) -> None:
    import json

    root = tmp_path / "x.daf.zarr"
    dafzarr.open_daf(root, "w").close()
    (root / "daf" / "0").write_bytes(b"\x02\x00")
    with pytest.raises(
        ValueError,
        match=(
            f"incompatible format version: 2.0\nfor the daf zarr group: {root}\n"
            "the code supports version: 1.0"
        ),
    ):
        dafzarr.open_daf(root)
    root3 = tmp_path / "y.daf.zarr"
    dafzarr.open_daf(root3, "w", zarr_format=3).close()
    doc = json.loads((root3 / "zarr.json").read_bytes())
    doc["attributes"]["daf"] = [1, 1]
    (root3 / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(
        ValueError,
        match=(
            "incompatible format version: 1.1\nthe code supports version: 1.0\n"
            f"in daf zarr group: {root3}"
        ),
    ):
        dafzarr.open_daf(root3)


def test_mode_w_truncates_and_w_plus_keeps(tmp_path: Path) -> None:
    for rel in ("x.daf.zarr", "x.daf.zarr.zip"):
        path = tmp_path / rel
        dafzarr.open_daf(path, "w").set_scalar("a", 1).close()
        d = dafzarr.open_daf(path, "w+")
        assert d.scalars_set() == {"a"}
        d.close()
        d = dafzarr.open_daf(path, "w")
        assert d.scalars_set() == set()
        d.close()


def test_mode_r_is_read_only(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr"
    w = dafzarr.open_daf(path, "w")
    w.add_axis("cell", ["a", "b"]).set_vector("cell", "v", [1, 2])
    w.close()
    r = dafzarr.open_daf(path)
    assert r.read_only
    assert repr(r).startswith("ReadOnly ZarrDaf ") and r.name.endswith(".read_only")
    for call in (
        lambda: r.set_scalar("x", 1),
        lambda: r.add_axis("gene", ["g"]),
        lambda: r.set_vector("cell", "w", [1, 2]),
        lambda: r.delete_vector("cell", "v"),
        lambda: r.delete_axis("cell"),
        lambda: r.set_matrix("cell", "cell", "m", np.eye(2)),
    ):
        with pytest.raises(DafReadOnlyError, match="can't modify the read-only daf data"):
            call()
    with pytest.raises(DafReadOnlyError), r.empty_dense_vector("cell", "e", "int8") as v:
        v[:] = 1
    assert r.vectors_set("cell") == {"v"}


# --- Names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\0b", ".zarray", "zarr.json", ".zgroup"])
def test_invalid_names_are_rejected(bad: str) -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a"])
    # The caller's mistake: an argument error, still a DafFormatError and a ValueError.
    with pytest.raises(DafArgumentError, match="name"):
        d.set_scalar(bad, 1)
    with pytest.raises(DafArgumentError, match="name"):
        d.add_axis(bad, ["a"])
    with pytest.raises(DafArgumentError, match="name"):
        d.set_vector("cell", bad, [1])
    with pytest.raises(DafArgumentError, match="name"):
        d.set_matrix("cell", "cell", bad, [[1]])
    assert issubclass(DafArgumentError, DafFormatError | InvalidArgumentError)
    assert d.scalars_set() == set() and d.axes_set() == {"cell"}


@pytest.mark.parametrize("bad", ["", ".", "a/..", ".zarray", ".zgroup", "zarr.json"])
def test_a_name_that_cannot_be_stored_names_nothing(bad: str) -> None:
    """Looked up, a name the layout refuses is a property that does not exist: never the
    group that holds the properties (an empty name once found ``vectors/cell`` itself)."""
    d = dafzarr.memory_daf(name="looked-up").add_axis("cell", ["a"]).set_scalar("s", 1)
    d.set_vector("cell", "v", [1]).set_matrix("cell", "cell", "m", [[1]])
    assert not d.has_scalar(bad) and not d.has_axis(bad)
    assert not d.has_vector("cell", bad) and not d.has_matrix("cell", "cell", bad)
    with pytest.raises(DafMissingError, match="missing vector"):
        d.get_np_vector("cell", bad)
    with pytest.raises(DafMissingError, match="missing matrix"):
        d.get_np_matrix("cell", "cell", bad)
    with pytest.raises(DafMissingError, match="missing scalar"):
        d.get_scalar(bad)


@pytest.mark.parametrize("bad", [3, None, b"s", ("s",)])
def test_a_name_that_is_not_text_is_a_type_error(bad: object) -> None:
    d = dafzarr.memory_daf().add_axis("cell", ["a"])
    for lookup in (
        lambda: d.has_scalar(bad),  # type: ignore[arg-type]
        lambda: d.has_axis(bad),  # type: ignore[arg-type]
        lambda: d.has_vector("cell", bad),  # type: ignore[arg-type]
        lambda: d.has_matrix("cell", "cell", bad),  # type: ignore[arg-type]
        lambda: d.set_scalar(bad, 1),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentTypeError, match="must be a str"):
            lookup()


def test_reserved_vector_names() -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a", "b"])
    for name in ("name", "index"):
        with pytest.raises(DafFormatError, match=f"setting the reserved vector: {name}"):
            d.set_vector("cell", name, ["x", "y"])
    assert list(d.get_np_vector("cell", "name")) == ["a", "b"]
    assert list(d.get_np_vector("cell", "index")) == [0, 1]


def test_default_names(tmp_path: Path) -> None:
    path = tmp_path / "named.daf.zarr"
    w = dafzarr.open_daf(path, "w")
    assert w.name == str(path) or w.name.startswith(f"{path}#")
    w.set_scalar("name", "from-scalar!")
    w.close()
    assert dafzarr.open_daf(path, "r+").name == "from-scalar!"
    assert dafzarr.open_daf(path, "r+", name="given!").name == "given!"
    a, b = dafzarr.memory_daf(name="twice"), dafzarr.memory_daf(name="twice")
    assert (a.name, b.name) == ("twice", "twice#2")


# --- Properties: existence, overwrite, delete -----------------------------------------------------


def test_missing_and_existing_properties() -> None:
    d = dafzarr.memory_daf(name="props!")
    with pytest.raises(DafMissingError, match="missing scalar: s\nin the daf data: props!"):
        d.get_scalar("s")
    assert d.get_scalar("s", default=None) is None
    assert d.get_scalar("s", default=3) == 3
    with pytest.raises(DafMissingError, match="missing axis: cell"):
        d.get_np_vector("cell", "v")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    with pytest.raises(DafArgumentError, match="non-unique entries for new axis: dup"):
        d.add_axis("dup", ["a", "a"])
    with pytest.raises(DafExistsError, match="existing axis: cell"):
        d.add_axis("cell", ["q"])
    with pytest.raises(DafMissingError, match="missing vector: v\nfor the axis: cell"):
        d.get_np_vector("cell", "v")
    assert d.get_np_vector("cell", "v", default=1.5).tolist() == [1.5] * 3
    assert d.get_np_vector("cell", "v", default=None) is None
    d.set_vector("cell", "v", [1, 2, 3])
    with pytest.raises(DafExistsError, match="existing vector: v\nfor the axis: cell"):
        d.set_vector("cell", "v", [1, 2, 3])
    d.set_vector("cell", "v", sp.csr_matrix([[0, 0, 4]]), overwrite=True)
    assert d.get_np_vector("cell", "v").tolist() == [0, 0, 4]
    d.set_vector("cell", "v", np.array([7, 8, 9]), overwrite=True)  # sparse -> dense
    assert d.get_np_vector("cell", "v").tolist() == [7, 8, 9]
    with pytest.raises(ValueError, match="value length: 2\nis different from axis: cell"):
        d.set_vector("cell", "w", [1, 2])
    with pytest.raises(ValueError, match="value shape"):
        d.set_matrix("cell", "gene", "m", np.zeros((2, 3)))
    with pytest.raises(TypeError, match="unsupported element type complex128"):
        d.set_vector("cell", "c", np.zeros(3, complex))
    with pytest.raises(TypeError, match="unsupported element type float16"):
        d.set_scalar("h", np.float16(1))
    d.set_matrix("cell", "gene", "m", np.ones((3, 2)))
    with pytest.raises(DafExistsError, match="existing matrix: m\nfor the rows axis: cell"):
        d.set_matrix("cell", "gene", "m", np.ones((3, 2)))
    with pytest.raises(DafMissingError, match="missing matrix: q\nfor the rows axis: cell"):
        d.get_np_matrix("cell", "gene", "q")
    assert d.get_np_matrix("cell", "gene", "q", default=0).shape == (3, 2)
    d.delete_matrix("gene", "cell", "m")
    assert not d.has_matrix("cell", "gene", "m")
    d.delete_vector("cell", "v")
    d.delete_vector("cell", "v", must_exist=False)
    with pytest.raises(DafMissingError):
        d.delete_vector("cell", "v")
    d.set_scalar("s", 1)
    d.set_scalar("s", "now a string", overwrite=True)
    assert d.get_scalar("s") == "now a string"
    d.delete_scalar("s")
    assert not d.has_scalar("s")


def test_delete_axis_removes_its_data(tmp_path: Path) -> None:
    d = dafzarr.open_daf(tmp_path / "x.daf.zarr", "w")
    d.add_axis("cell", ["a", "b"]).add_axis("gene", ["x"])
    d.set_vector("cell", "v", [1, 2]).set_matrix("cell", "gene", "m", [[1], [2]])
    d.set_vector("gene", "w", [5])
    d.delete_axis("cell")
    assert d.axes_set() == {"gene"}
    assert not (tmp_path / "x.daf.zarr" / "matrices" / "cell").exists()
    assert not (tmp_path / "x.daf.zarr" / "matrices" / "gene" / "cell").exists()
    d.add_axis("cell", ["p", "q", "r"])
    assert d.vectors_set("cell") == set()
    assert not d.has_matrix("cell", "gene", "m")
    assert d.get_np_vector("gene", "w").tolist() == [5]


def test_pandas_views() -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a", "b"]).add_axis("gene", ["x", "y", "z"])
    d.set_vector("cell", "v", pd.Series([1.0, 2.0], index=["a", "b"]))
    with pytest.raises(ValueError, match="index does not match"):
        d.set_vector("cell", "w", pd.Series([1.0, 2.0], index=["b", "a"]))
    s = d.get_pd_vector("cell", "v")
    assert list(s.index) == ["a", "b"] and s["b"] == 2.0
    d.set_matrix("cell", "gene", "m", np.arange(6).reshape(2, 3))
    frame = d.get_pd_matrix("cell", "gene", "m")
    assert frame.loc["b", "z"] == 5
    d.set_matrix("cell", "gene", "s", sp.csc_matrix(np.eye(2, 3)))
    assert d.get_pd_matrix("cell", "gene", "s").loc["b", "y"] == 1.0
    assert d.axis_np_indices("gene", ["z", "x"]).tolist() == [2, 0]
    assert d.axis_np_indices("gene", ["", "q"], allow_empty=True, allow_missing=True).tolist() == [
        -1,
        -1,
    ]
    with pytest.raises(DafMissingError, match="missing entry: 'q'"):
        d.axis_np_indices("gene", ["q"])


def test_description(tmp_path: Path) -> None:
    d = dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", name="desc!")
    d.add_axis("cell", ["a", "b"]).set_scalar("n", 3)
    d.set_matrix("cell", "cell", "s", sp.csc_matrix(np.eye(2)))
    text = d.description()
    assert "name: desc!\ntype: ZarrDaf\n" in text
    assert f"path: {tmp_path / 'x.daf.zarr'}\nmode: w\n" in text
    assert "cell: 2 entries" in text and "cell,cell/s: float64 sparse (2 nonzeros)" in text


# --- ZIP: append-only, sub-dafs, shared stores ---------------------------------------------------

APPEND_ONLY = (
    "can't delete or overwrite properties in a zip-backed ZarrDaf; the ZIP backend is append-only"
)


def test_zip_append_only_option(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w", append_only=True)
    d.add_axis("cell", ["a", "b"]).set_scalar("s", 1).set_vector("cell", "v", [1, 2])
    d.set_matrix("cell", "cell", "m", np.eye(2))
    size = os.path.getsize(path)
    for call, what in (
        (lambda: d.delete_scalar("s"), "scalar s"),
        (lambda: d.set_scalar("s", 2, overwrite=True), "scalar s"),
        (lambda: d.delete_axis("cell"), "axis cell"),
        (lambda: d.add_axis("cell", ["q"], overwrite=True), "axis cell"),
        (lambda: d.delete_vector("cell", "v"), "vector v of the axis cell"),
        (lambda: d.set_vector("cell", "v", [3, 4], overwrite=True), "vector v of the axis cell"),
        (lambda: d.delete_matrix("cell", "cell", "m"), "matrix m"),
        (lambda: d.set_matrix("cell", "cell", "m", np.eye(2), overwrite=True), "matrix m"),
    ):
        with pytest.raises(AppendOnlyError, match=f"{APPEND_ONLY}: {what}"):
            call()
    assert os.path.getsize(path) == size
    d.set_scalar("new", 2, overwrite=True)  # overwrite of an absent property is a plain set
    d.close()
    r = dafzarr.open_daf(path)
    assert r.get_scalar("s") == 1 and r.get_np_vector("cell", "v").tolist() == [1, 2]
    assert not any(n.endswith(".zmetadata") for n in zipfile.ZipFile(path).namelist())
    check_zip_tools_accept(path)


def test_two_dafs_in_one_zip_append_independently(tmp_path: Path) -> None:
    base = f"{tmp_path}/both.dafs.zarr.zip"
    a = dafzarr.open_daf(f"{base}#/first", "w+")
    b = dafzarr.open_daf(f"{base}#/nested/second", "w+", zarr_format=3)
    for i in range(3):  # interleaved appends
        a.set_scalar(f"a{i}", i)
        b.set_scalar(f"b{i}", -i)
    a.add_axis("cell", ["x", "y"]).set_vector("cell", "v", [1.5, 2.5])
    b.add_axis("gene", ["g"])
    a.close()
    b.close()
    names = zipfile.ZipFile(tmp_path / "both.dafs.zarr.zip").namelist()
    assert all(n.startswith(("first/", "nested/second/")) for n in names)
    assert ".zgroup" not in names and "zarr.json" not in names
    ra = dafzarr.open_daf(f"{base}#/first")
    rb = dafzarr.open_daf(f"{base}#/nested/second")
    assert ra.scalars_set() == {"a0", "a1", "a2"} and ra.zarr_format == 2
    assert rb.scalars_set() == {"b0", "b1", "b2"} and rb.zarr_format == 3
    assert ra.axes_set() == {"cell"} and rb.axes_set() == {"gene"}
    assert ra.path == f"{base}#/first"
    with pytest.raises(DafFormatError, match=f"not a zarr group: {base}#/missing"):
        dafzarr.open_daf(f"{base}#/missing")
    ra.close()
    rb.close()
    with pytest.raises(AppendOnlyError, match=f"can't truncate the data set in {base}#/first"):
        dafzarr.open_daf(f"{base}#/first", "w", append_only=True)
    fresh = dafzarr.open_daf(f"{base}#/third", "w")  # mode w on a new sub-daf creates it
    fresh.set_scalar("c", 1)
    fresh.close()
    assert dafzarr.open_daf(f"{base}#/first").get_scalar("a2") == 2
    again = dafzarr.open_daf(f"{base}#/first", "w")  # truncates this sub-daf only
    assert again.scalars_set() == set() and again.axes_set() == set()
    again.close()
    assert dafzarr.open_daf(f"{base}#/third").get_scalar("c") == 1
    assert dafzarr.open_daf(f"{base}#/nested/second").scalars_set() == {"b0", "b1", "b2"}
    check_zip_tools_accept(tmp_path / "both.dafs.zarr.zip")


def test_handles_on_one_zip_share_one_store(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    w1 = dafzarr.open_daf(path, "w")
    w2 = dafzarr.open_daf(path, "r+")  # a second writable handle in-process: shared, no lock
    r = dafzarr.open_daf(path, "r")
    w1.add_axis("cell", ["a"])
    w2.set_vector("cell", "v", [3])
    assert r.get_np_vector("cell", "v").tolist() == [3]  # sees writes of the shared store
    assert w1._backend.store is w2._backend.store is r._backend.store  # type: ignore[attr-defined]
    # Another process-level writer (a separate store object) is locked out.
    with pytest.raises(ArchiveLockedError):
        MmapZipStore(path, "r+")._handle.ensure_open()
    with pytest.raises(DafzarrError, match=r"can't truncate .*: it is open in this process"):
        dafzarr.open_daf(path, "w")
    view = r.get_np_vector("cell", "v")
    for d in (w1, w2, r):
        d.close()
    # A view is alive: the store lingers, and the next open reuses it.
    again = dafzarr.open_daf(path, "r+")
    assert again.get_np_vector("cell", "v").tolist() == [3]
    again.close()
    assert view.tolist() == [3]
    del view
    gc.collect()
    dafzarr.open_daf(path, "w").close()  # truncation once nothing maps the file


_TRY_WRITER = """
import sys
from dafzarr import MmapZipStore
from dafzarr.errors import ArchiveLockedError
try:
    MmapZipStore(sys.argv[1], "r+").close()
except ArchiveLockedError:
    print("locked")
else:
    print("opened")
"""


def _other_process_opens_for_writing(path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _TRY_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return proc.stdout.strip()


@pytest.mark.parametrize("matrix", [False, True])
def test_the_writer_lock_goes_with_the_last_view_of_a_closed_zip_daf(
    tmp_path: Path, matrix: bool
) -> None:
    """Closed while a zero-copy array read from it is alive, a writable ZIP data set keeps
    the archive's lock only while that array lives: once it is collected, another process
    can open the archive for writing, and this process can open it again."""
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["g", "h"])
    d.set_vector("cell", "v", np.arange(3.0))
    d.set_matrix("cell", "gene", "m", np.ones((3, 2)))
    d.close()
    d = dafzarr.open_daf(path, "r+")
    view = d.get_np_matrix("cell", "gene", "m") if matrix else d.get_np_vector("cell", "v")
    d.set_scalar("s", 1)  # a commit before the close
    d.close()
    assert _other_process_opens_for_writing(path) == "locked"  # the view still maps it
    total = float(view.sum())
    del view
    gc.collect()
    assert _other_process_opens_for_writing(path) == "opened"
    again = dafzarr.open_daf(path, "r+")
    assert again.get_scalar("s") == 1 and float(again.get_np_vector("cell", "v").sum()) == 3.0
    assert total in (3.0, 6.0)
    again.close()


def test_a_zip_daf_reopened_while_its_views_live_takes_its_store_back(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b"]).set_vector("cell", "v", np.arange(2.0))
    view = d.get_np_vector("cell", "v")
    d.close()
    again = dafzarr.open_daf(path, "r+")  # the same mapping, the same lock
    again.set_vector("cell", "w", np.arange(2.0) + 1)
    again.close()
    assert view.tolist() == [0.0, 1.0]
    del view
    gc.collect()
    with MmapZipStore(path, "r+") as store:  # the lock went with the view
        assert "vectors/cell/w/0" in store


def test_append_only_mode_w_never_empties_a_zip_data_set(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    with dafzarr.open_daf(path, "w", append_only=True) as d:  # a new file: created
        d.set_scalar("a", 1)
    before = path.read_bytes()
    with pytest.raises(
        AppendOnlyError,
        match=r"can't truncate the data set in .*x\.daf\."
        r"zarr\.zip: mode 'w' empties it.*'w\+'",
    ):
        dafzarr.open_daf(path, "w", append_only=True)
    assert path.read_bytes() == before
    with dafzarr.open_daf(path, "w+", append_only=True) as d:
        assert d.get_scalar("a") == 1
        d.set_scalar("b", 2)
    with dafzarr.open_daf(path, "w") as d:  # without the option, "w" empties it
        assert d.scalars_set() == set()


def test_read_only_store_blocks_writable_open_while_in_use(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    dafzarr.open_daf(path, "w").set_scalar("a", 1).close()
    r = dafzarr.open_daf(path, "r")
    with pytest.raises(DafzarrError, match="open \\(read-only\\) in this process"):
        dafzarr.open_daf(path, "r+")
    r.close()
    w = dafzarr.open_daf(path, "r+")
    w.set_scalar("b", 2)
    w.close()


def test_handles_are_released_when_collected(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    dafzarr.open_daf(path, "w").set_scalar("a", 1)  # never closed explicitly
    gc.collect()
    with MmapZipStore(path, "r+") as store:  # the lock was released
        assert "scalars/a/0" in store


# --- Two-phase fills ---------------------------------------------------------------------------


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip", "m.dafs.zarr.zip#/g"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_empty_fills(tmp_path: Path, rel: str | None, zarr_format: int) -> None:
    path = None if rel is None else f"{tmp_path}/{rel}"
    d = (
        dafzarr.memory_daf(zarr_format=zarr_format)
        if path is None
        else dafzarr.open_daf(path, "w+", zarr_format=zarr_format)
    )
    d.add_axis("cell", [f"c{i}" for i in range(6)]).add_axis("gene", ["a", "b", "c"])
    with d.empty_dense_vector("cell", "dv", "float32") as v:
        assert v.shape == (6,) and v.dtype == np.float32 and v.flags.writeable
        v[:] = np.arange(6)
    with d.empty_dense_matrix("cell", "gene", "dm", "int16") as m:
        assert m.shape == (6, 3) and m.flags.f_contiguous
        m[:] = np.arange(18).reshape(6, 3)
    with d.empty_sparse_vector("cell", "sv", "uint8", 2) as (nzind, nzval):
        assert nzind.dtype == np.uint32
        nzind[:] = [2, 5]
        nzval[:] = [7, 9]
    with d.empty_sparse_matrix("cell", "gene", "sm", "float64", 3) as (colptr, rowval, nzval):
        assert colptr.tolist() == [1, 4, 4, 4]
        colptr[:] = [1, 2, 2, 4]
        rowval[:] = [6, 1, 3]
        nzval[:] = [0.5, 1.5, 2.5]
    del v, m, nzind, nzval, colptr, rowval
    r = d.read_only_view() if path is None else (d.close(), dafzarr.open_daf(path))[1]
    assert r.get_np_vector("cell", "dv").tolist() == list(range(6))
    assert np.array_equal(r.get_np_matrix("cell", "gene", "dm"), np.arange(18).reshape(6, 3))
    assert r.get_np_vector("cell", "sv").tolist() == [0, 7, 0, 0, 9, 0]
    expected = np.zeros((6, 3))
    expected[5, 0], expected[0, 2], expected[2, 2] = 0.5, 1.5, 2.5
    assert np.array_equal(r.get_np_matrix("cell", "gene", "sm").toarray(), expected)
    if path is not None and ".zip" in path:
        container = path.split("#")[0]
        r.close()
        with MmapZipStore(container, "r") as store:
            assert store.verify() == []  # the CRCs were patched after the fill
        check_zip_tools_accept(container)


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
def test_failed_fill_leaves_nothing(tmp_path: Path, rel: str | None) -> None:
    path = None if rel is None else str(tmp_path / rel)
    d = dafzarr.memory_daf() if path is None else dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"])
    with pytest.raises(RuntimeError, match="boom"), d.empty_dense_vector("cell", "v", "int64"):
        raise RuntimeError("boom")
    with (
        pytest.raises(ValueError, match="nzind must be increasing 1-based"),
        d.empty_sparse_vector("cell", "s", "float32", 2) as (nzind, _nzval),
    ):
        nzind[:] = [3, 1]
    with (
        pytest.raises(ValueError, match="colptr must be a 1-based CSC"),
        d.empty_sparse_matrix("cell", "cell", "m", "float32", 1) as (colptr, _r, _v),
    ):
        colptr[:] = [1, 1, 1, 1]
    assert d.vectors_set("cell") == set() and d.matrices_set("cell", "cell") == set()
    with d.empty_dense_vector("cell", "v", "int64") as v:  # the name is free again
        v[:] = 4
    assert d.get_np_vector("cell", "v").tolist() == [4, 4, 4]
    if path is not None:
        d.close()
        assert dafzarr.open_daf(path).vectors_set("cell") == {"v"}
        if path.endswith(".zip"):
            check_zip_tools_accept(path)


def _open_failing_fill(d: dafzarr.ZarrDaf, kind: str) -> Any:
    """An overwriting fill of the property ``kind`` names (see ``_snapshot_with_old``)."""
    if kind == "dense vector":
        return d.empty_dense_vector("cell", "v", "float32", overwrite=True)
    if kind == "sparse vector":
        return d.empty_sparse_vector("cell", "v", "float32", 2, overwrite=True)
    if kind == "dense matrix":
        return d.empty_dense_matrix("cell", "gene", "m", "float32", overwrite=True)
    return d.empty_sparse_matrix("cell", "gene", "m", "float32", 2, overwrite=True)


def _snapshot(d: dafzarr.ZarrDaf) -> dict[str, bytes]:
    """Every key of the data set (a directory: every file under it) and its bytes."""
    b = d._backend
    return {k: bytes(memoryview(b.get(k)).cast("B")) for k in sorted(b.keys_under(""))}


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip", "m.dafs.zarr.zip#/g"])
@pytest.mark.parametrize(
    ("kind", "fails_by"),
    [
        ("dense vector", "raising"),
        ("sparse vector", "raising"),
        ("sparse vector", "bad indices"),
        ("dense matrix", "raising"),
        ("sparse matrix", "raising"),
        ("sparse matrix", "bad indices"),
    ],
)
def test_failed_overwriting_fill_keeps_the_old_property(
    tmp_path: Path, rel: str | None, kind: str, fails_by: str
) -> None:
    """On every backend, as on a ZIP: the old property stays, readable and unchanged, and
    the failed fill leaves no file, key or property behind."""
    path = None if rel is None else f"{tmp_path}/{rel}"
    d = dafzarr.memory_daf() if path is None else dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    d.set_vector("cell", "v", np.array([1.5, 2.5, 3.5]))
    d.set_matrix("cell", "gene", "m", sp.csc_matrix(np.array([[1.0, 0], [0, 2], [3, 0]])))
    before = _snapshot(d)
    with (
        pytest.raises(RuntimeError if fails_by == "raising" else ValueError),
        _open_failing_fill(d, kind) as parts,
    ):
        for part in parts if isinstance(parts, tuple) else (parts,):
            part[...] = 0  # written into the reservation; 0 is no valid 1-based index
        if fails_by == "raising":
            raise RuntimeError("boom")
    assert _snapshot(d) == before
    r = d if path is None else (d.close(), dafzarr.open_daf(path))[1]
    assert r.get_np_vector("cell", "v").tolist() == [1.5, 2.5, 3.5]
    assert r.get_np_matrix("cell", "gene", "m").toarray().tolist() == [[1, 0], [0, 2], [3, 0]]
    assert r.get_np_matrix("gene", "cell", "m").toarray().tolist() == [[1, 0, 3], [0, 2, 0]]
    r.close()


def test_fill_rejects_strings() -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a"])
    with (
        pytest.raises(TypeError, match="numeric or bool"),
        d.empty_dense_vector("cell", "v", "str"),
    ):
        pass


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
@pytest.mark.parametrize("nzind", [[2, 2], [3, 1], [2, 1], [1, 3, 3]])
def test_sparse_vector_fill_needs_strictly_increasing_indices(
    tmp_path: Path, rel: str | None, nzind: list[int]
) -> None:
    # every index is in range: only the order is wrong (a repeated index would make two
    # stored values claim one position)
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(str(tmp_path / rel), "w")
    d.add_axis("cell", ["a", "b", "c"])
    with (
        pytest.raises(ValueError, match=r"vectors/cell/s/nzind must be increasing"),
        d.empty_sparse_vector("cell", "s", "float32", len(nzind)) as (ind, val),
    ):
        ind[:] = nzind
        val[:] = np.arange(len(nzind))
    assert d.vectors_set("cell") == set()
    with d.empty_sparse_vector("cell", "s", "float32", 2) as (ind, val):
        ind[:] = [1, 3]
        val[:] = [5, 6]
    assert d.get_np_vector("cell", "s").tolist() == [5, 0, 6]
    d.close()


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
@pytest.mark.parametrize("kind", ["coo_array", "csr_array", "dok_array"])
def test_one_dimensional_sparse_arrays_are_sparse_vectors(
    tmp_path: Path, rel: str | None, kind: str
) -> None:
    path = None if rel is None else str(tmp_path / rel)
    d = dafzarr.memory_daf() if path is None else dafzarr.open_daf(path, "w")
    d.add_axis("cell", [f"c{i}" for i in range(6)])
    dense = np.array([0, 2.5, 0, 0, -1.0, 0])
    value = getattr(sp, kind)(dense)
    assert value.shape == (6,)
    d.set_vector("cell", "v", value)
    # duplicates of a COO array add up, in any input order
    dup = sp.coo_array((np.array([1, 2, 4], np.int16), (np.array([5, 0, 5]),)), shape=(6,))
    d.set_vector("cell", "d", dup, indtype="uint8")
    d.set_vector("cell", "b", sp.coo_array(dense != 0))  # all-true Bool: no nzval
    d.set_vector("cell", "e", sp.coo_array((6,), dtype=np.float32))  # no nonzeros
    for wrong in (sp.coo_array(np.zeros(5)), sp.coo_array(np.zeros((2, 6)))):
        with pytest.raises(ValueError, match=r"(?s)sparse value shape: \(.*axis: cell"):
            d.set_vector("cell", "w", wrong)
    r = d if path is None else (d.close(), dafzarr.open_daf(path))[1]
    assert r.get_np_vector("cell", "v").tolist() == dense.tolist()
    assert r.get_np_vector("cell", "d").tolist() == [2, 0, 0, 0, 0, 5]
    assert r.get_np_vector("cell", "d").dtype == np.int16
    assert r.get_np_vector("cell", "b").tolist() == (dense != 0).tolist()
    assert r.get_np_vector("cell", "e").tolist() == [0.0] * 6
    assert r._read_array("vectors/cell/v/nzind").tolist() == [2, 5]  # stored sparse, 1-based
    assert r._read_array("vectors/cell/d/nzind").dtype == np.uint8
    assert r._node_kind("vectors/cell/b/nzval") is None
    assert r.vectors_set("cell") == {"v", "d", "b", "e"}
    r.close()


@pytest.mark.parametrize("rel", [None, "x.daf.zarr"])
def test_corrupt_sparse_indices_raise(tmp_path: Path, rel: str | None) -> None:
    """Out-of-range stored indices give a clear error, never a crash in scipy."""
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(tmp_path / rel, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    d.set_matrix("cell", "gene", "m", sp.csc_matrix(np.eye(3, 2)), relayout=False)
    d.set_vector("cell", "v", sp.csr_matrix(np.array([[0, 1.0, 0]])))
    items = d._array_items(
        "matrices/cell/gene/m/rowval", np.array([1, 4], np.int64), np.dtype(np.int64)
    )
    d._backend.delete_tree("matrices/cell/gene/m/rowval")
    d._write(items)
    with pytest.raises(ValueError, match=r"rowval: stored 1-based index 4 is out of range 1..3"):
        d.get_np_matrix("cell", "gene", "m")
    items = d._array_items("vectors/cell/v/nzind", np.array([0], np.int64), np.dtype(np.int64))
    d._backend.delete_tree("vectors/cell/v/nzind")
    d._write(items)
    with pytest.raises(ValueError, match=r"nzind: stored index out of range 1..3 \(found 0"):
        d.get_np_vector("cell", "v")
    for stored, message in (
        ([2, 2], "index 2 at position 2 follows 2"),
        ([1, 3, 2], "index 2 at position 3 follows 3"),
    ):
        d._backend.delete_tree("vectors/cell/v/nzind")
        d._write(
            d._array_items("vectors/cell/v/nzind", np.array(stored, np.int64), np.dtype(np.int64))
        )
        d._backend.delete_tree("vectors/cell/v/nzval")
        d._write(
            d._array_items(
                "vectors/cell/v/nzval", np.arange(len(stored), dtype=float), np.dtype(np.float64)
            )
        )
        with pytest.raises(
            DafFormatError,
            match=rf"v/nzind is not strictly increasing: stored "
            rf"{message}",
        ):
            d.get_np_vector("cell", "v")


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
def test_relayout_matrix_and_sparse_classes(tmp_path: Path, rel: str | None) -> None:
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(tmp_path / rel, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    dense = np.arange(6, dtype="int32").reshape(3, 2)
    sparse = sp.csr_matrix(np.array([[0, 1], [2, 0], [0, 0]], "float32"))
    d.set_matrix("cell", "gene", "d", dense, relayout=False)
    d.set_matrix("cell", "gene", "s", sparse, relayout=False)
    assert not d.has_matrix("gene", "cell", "s", relayout=False)
    got = d.get_np_matrix("gene", "cell", "s")  # transposed on read (a copy)
    assert isinstance(got, sp.csc_matrix) and np.array_equal(got.toarray(), sparse.T.toarray())
    d.relayout_matrix("cell", "gene", "d").relayout_matrix("cell", "gene", "s")
    assert d.has_matrix("gene", "cell", "d", relayout=False)
    back = d.get_np_matrix("gene", "cell", "d")
    assert back.flags.f_contiguous and not back.flags.owndata and np.array_equal(back, dense.T)
    arr = d.get_np_matrix("gene", "cell", "s", sparse_class="csc_array")
    assert isinstance(arr, sp.csc_array) and np.array_equal(arr.toarray(), sparse.T.toarray())
    with pytest.raises(DafExistsError, match="existing matrix: d\nfor the rows axis: gene"):
        d.relayout_matrix("cell", "gene", "d")
    with pytest.raises(DafFormatError, match="can't relayout square matrix"):
        d.relayout_matrix("cell", "cell", "d")
    with pytest.raises(DafMissingError, match="missing matrix: q"):
        d.relayout_matrix("cell", "gene", "q")
    view = d.read_only_view()
    view.close()  # a view does not own the store: the data set stays usable
    assert d.get_np_matrix("cell", "gene", "d")[2, 1] == 5
    d.close()


_OLD = np.arange(1.0, 7.0).reshape(3, 2)  # cell x gene
_NEW = np.array([[0.0, 5], [6, 0], [0, 7]])


def _fill_new_sparse(d: dafzarr.ZarrDaf) -> None:
    with d.empty_sparse_matrix("cell", "gene", "m", "float64", 3, overwrite=True) as parts:
        colptr, rowval, nzval = parts
        colptr[:], rowval[:], nzval[:] = [1, 2, 4], [2, 1, 3], [6, 5, 7]


def _fill_new_dense(d: dafzarr.ZarrDaf) -> None:
    with d.empty_dense_matrix("cell", "gene", "m", "float64", overwrite=True) as m:
        m[:] = _NEW


# (old layouts stored, how the old value is stored, the overwrite)
_OVERWRITES: dict[str, tuple[str, Any, Any]] = {
    "set one layout over both": (
        "both",
        _OLD,
        lambda d: d.set_matrix("cell", "gene", "m", _NEW, overwrite=True, relayout=False),
    ),
    "set the flipped layout over both": (
        "both",
        sp.csr_matrix(_OLD),
        lambda d: d.set_matrix("gene", "cell", "m", _NEW.T, overwrite=True, relayout=False),
    ),
    "set one layout over the flipped one": (
        "flipped",
        _OLD,
        lambda d: d.set_matrix(
            "cell", "gene", "m", sp.csc_matrix(_NEW), overwrite=True, relayout=False
        ),
    ),
    "set both over the flipped one": (
        "flipped",
        _OLD,
        lambda d: d.set_matrix("cell", "gene", "m", _NEW, overwrite=True),
    ),
    "set both over one": (
        "one",
        _OLD,
        lambda d: d.set_matrix("cell", "gene", "m", _NEW, overwrite=True),
    ),
    "dense fill over both": ("both", sp.csc_matrix(_OLD), _fill_new_dense),
    "dense fill over the flipped one": ("flipped", _OLD, _fill_new_dense),
    "sparse fill over both": ("both", _OLD, _fill_new_sparse),
}


def _assert_every_layout_reads(d: dafzarr.ZarrDaf, want: np.ndarray[Any, Any]) -> None:
    """Each stored layout of matrix ``m``, and each orientation read, is ``want``."""
    for rows, cols, value in (("cell", "gene", want), ("gene", "cell", want.T)):
        for relayout in (False, True):
            got = d.get_np_matrix(rows, cols, "m", relayout=relayout, default=None)
            if got is not None:
                dense = got.toarray() if sp.issparse(got) else np.asarray(got)
                assert dense.tolist() == value.tolist(), (rows, cols, relayout)
            else:
                assert not relayout


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip", "m.dafs.zarr.zip#/g"])
@pytest.mark.parametrize("case", sorted(_OVERWRITES))
def test_overwriting_a_matrix_leaves_no_stale_layout(
    tmp_path: Path, rel: str | None, case: str
) -> None:
    """No layout of an overwritten matrix keeps the old values, whichever layouts the old
    and the new value are stored in; a delete then drops every layout."""
    path = None if rel is None else f"{tmp_path}/{rel}"
    d = dafzarr.memory_daf() if path is None else dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    layouts, old, overwrite = _OVERWRITES[case]
    if layouts == "flipped":
        d.set_matrix("gene", "cell", "m", old.T, relayout=False)
    else:
        d.set_matrix("cell", "gene", "m", old, relayout=layouts == "both")
    overwrite(d)
    _assert_every_layout_reads(d, _NEW)
    r = d if path is None else (d.close(), dafzarr.open_daf(path, "r+"))[1]
    _assert_every_layout_reads(r, _NEW)
    r.delete_matrix("gene", "cell", "m")
    assert not r.has_matrix("cell", "gene", "m") and not r.has_matrix("gene", "cell", "m")
    r.close()


def test_damaged_stores_give_clear_errors(tmp_path: Path) -> None:
    root = tmp_path / "x.daf.zarr"
    d = dafzarr.open_daf(root, "w")
    d.add_axis("cell", ["a", "b", "c"]).set_vector("cell", "v", np.arange(3.0))
    d.set_vector("cell", "s", np.array(["x", "y", "z"]))
    d.set_scalar("bad_json", 1)
    d.close()
    (root / "vectors/cell/v/0").write_bytes(b"\0" * 7)  # truncated chunk
    (root / "vectors/cell/s/0").write_bytes(b"\x03\0\0\0\xff\xff\xff\x7f")  # bad vlen
    (root / "scalars/bad_json/.zarray").write_text("{not json")
    r = dafzarr.open_daf(root)
    with pytest.raises(ValueError, match=r"vectors/cell/v.*holds 7 bytes, expected 24"):
        r.get_np_vector("cell", "v")
    with pytest.raises(ValueError, match="vectors/cell/s"):
        r.get_np_vector("cell", "s")
    with pytest.raises(ValueError, match="invalid Zarr metadata at 'scalars/bad_json'"):
        r.get_scalar("bad_json")
    assert list(r.axis_np_entries("cell")) == ["a", "b", "c"]  # the rest still reads


def test_scalars_broadcast() -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a", "b"]).add_axis("gene", ["x", "y", "z"])
    d.set_matrix("cell", "gene", "ones", np.float32(1))
    d.set_matrix("cell", "gene", "seven", 7)
    d.set_matrix("cell", "gene", "text", "t")
    d.set_vector("cell", "flag", True)
    d.set_vector("cell", "half", np.array(0.5))
    assert d.get_np_matrix("cell", "gene", "ones").dtype == np.float32
    assert d.get_np_matrix("gene", "cell", "seven").tolist() == [[7, 7]] * 3
    assert d.get_np_matrix("cell", "gene", "text")[1, 2] == "t"
    assert d.get_np_vector("cell", "flag").tolist() == [True, True]
    assert d.get_np_vector("cell", "half").tolist() == [0.5, 0.5]


_UNCLOSED_CHILD = """
import gc, sys
import numpy as np
import dafzarr
tmp = sys.argv[1]
gc.disable()
a = dafzarr.open_daf(tmp + "/a.daf.zarr.zip", "w")
a.add_axis("cell", ["x", "y"])
a.cycle = a  # never closed, and only the garbage collector frees it
del a
b = dafzarr.open_daf(tmp + "/b.daf.zarr.zip", "w")
b.add_axis("cell", ["x", "y"]).set_vector("cell", "v", np.arange(2.0))
view = b.get_np_vector("cell", "v")  # alive: closing b collects garbage first
b.close()
print("closed", view.tolist())
"""


def test_closing_while_an_unclosed_zip_daf_is_collected_does_not_hang(tmp_path: Path) -> None:
    # the collected handle releases its own store while b's release is under way
    proc = subprocess.run(
        [sys.executable, "-c", _UNCLOSED_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "closed [0.0, 1.0]"


@pytest.mark.parametrize(
    "kind", ["list", "object array", "pandas index", "unicode array", "pandas strings"]
)
def test_strings_from_any_container_are_stored_as_given(kind: str) -> None:
    names = ["a", "bé", "", "c d"]
    value: Any = {
        "list": names,
        "object array": np.array(names, dtype=object),
        "pandas index": pd.Index(names),
        "unicode array": np.array(names),
        "pandas strings": pd.array(names, dtype="string"),
    }[kind]
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["x", "y", "z", "w"])
    d.set_vector("cell", "label", value)
    got = d.get_np_vector("cell", "label")
    assert got.tolist() == names and all(type(v) is str for v in got)
    if isinstance(value, np.ndarray) and value.dtype == object:
        value[0] = "changed"  # the stored vector does not share the caller's array
        assert d.get_np_vector("cell", "label")[0] == "a"


@pytest.mark.parametrize(
    "bad",
    [
        [1, "a"],
        np.array(["a", 2.5], dtype=object),
        np.array(["a", None], dtype=object),
        np.array([b"a", b"b"]),
    ],
)
def test_non_strings_among_strings_are_refused_by_type(bad: Any) -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["x", "y"])
    with pytest.raises(
        InvalidArgumentTypeError,
        match=r"entries of the axis gene\n.*expected "
        r"strings, got",
    ):
        d.add_axis("gene", bad)
    if not isinstance(bad, list):  # a list of numbers and strings is a unicode array
        with pytest.raises(
            InvalidArgumentTypeError, match="vector 'v' of the axis cell: expected strings, got"
        ):
            d.set_vector("cell", "v", bad)
        with pytest.raises(InvalidArgumentTypeError, match="matrix 'm': expected strings"):
            d.set_matrix("cell", "cell", "m", np.stack([bad, bad]))
    assert d.axes_set() == {"cell"} and d.vectors_set("cell") == set()


def test_bytes_scalars_are_refused_by_name() -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["x", "y"])
    with pytest.raises(
        InvalidArgumentTypeError,
        match="scalar 's': unsupported scalar value of type bytes_; Daf stores no bytes",
    ):
        d.set_scalar("s", np.bytes_(b"x"))
    for broadcast in (np.bytes_(b"x"), np.array(b"x")):
        with pytest.raises(InvalidArgumentTypeError, match="vector 'v': unsupported scalar"):
            d.set_vector("cell", "v", broadcast)
    assert d.scalars_set() == set() and d.vectors_set("cell") == set()


@pytest.mark.parametrize("zero", [0, 0.0, False, np.float32(0), np.uint8(0)])
def test_a_missing_matrix_with_a_zero_default_is_sparse(tmp_path: Path, zero: Any) -> None:
    # As DataAxesFormats.jl's get_matrix: a default equal to 0 gives spzeros of its type.
    d = dafzarr.open_daf(tmp_path / "z.daf.zarr", "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    dtype = np.asarray(zero).dtype
    chain = dafzarr.chain_reader([d.read_only_view()], name="chained")
    for reader in (d, d.read_only_view(), chain):
        m = reader.get_np_matrix("cell", "gene", "q", default=zero)
        assert isinstance(m, sp.csc_matrix) and m.nnz == 0, reader
        assert m.shape == (3, 2) and m.dtype == dtype
        array = reader.get_np_matrix("cell", "gene", "q", default=zero, sparse_class="csc_array")
        assert isinstance(array, sp.csc_array) and array.dtype == dtype
        if dtype.kind == "b":  # pandas warns of a bool sparse frame's fill value
            continue
        frame = reader.get_pd_matrix("cell", "gene", "q", default=zero)
        assert isinstance(frame.dtypes.iloc[0], pd.SparseDtype) and frame.shape == (3, 2)
    dense = d.get_np_matrix("cell", "gene", "q", default=1.5)
    assert isinstance(dense, np.ndarray) and dense.tolist() == [[1.5, 1.5]] * 3
    assert d.get_np_matrix("cell", "gene", "q", default="0").dtype.kind in "UO"  # not a number
