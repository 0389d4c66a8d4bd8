"""Deletes and overwrites of ZarrDaf properties on ZIP archives behave as on directories.

Each sequence of operations runs on a directory and on a ZIP (the archive root and a
``#/group`` sub-daf next to another one), v2 and v3: every step gives the same outcome
(the same error, with the same message), and the data sets read back equal after
reopening. The archives stay valid for zipfile, ``unzip -t`` and 7-Zip, read in
zarr-python, and hold exactly the keys of the directory (the v3 one byte for byte, so the
DataAxesFormats.jl 0.3 layout is kept).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.storage import ZipStore

import dafzarr
from dafzarr import MmapZipStore
from tests.helpers.common import check_archive

from .test_daf_format import check_example, fill_example

Op = Callable[[dafzarr.ZarrDaf], Any]


def _fill_dense_vector(axis: str, name: str, dtype: str, value: float) -> Op:
    def op(d: dafzarr.ZarrDaf) -> None:
        with d.empty_dense_vector(axis, name, dtype, overwrite=True) as v:
            v[:] = value

    return op


def _fill_sparse_vector(axis: str, name: str) -> Op:
    def op(d: dafzarr.ZarrDaf) -> None:
        with d.empty_sparse_vector(axis, name, "float32", 2, overwrite=True) as (ind, val):
            ind[:] = [1, 3]
            val[:] = [0.5, 2.5]

    return op


def _fill_dense_matrix(rows: str, cols: str, name: str, *, overwrite: bool = True) -> Op:
    def op(d: dafzarr.ZarrDaf) -> None:
        with d.empty_dense_matrix(rows, cols, name, "int16", overwrite=overwrite) as m:
            m[:] = np.arange(m.size).reshape(m.shape)

    return op


def _fill_sparse_matrix(rows: str, cols: str, name: str) -> Op:
    def op(d: dafzarr.ZarrDaf) -> None:
        with d.empty_sparse_matrix(rows, cols, name, "float64", 2, overwrite=True) as parts:
            colptr, rowval, nzval = parts
            colptr[:] = [1, 2] + [3] * (colptr.size - 2)
            rowval[:] = [1, 2]
            nzval[:] = [4.0, 5.0]

    return op


def _dense(n: int, seed: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).normal(size=n).astype("float32")


SEQUENCES: dict[str, list[Op]] = {
    "scalar": [
        lambda d: d.set_scalar("s", 1),
        lambda d: d.set_scalar("s", 2),  # exists
        lambda d: d.set_scalar("s", "text", overwrite=True),
        lambda d: d.set_scalar("t", 1.5),
        lambda d: d.delete_scalar("t"),
        lambda d: d.delete_scalar("t"),  # missing
        lambda d: d.delete_scalar("t", must_exist=False),
        lambda d: d.set_scalar("t", np.int8(3), overwrite=True),
        lambda d: d.set_scalar("s", np.uint64(1 << 63), overwrite=True),
    ],
    "axis": [
        lambda d: d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"]),
        lambda d: d.set_vector("cell", "v", [1, 2, 3]).set_vector("gene", "w", ["p", "q"]),
        lambda d: d.set_matrix("cell", "gene", "m", np.arange(6.0).reshape(3, 2)),
        lambda d: d.set_matrix("cell", "cell", "sq", sp.eye(3, format="csc")),
        lambda d: d.set_matrix("gene", "gene", "gg", np.eye(2, dtype="int8")),
        lambda d: d.add_axis("cell", ["z"]),  # exists
        lambda d: d.delete_axis("cell"),  # with v, m (both layouts) and sq
        lambda d: d.delete_axis("cell"),  # missing
        lambda d: d.delete_axis("cell", must_exist=False),
        lambda d: d.vectors_set("cell"),  # missing axis
        lambda d: d.add_axis("cell", ["p", "q"]),
        lambda d: d.set_vector("cell", "v", [True, False]),
        lambda d: d.set_matrix("cell", "gene", "m2", np.ones((2, 2), "uint16")),
        lambda d: d.add_axis("gene", ["only"], overwrite=True),  # drops w, gg, m2
        lambda d: d.set_matrix("gene", "cell", "back", np.array([[1, 2]], "int32")),
    ],
    "vector": [
        lambda d: d.add_axis("cell", [f"c{i}" for i in range(5)]),
        lambda d: d.set_vector("cell", "v", _dense(5, 0)),
        lambda d: d.set_vector("cell", "v", _dense(5, 1)),  # exists
        lambda d: d.set_vector(
            "cell", "v", sp.csr_matrix(np.array([[0, 2, 0, 0, 7.0]])), overwrite=True
        ),
        lambda d: d.set_vector("cell", "v", ["a", "b", "", "d", "é"], overwrite=True),
        lambda d: d.set_vector("cell", "v", 7, overwrite=True),
        lambda d: d.set_vector("cell", "b", sp.csr_matrix(np.array([[0, 1, 0, 1, 0]], bool))),
        lambda d: d.set_vector("cell", "b", np.zeros(5, "float64"), overwrite=True),
        lambda d: d.delete_vector("cell", "v"),
        lambda d: d.delete_vector("cell", "v"),  # missing
        lambda d: d.delete_vector("cell", "name"),  # the reserved vectors are no properties
        lambda d: d.set_vector("cell", "index", [1, 2, 3, 4, 5], overwrite=True),  # reserved
        _fill_dense_vector("cell", "v", "int32", 3),  # overwrite of an absent vector
        _fill_dense_vector("cell", "v", "float64", 0.25),
        _fill_sparse_vector("cell", "v"),
        lambda d: d.empty_dense_vector("cell", "v", "int8").__enter__(),  # exists
        _fill_dense_vector("cell", "b", "uint8", 9),
    ],
    "matrix": [
        lambda d: d.add_axis("cell", [f"c{i}" for i in range(4)]).add_axis("gene", ["a", "b"]),
        lambda d: d.set_matrix("cell", "gene", "m", np.arange(8.0).reshape(4, 2)),
        lambda d: d.set_matrix("cell", "gene", "m", np.zeros((4, 2))),  # exists
        lambda d: d.set_matrix("gene", "cell", "m", np.zeros((2, 4))),  # exists (relayout)
        lambda d: d.set_matrix(
            "cell",
            "gene",
            "m",
            sp.random(4, 2, density=0.5, format="csr", random_state=1),
            overwrite=True,
        ),
        lambda d: d.set_matrix(
            "cell", "gene", "m", np.ones((4, 2), "int64"), overwrite=True, relayout=False
        ),
        lambda d: d.relayout_matrix("cell", "gene", "m"),  # the overwrite dropped gene x cell
        lambda d: d.relayout_matrix("cell", "gene", "m"),  # exists
        lambda d: d.relayout_matrix("cell", "gene", "m", overwrite=True),
        lambda d: d.delete_matrix("cell", "gene", "m", relayout=False),
        lambda d: d.delete_matrix("cell", "gene", "m", relayout=False),  # missing
        lambda d: d.delete_matrix("gene", "cell", "m"),
        lambda d: d.delete_matrix("gene", "cell", "m", must_exist=False),
        _fill_dense_matrix("cell", "gene", "m"),
        _fill_dense_matrix("cell", "gene", "m", overwrite=False),  # exists
        _fill_sparse_matrix("cell", "gene", "m"),
        lambda d: d.set_matrix("cell", "cell", "sq", np.eye(4, dtype=bool)),
        lambda d: d.set_matrix(
            "cell", "cell", "sq", sp.eye(4, format="csc", dtype=bool), overwrite=True
        ),
        lambda d: d.relayout_matrix("cell", "cell", "sq"),  # square
        lambda d: d.set_matrix("gene", "gene", "sq", np.eye(2), overwrite=True),
    ],
}

# (id, relative path, zarr_format); the #/group ZIP has a sibling sub-daf.
TARGETS = [
    ("zip-v2", "x.daf.zarr.zip", 2),
    ("zip-v3", "x.daf.zarr.zip", 3),
    ("group-v2", "x.dafs.zarr.zip#/a/b", 2),
    ("group-v3", "x.dafs.zarr.zip#/g", 3),
]


def _outcome(op: Op, d: dafzarr.ZarrDaf) -> str:
    try:
        op(d)
    except (dafzarr.DafzarrError, ValueError, TypeError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def dump(d: dafzarr.ZarrDaf) -> dict[str, Any]:
    """Everything a data set holds, with element types and how each property is stored."""
    out: dict[str, Any] = {}
    for s in sorted(d.scalars_set()):
        v = d.get_scalar(s)
        out[f"scalar {s}"] = (type(v).__name__, str(v))
    axes = sorted(d.axes_set())
    stored = d.summary()
    for a in axes:
        out[f"axis {a}"] = list(d.axis_np_entries(a))
        for v in sorted(d.vectors_set(a)):
            arr = d.get_np_vector(a, v)
            out[f"vector {a}/{v}"] = (
                stored["vectors"][f"{a}/{v}"],
                str(arr.dtype),
                [str(x) for x in arr],
            )
        for c in axes:
            for m in sorted(d.matrices_set(a, c, relayout=False)):
                got = d.get_np_matrix(a, c, m, relayout=False)
                dense = got.toarray() if sp.issparse(got) else np.asarray(got)
                out[f"matrix {a},{c}/{m}"] = (
                    stored["matrices"][f"{a},{c}/{m}"],
                    str(dense.dtype),
                    dense.tolist(),
                )
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _check_consolidated(root: Path, zarr_format: int) -> None:
    """The directory's consolidated metadata lists exactly the documents on disk."""
    files = _files(root)
    if zarr_format == 2:
        meta = json.loads(files.pop(".zmetadata"))["metadata"]
        assert meta == {
            k: json.loads(v)
            for k, v in files.items()
            if k.rsplit("/", 1)[-1] in (".zgroup", ".zattrs", ".zarray")
        }
    else:
        meta = json.loads(files["zarr.json"])["consolidated_metadata"]["metadata"]
        assert meta == {
            k[: -len("/zarr.json")]: json.loads(v)
            for k, v in files.items()
            if k.endswith("/zarr.json")
        }
    g: Any = zarr.open_group(str(root), mode="r")  # zarr-python's default consolidated path
    assert g.metadata.consolidated_metadata is not None


def _zip_entries(container: Path, group: str) -> dict[str, bytes]:
    """The entries of the sub-daf ``group`` (all, for ""), relative to it."""
    head = f"{group}/" if group else ""
    with MmapZipStore(container) as store:
        return {k[len(head) :]: bytes(store[k]) for k in store if k.startswith(head)}


def _zarr_python_reads(container: Path, group: str, d: dafzarr.ZarrDaf) -> None:
    """zarr-python's ZipStore opens the archive and reads every dense property as dafzarr
    does (and the index arrays of the sparse ones)."""
    g: Any = zarr.open_group(store=ZipStore(container, mode="r"), mode="r", path=group or None)
    for s in d.scalars_set():
        assert str(g[f"scalars/{s}"][:][0]) == str(d.get_scalar(s))
    for axis in d.axes_set():
        assert list(g[f"axes/{axis}"][:]) == list(d.axis_np_entries(axis))
        for v in d.vectors_set(axis):
            path = f"vectors/{axis}/{v}"
            if d._node_kind(path) == "array":
                want = [str(x) for x in d.get_np_vector(axis, v)]
                assert [str(x) for x in g[path][:]] == want, path
            else:
                assert g[f"{path}/nzind"].shape[0] == d.get_np_vector(axis, v).astype(bool).sum()
        for other in d.axes_set():
            for m in d.matrices_set(axis, other, relayout=False):
                path = f"matrices/{axis}/{other}/{m}"
                got = d.get_np_matrix(axis, other, m, relayout=False)
                if d._node_kind(path) == "array":
                    assert np.array_equal(g[path][:].T, got), path
                else:
                    assert g[f"{path}/colptr"][:].tolist() == (got.indptr + 1).tolist(), path


@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
@pytest.mark.parametrize(("target", "rel", "zarr_format"), TARGETS, ids=[t[0] for t in TARGETS])
def test_zip_sequence_equals_directory(
    tmp_path: Path, sequence: str, target: str, rel: str, zarr_format: int
) -> None:
    root = tmp_path / "x.daf.zarr"
    zpath = f"{tmp_path}/{rel}"
    container = Path(zpath.split("#/")[0])
    group = zpath.split("#/")[1] if "#/" in zpath else ""
    if group:  # a sibling sub-daf that must come through untouched
        other = dafzarr.open_daf(f"{container}#/other", "w", zarr_format=zarr_format)
        fill_example(other).close()
    d = dafzarr.open_daf(root, "w", name="d!", zarr_format=zarr_format)
    z = dafzarr.open_daf(zpath, "w", name="d!", zarr_format=zarr_format)
    for step, op in enumerate(SEQUENCES[sequence]):
        want = _outcome(op, d)
        assert _outcome(op, z) == want, f"step {step}"
        assert dump(z) == dump(d), f"step {step}"
    d.close()
    z.close()
    rd = dafzarr.open_daf(root, name="d!")
    rz = dafzarr.open_daf(zpath, name="d!")
    assert dump(rz) == dump(rd)
    _check_consolidated(root, zarr_format)
    check_archive(container)
    # Exactly the directory's keys (and bytes), no consolidated metadata in the ZIP.
    dir_files = _files(root)
    dir_files.pop(".zmetadata", None)
    dir_root = dir_files.pop("zarr.json", None)
    entries = _zip_entries(container, group)
    zip_root = entries.pop("zarr.json", None)
    assert entries == dir_files
    if zarr_format == 3:
        assert dir_root is not None and zip_root is not None
        stripped = json.loads(dir_root)
        del stripped["consolidated_metadata"]
        assert (
            json.loads(zip_root)
            == stripped
            == {"zarr_format": 3, "node_type": "group", "attributes": {"daf": [1, 0]}}
        )
    _zarr_python_reads(container, group, rz)
    if group:
        check_example(dafzarr.open_daf(f"{container}#/other"))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_overwrite_keeps_views_of_the_old_value(tmp_path: Path, zarr_format: int) -> None:
    d = dafzarr.open_daf(tmp_path / "x.daf.zarr.zip", "w", zarr_format=zarr_format)
    d.add_axis("cell", [f"c{i}" for i in range(1000)])
    d.set_vector("cell", "v", np.arange(1000.0))
    old = d.get_np_vector("cell", "v")
    d.set_vector("cell", "v", np.ones(1000), overwrite=True)
    assert old.tolist() == list(range(1000))  # the old bytes stay in the file
    d.delete_vector("cell", "v")
    assert old.tolist() == list(range(1000))
    assert not d.has_vector("cell", "v")
    del old
    d.close()


@pytest.mark.parametrize("rel", ["x.daf.zarr.zip", "x.dafs.zarr.zip#/g"])
def test_failed_overwriting_fill_keeps_the_old_value(tmp_path: Path, rel: str) -> None:
    path = f"{tmp_path}/{rel}"
    d = dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"]).set_vector("cell", "v", [1, 2, 3])
    with (
        pytest.raises(ValueError, match="nzind must be increasing"),
        d.empty_sparse_vector("cell", "v", "int64", 2, overwrite=True) as (ind, val),
    ):
        ind[:] = [3, 1]
        val[:] = 5
    assert d.get_np_vector("cell", "v").tolist() == [1, 2, 3]
    d.close()
    assert dafzarr.open_daf(path).get_np_vector("cell", "v").tolist() == [1, 2, 3]
    check_archive(Path(path.split("#/")[0]))


def test_v3_zip_overwritten_into_the_julia_fixture(tmp_path: Path, fixtures_dir: Path) -> None:
    """A v3 ZIP whose every property was deleted or overwritten into the content of the
    DataAxesFormats.jl 0.3 fixture holds the fixture's files, byte for byte."""
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w", zarr_format=3)
    d.add_axis("cell", ["old1", "old2"]).add_axis("gene", ["g1", "g2"])
    d.set_scalar("title", "before").set_scalar("n", 1.5).set_scalar("gone", 1)
    d.set_vector("cell", "score", ["x", "y"]).set_vector("gene", "gone", [1, 2])
    d.set_matrix("cell", "gene", "expr", sp.eye(2, format="csc"))
    d.set_matrix("cell", "gene", "sp", np.ones((2, 2)))
    d.set_matrix("gene", "gene", "gone", np.ones((2, 2)))
    d.add_axis("cell", ["c1", "c2", "c3"], overwrite=True)  # drops score, expr and sp
    d.set_scalar("title", "hello", overwrite=True).set_scalar("n", np.int32(7), overwrite=True)
    d.delete_scalar("gone").delete_vector("gene", "gone").delete_matrix("gene", "gene", "gone")
    d.set_vector("cell", "score", np.array([1.5, 2.5, 3.5]))
    d.set_matrix("cell", "gene", "expr", np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    d.set_matrix("cell", "gene", "sp", np.ones((3, 2)))
    d.set_matrix(
        "cell",
        "gene",
        "sp",
        sp.csc_matrix(np.array([[0, 2], [0, 0], [5, 0.0]])),
        overwrite=True,
        indtype="int64",
    )  # Julia's Int64 indices
    d.close()
    check_archive(path)
    src = fixtures_dir / "julia-daf" / "daf030-flat.daf.zarr"
    theirs = _files(src)
    ours = _zip_entries(path, "")
    assert set(ours) == set(theirs)
    for rel in sorted(set(theirs) - {"zarr.json"}):
        assert ours[rel] == theirs[rel], rel
    root = json.loads(ours["zarr.json"])
    assert root == {"zarr_format": 3, "node_type": "group", "attributes": {"daf": [1, 0]}}
    check_example(dafzarr.open_daf(path))
    g: Any = zarr.open_group(store=ZipStore(path, mode="r"), mode="r")
    assert g.attrs["daf"] == [1, 0]
    assert g["vectors/cell/score"][:].tolist() == [1.5, 2.5, 3.5]


@pytest.mark.skipif(not shutil.which("zip"), reason="needs Info-ZIP zip")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zipped_directory_drops_its_consolidated_metadata(tmp_path: Path, zarr_format: int) -> None:
    root = tmp_path / "x.daf.zarr"
    fill_example(dafzarr.open_daf(root, "w", zarr_format=zarr_format)).close()
    path = tmp_path / "x.daf.zarr.zip"
    subprocess.run(["zip", "-q", "-r", "-0", str(path), "."], cwd=root, check=True)
    before = path.read_bytes()
    dafzarr.open_daf(path, "r+").close()
    assert path.read_bytes() == before  # an open that changes nothing writes nothing
    w = dafzarr.open_daf(path, "r+")
    w.delete_vector("cell", "score")
    w.set_vector("cell", "more", np.arange(3))
    w.close()
    check_archive(path, aligned=())  # zip -r does not align its entries
    entries = _zip_entries(path, "")
    assert ".zmetadata" not in entries
    if zarr_format == 3:
        assert "consolidated_metadata" not in json.loads(entries["zarr.json"])
        assert json.loads(entries["zarr.json"])["attributes"] == {"daf": [1, 0]}
    # zarr-python's default open (consolidated metadata when present) sees the changes.
    g: Any = zarr.open_group(store=ZipStore(path, mode="r"), mode="r")
    assert sorted(g["vectors/cell"].array_keys()) == ["more"]
    assert g["vectors/cell/more"][:].tolist() == [0, 1, 2]
    r = dafzarr.open_daf(path)
    assert r.vectors_set("cell") == {"more"}
    assert r.get_scalar("title") == "hello"


def test_options_apply_to_zip_only(tmp_path: Path) -> None:
    from dafzarr.errors import DafFormatError

    with pytest.raises(DafFormatError, match="max_file_size applies to ZIP archives only"):
        dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", max_file_size=1 << 30)
    with pytest.raises(DafFormatError, match="append_only applies to ZIP archives only"):
        dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", append_only=True)
    assert not (tmp_path / "x.daf.zarr").exists()


@pytest.mark.skipif(not shutil.which("zip"), reason="needs Info-ZIP zip")
@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_adopting_a_consolidated_zarr_group_in_a_zip(tmp_path: Path, zarr_format: int) -> None:
    """A plain zarr group (consolidated, zipped) becomes a daf in ``w+`` mode: on v3 the root
    document is rewritten, and the stale consolidated metadata goes."""
    src = tmp_path / "plain.zarr"
    g: Any = zarr.open_group(
        str(src), mode="w", zarr_format=zarr_format, attributes={"title": "plain"}
    )
    g.create_array("extra", data=np.arange(3, dtype="int32"), compressors=None)
    zarr.consolidate_metadata(str(src))
    path = tmp_path / "x.daf.zarr.zip"
    subprocess.run(["zip", "-q", "-r", "-0", str(path), "."], cwd=src, check=True)
    if zarr_format == 3:
        with pytest.raises(dafzarr.AppendOnlyError, match="can't add the daf attribute"):
            dafzarr.open_daf(path, "w+", append_only=True)
    d = dafzarr.open_daf(path, "w+", zarr_format=zarr_format)
    d.add_axis("cell", ["a", "b"]).set_vector("cell", "v", [1.0, 2.0])
    d.close()
    check_archive(path, aligned=())  # zip -r does not align its entries
    r = dafzarr.open_daf(path)
    assert r.get_np_vector("cell", "v").tolist() == [1.0, 2.0]
    g = zarr.open_group(store=ZipStore(path, mode="r"), mode="r")  # the default open
    assert g.attrs["title"] == "plain"
    assert g["extra"][:].tolist() == [0, 1, 2]
    assert g["vectors/cell/v"][:].tolist() == [1.0, 2.0]
    if zarr_format == 3:
        assert g.attrs["daf"] == [1, 0]
    else:
        assert g["daf"][:].tolist() == [1, 0]


def test_a_refused_change_keeps_writes_pending_in_the_store(tmp_path: Path) -> None:
    """zarr writes through the same store share commits with ZarrDaf's changes: a change
    refused for an existing property must not roll back a write still waiting for its
    commit."""
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    d.set_scalar("s", 1)
    store = d._backend.store  # type: ignore[attr-defined]

    async def scenario() -> None:
        value = default_buffer_prototype().buffer.from_bytes(b"pending")
        pending = asyncio.create_task(store.set("other/key", value))
        await asyncio.sleep(0)  # the write is in the file, its commit not yet made
        with pytest.raises(dafzarr.DafzarrError, match="existing scalar: s"):
            d.set_scalar("s", 2)
        with pytest.raises(dafzarr.DafzarrError, match="existing vector: v"):
            d.add_axis("cell", ["a"]).set_vector("cell", "v", [1]).set_vector("cell", "v", [2])
        await pending

    asyncio.run(scenario())
    d.close()
    with MmapZipStore(path) as reopened:
        assert bytes(reopened["other/key"]) == b"pending"
    assert dafzarr.open_daf(path).get_scalar("s") == 1
