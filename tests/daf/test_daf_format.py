"""The bytes ZarrDaf writes, and interoperability with zarr-python and Julia-written stores."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import zarr
from zarr.storage import ZipStore

import dafzarr
from dafzarr._core.daf.layout import ZmetadataText, decode_strings, encode_strings, zmetadata_doc
from tests.helpers.common import check_zip_tools_accept

V2_ZARRAY_KEYS = {
    "zarr_format",
    "shape",
    "chunks",
    "dtype",
    "compressor",
    "fill_value",
    "order",
    "filters",
}


def fill_example(d: dafzarr.ZarrDaf) -> dafzarr.ZarrDaf:
    """The content of the Julia 0.3.0 golden fixture."""
    d.add_axis("cell", ["c1", "c2", "c3"]).add_axis("gene", ["g1", "g2"])
    d.set_scalar("title", "hello").set_scalar("n", np.int32(7))
    d.set_vector("cell", "score", np.array([1.5, 2.5, 3.5]))
    d.set_matrix("cell", "gene", "expr", np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    # Julia's sparse matrices hold Int64 indices (the default here is the smallest unsigned
    # type that holds them).
    d.set_matrix(
        "cell", "gene", "sp", sp.csc_matrix(np.array([[0, 2], [0, 0], [5, 0.0]])), indtype="int64"
    )
    return d


def check_example(d: dafzarr.ZarrDaf) -> None:
    assert list(d.axis_np_entries("cell")) == ["c1", "c2", "c3"]
    assert list(d.axis_np_entries("gene")) == ["g1", "g2"]
    assert d.get_scalar("title") == "hello"
    n = d.get_scalar("n")
    assert n == 7 and n.dtype == np.int32
    assert list(d.get_np_vector("cell", "score")) == [1.5, 2.5, 3.5]
    expr = d.get_np_matrix("cell", "gene", "expr")
    assert expr.dtype == np.float32 and expr.flags.f_contiguous
    assert np.array_equal(expr, [[1, 2], [3, 4], [5, 6]])
    assert np.array_equal(d.get_np_matrix("gene", "cell", "expr"), [[1, 3, 5], [2, 4, 6]])
    spm = d.get_np_matrix("cell", "gene", "sp")
    assert isinstance(spm, sp.csc_matrix)
    assert np.array_equal(spm.toarray(), [[0, 2], [0, 0], [5, 0]])
    assert np.array_equal(d.get_np_matrix("gene", "cell", "sp").toarray(), [[0, 0, 5], [2, 0, 0]])


def _read(path: Path) -> bytes:
    return path.read_bytes()


# --- The v2 layout ---------------------------------------------------------------------------


def test_v2_directory_layout_is_the_seed_layout(tmp_path: Path) -> None:
    root = tmp_path / "x.daf.zarr"
    fill_example(dafzarr.open_daf(root, "w")).close()
    assert _read(root / ".zgroup") == b'{"zarr_format":2}'
    assert json.loads(_read(root / ".zattrs")) == {}
    marker = json.loads(_read(root / "daf" / ".zarray"))
    assert marker == {
        "zarr_format": 2,
        "shape": [2],
        "chunks": [2],
        "dtype": "|u1",
        "compressor": None,
        "fill_value": None,
        "order": "C",
        "filters": None,
    }
    assert _read(root / "daf" / "0") == b"\x01\x00"
    for g in (
        "scalars",
        "axes",
        "vectors",
        "matrices",
        "vectors/cell",
        "matrices/cell/cell",
        "matrices/cell/gene",
        "matrices/gene/cell",
        "matrices/gene/gene",
    ):
        assert _read(root / g / ".zgroup") == b'{"zarr_format":2}', g
        assert _read(root / g / ".zattrs") == b"{}", g
    cell = json.loads(_read(root / "axes/cell/.zarray"))
    assert set(cell) == V2_ZARRAY_KEYS
    assert cell["dtype"] == "|O" and cell["filters"] == [{"id": "vlen-utf8"}]
    assert cell["shape"] == cell["chunks"] == [3]
    assert _read(root / "axes/cell/0").hex() == "03000000020000006331020000006332020000006333"
    assert _read(root / "scalars/n/0").hex() == "07000000"
    assert json.loads(_read(root / "scalars/n/.zarray"))["dtype"] == "<i4"
    expr = json.loads(_read(root / "matrices/cell/gene/expr/.zarray"))
    assert expr["shape"] == expr["chunks"] == [2, 3]
    assert expr["dtype"] == "<f4" and expr["fill_value"] is None and expr["order"] == "C"
    assert expr["compressor"] is None and expr["filters"] is None
    assert np.frombuffer(_read(root / "matrices/cell/gene/expr/0.0"), "<f4").tolist() == [
        1,
        3,
        5,
        2,
        4,
        6,
    ]
    sp_dir = root / "matrices/cell/gene/sp"
    assert _read(sp_dir / ".zgroup") == b'{"zarr_format":2}'
    assert np.frombuffer(_read(sp_dir / "colptr/0"), "<i8").tolist() == [1, 2, 3]
    assert np.frombuffer(_read(sp_dir / "rowval/0"), "<i8").tolist() == [3, 1]
    assert np.frombuffer(_read(sp_dir / "nzval/0"), "<f8").tolist() == [5, 2]
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f == ".zarray":
                assert set(json.loads(_read(Path(dirpath) / f))) == V2_ZARRAY_KEYS
                assert (Path(dirpath) / ".zattrs").is_file()


def test_vlen_utf8_bytes() -> None:
    assert encode_strings(["c1", "c2", "c3"]).hex() == (
        "03000000020000006331020000006332020000006333"
    )
    assert encode_strings(["a", "bé", ""]).hex() == "0300000001000000610300000062c3a900000000"
    assert list(
        decode_strings(bytes.fromhex("0300000001000000610300000062c3a900000000"), 3, "x")
    ) == ["a", "bé", ""]
    with pytest.raises(ValueError, match="holds 3 strings, expected 2"):
        decode_strings(encode_strings(["a", "b", "c"]), 2, "axes/cell")


def test_zmetadata_sorted_and_incremental_equals_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "x.daf.zarr"
    d = fill_example(dafzarr.open_daf(root, "w"))
    d.add_axis("batch", ["b1", "b2"])
    d.set_vector("gene", "weight", sp.csr_matrix(np.array([[0, 1.0]])))
    d.delete_vector("cell", "score")
    d.delete_matrix("cell", "gene", "expr")
    d.delete_axis("batch")
    d.delete_scalar("title")
    d.close()
    text = _read(root / ".zmetadata")
    doc = json.loads(text)
    keys = list(doc["metadata"])
    assert keys == sorted(keys, key=lambda k: (k.count("/"), k))
    assert doc["zarr_consolidated_format"] == 1
    assert "vectors/gene/weight/nzind/.zarray" in keys
    assert not any("score" in k or "batch" in k or "expr" in k or "title" in k for k in keys)
    assert "matrices/cell/gene/sp/.zgroup" in keys
    (root / ".zmetadata").unlink()
    dafzarr.open_daf(root, "r").close()  # a missing .zmetadata is rebuilt on open
    assert _read(root / ".zmetadata") == text
    assert not list(root.glob(".zmetadata.*"))


def test_the_incremental_zmetadata_is_the_indented_document_byte_for_byte() -> None:
    """Entries added, changed (a new value object, or announced as changed) and removed in
    any order give the bytes of ``json.dumps(doc, indent=4)`` with sorted keys each time."""
    rng = np.random.default_rng(5)
    values: list[Any] = [
        {"zarr_format": 2, "shape": [3], "fill_value": float("nan"), "filters": None},
        {},
        {"a": []},
        {"x": {"y": [1, {"z": 'é\n"q"'}], "w": {}}},
        {"big": 1e300},
        {"chunks": [1, 2, 3], "dtype": "<f4", "order": "C", "compressor": None},
    ]
    keys = [
        f"{p}/.z{k}"
        for p in ("a", "a/b", "b", "matrices/c/d/é", "vectors/x y", "z")
        for k in ("array", "attrs", "group")
    ] + [".zattrs", ".zgroup"]
    text, entries = ZmetadataText(), {}
    assert text.document(entries) == zmetadata_doc(entries)
    for step in range(300):
        key = keys[int(rng.integers(len(keys)))]
        action = int(rng.integers(4))
        changed: list[str] | None = None
        if action == 0 and key in entries:
            del entries[key]
            changed = []
        elif action == 1 and key in entries:  # changed in place: must be announced
            entries[key] = dict(entries[key], step=step)
            changed = [key]
        else:
            entries[key] = dict(values[int(rng.integers(len(values)))])
            changed = [key] if action == 2 else None
        assert text.document(entries, changed) == zmetadata_doc(entries), step
        assert (
            zmetadata_doc(entries)
            == json.dumps(
                {
                    "metadata": dict(
                        sorted(entries.items(), key=lambda kv: (kv[0].count("/"), kv[0]))
                    ),
                    "zarr_consolidated_format": 1,
                },
                indent=4,
            ).encode()
        )


def test_writing_vectors_one_by_one_reencodes_only_what_changed(tmp_path: Path) -> None:
    """The consolidated metadata of a directory encodes each entry once: later writes do
    not encode the earlier entries again (JSON encoding grew quadratically before)."""
    from dafzarr._core.daf import layout

    d = dafzarr.open_daf(tmp_path / "x.daf.zarr", "w")
    d.add_axis("cell", ["a", "b"])
    encoded = [0]  # characters of JSON encoded with indentation
    real = layout.json.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> str:
        out = real(value, *args, **kwargs)
        encoded[0] += len(out) if kwargs.get("indent") else 0
        return out

    try:
        layout.json.dumps = counting
        for i in range(60):
            d.set_vector("cell", f"v{i}", np.arange(2.0))
    finally:
        layout.json.dumps = real
    d.close()
    final = (tmp_path / "x.daf.zarr" / ".zmetadata").stat().st_size
    assert encoded[0] < 2 * final  # each entry about once, not the whole document each time
    doc = json.loads(_read(tmp_path / "x.daf.zarr" / ".zmetadata"))
    assert all(f"vectors/cell/v{i}/.zarray" in doc["metadata"] for i in range(60))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_our_directory_opens_with_zarr_python(tmp_path: Path, zarr_format: int) -> None:
    root = tmp_path / "x.daf.zarr"
    fill_example(dafzarr.open_daf(root, "w", zarr_format=zarr_format)).close()
    g: Any = zarr.open_group(str(root), mode="r")  # the default, consolidated path
    assert g.metadata.consolidated_metadata is not None
    if zarr_format == 2:
        assert list(g["daf"][:]) == [1, 0]
    else:
        assert g.attrs["daf"] == [1, 0]
    assert list(g["axes/cell"][:]) == ["c1", "c2", "c3"]
    assert g["scalars/n"][:].tolist() == [7]
    assert g["scalars/title"][:].tolist() == ["hello"]
    expr = g["matrices/cell/gene/expr"][:]
    assert expr.shape == (2, 3)
    assert np.array_equal(expr.T, [[1, 2], [3, 4], [5, 6]])
    assert g["matrices/cell/gene/sp/colptr"][:].tolist() == [1, 2, 3]
    assert g["matrices/cell/gene/sp/rowval"][:].tolist() == [3, 1]
    assert sorted(g["matrices"].group_keys()) == ["cell", "gene"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_our_zip_opens_with_zarr_python_and_zip_tools(tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    fill_example(dafzarr.open_daf(path, "w", zarr_format=zarr_format)).close()
    check_zip_tools_accept(path)
    g: Any = zarr.open_group(store=ZipStore(path, mode="r"), mode="r", use_consolidated=False)
    assert list(g["axes/gene"][:]) == ["g1", "g2"]
    assert np.array_equal(g["matrices/gene/cell/expr"][:], [[1, 2], [3, 4], [5, 6]])
    assert g["vectors/cell/score"][:].tolist() == [1.5, 2.5, 3.5]


def _hand_written(g: Any, zarr_format: int) -> None:
    """A Daf written with zarr-python: chunked, compressed, string chunks."""
    if zarr_format == 2:
        g.create_array("daf", data=np.array([1, 0], np.uint8), compressors=None)
        zstd: Any = {"id": "zstd", "level": 3}
        blosc: Any = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}
    else:
        g.attrs["daf"] = [1, 0]
        zstd = zarr.codecs.ZstdCodec(level=3)
        blosc = zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
    for name in ("scalars", "axes", "vectors", "matrices"):
        g.create_group(name)
    g.create_array(
        "axes/cell",
        data=np.array([f"c{i}" for i in range(5)], dtype=np.dtypes.StringDType()),
        chunks=(2,),
    )
    g.create_array("axes/gene", data=np.array(["g1", "g2", "g3"], dtype=np.dtypes.StringDType()))
    g.create_array("scalars/version", data=np.array([3], np.int16), compressors=zstd)
    for path in (
        "vectors/cell",
        "vectors/gene",
        "matrices/cell/cell",
        "matrices/cell/gene",
        "matrices/gene/cell",
        "matrices/gene/gene",
    ):
        g.create_group(path)
    g.create_array(
        "vectors/cell/chunked", data=np.arange(5, dtype="float32"), chunks=(2,), compressors=None
    )
    g.create_array(
        "vectors/cell/blosc", data=np.arange(5, dtype="int64") * 3, chunks=(5,), compressors=blosc
    )
    g.create_array(
        "vectors/cell/both", data=np.arange(5, dtype="uint16") + 9, chunks=(3,), compressors=zstd
    )
    g.create_array(
        "vectors/cell/label",
        data=np.array(["a", "bé", "", "d", "e"], dtype=np.dtypes.StringDType()),
        chunks=(2,),
    )
    dense = np.arange(15, dtype="float64").reshape(5, 3)
    g.create_array(
        "matrices/cell/gene/dense",
        data=np.ascontiguousarray(dense.T),
        chunks=(2, 2),
        compressors=zstd,
    )
    sv = g.create_group("vectors/gene/sparse")
    sv.create_array("nzind", data=np.array([1, 3], np.int64), compressors=zstd)
    sv.create_array("nzval", data=np.array([0.5, 7.0]), compressors=blosc)
    sm = g.create_group("matrices/cell/gene/sparse")
    sm.create_array("colptr", data=np.array([1, 2, 2, 4], np.int32), compressors=zstd)
    sm.create_array("rowval", data=np.array([5, 1, 2], np.int32), chunks=(2,), compressors=zstd)
    sm.create_array("nzval", data=np.array([1, 2, 3], np.int8), compressors=blosc)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_hand_written_daf_reads(tmp_path: Path, zarr_format: int) -> None:
    root = tmp_path / "hand.daf.zarr"
    g = zarr.open_group(str(root), mode="w", zarr_format=zarr_format)
    _hand_written(g, zarr_format)
    d = dafzarr.open_daf(root)
    assert d.zarr_format == zarr_format
    assert list(d.axis_np_entries("cell")) == [f"c{i}" for i in range(5)]
    assert d.get_scalar("version") == 3
    assert d.get_np_vector("cell", "chunked").tolist() == [0, 1, 2, 3, 4]
    assert d.get_np_vector("cell", "chunked").dtype == np.float32
    assert d.get_np_vector("cell", "blosc").tolist() == [0, 3, 6, 9, 12]
    assert d.get_np_vector("cell", "both").tolist() == [9, 10, 11, 12, 13]
    assert list(d.get_np_vector("cell", "label")) == ["a", "bé", "", "d", "e"]
    dense = d.get_np_matrix("cell", "gene", "dense")
    assert np.array_equal(dense, np.arange(15, dtype="float64").reshape(5, 3))
    assert d.get_np_vector("gene", "sparse").tolist() == [0.5, 0, 7.0]
    sm = d.get_np_matrix("cell", "gene", "sparse")
    expected = np.zeros((5, 3), np.int8)
    expected[4, 0], expected[0, 2], expected[1, 2] = 1, 2, 3
    assert np.array_equal(sm.toarray(), expected)
    assert d.vectors_set("cell") == {"chunked", "blosc", "both", "label"}


# --- Julia-written stores and the v3 layout ----------------------------------------------------


def test_julia_flat_fixture_reads(fixtures_dir: Path) -> None:
    d = dafzarr.open_daf(fixtures_dir / "julia-daf" / "daf030-flat.daf.zarr")
    assert d.zarr_format == 3
    check_example(d)
    assert d.vectors_set("gene") == set()
    assert d.matrices_set("cell", "cell") == set()
    assert d.scalars_set() == {"title", "n"}


def test_v3_write_matches_the_julia_fixture_bytes(tmp_path: Path, fixtures_dir: Path) -> None:
    """Every array document and chunk we write equals the Julia-written one, byte for byte."""
    src = fixtures_dir / "julia-daf" / "daf030-flat.daf.zarr"
    root = tmp_path / "ours.daf.zarr"
    fill_example(dafzarr.open_daf(root, "w", zarr_format=3)).close()
    theirs = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    ours = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert theirs == ours
    for rel in sorted(theirs - {"zarr.json"}):
        assert _read(root / rel) == _read(src / rel), rel
    ours_root = json.loads(_read(root / "zarr.json"))
    theirs_root = json.loads(_read(src / "zarr.json"))
    assert ours_root["attributes"] == theirs_root["attributes"] == {"daf": [1, 0]}
    ours_meta = ours_root["consolidated_metadata"]["metadata"]
    theirs_meta = theirs_root["consolidated_metadata"]["metadata"]
    assert ours_meta == theirs_meta
    assert list(ours_meta) == sorted(ours_meta, key=lambda k: (k.count("/"), k))


def test_v3_elides_all_fill_chunks(tmp_path: Path) -> None:
    root = tmp_path / "x.daf.zarr"
    d = dafzarr.open_daf(root, "w", zarr_format=3)
    d.add_axis("cell", ["a", "b"]).set_scalar("zero", 0).set_scalar("blank", "")
    d.set_vector("cell", "zeros", np.zeros(2, "float32"))
    with d.empty_dense_vector("cell", "filled", "int32") as v:
        v[:] = 0
    d.close()
    assert not (root / "scalars/zero/c").exists()
    assert not (root / "scalars/blank/c").exists()
    assert not (root / "vectors/cell/zeros/c").exists()
    r = dafzarr.open_daf(root)
    assert r.get_scalar("zero") == 0 and r.get_scalar("blank") == ""
    assert r.get_np_vector("cell", "zeros").tolist() == [0, 0]
    assert r.get_np_vector("cell", "filled").tolist() == [0, 0]


# --- ZIP <-> directory --------------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which("unzip"), reason="needs Info-ZIP unzip")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_unzipping_a_zip_daf_gives_a_directory_daf(tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    fill_example(dafzarr.open_daf(path, "w", zarr_format=zarr_format)).close()
    root = tmp_path / "x.daf.zarr"
    subprocess.run(["unzip", "-q", str(path), "-d", str(root)], check=True)
    check_example(dafzarr.open_daf(root))
    g: Any = zarr.open_group(str(root), mode="r")  # consolidated metadata was built on open
    assert g.metadata.consolidated_metadata is not None


@pytest.mark.skipif(not shutil.which("zip"), reason="needs Info-ZIP zip")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zipping_a_directory_daf_gives_a_zip_daf(tmp_path: Path, zarr_format: int) -> None:
    root = tmp_path / "x.daf.zarr"
    fill_example(dafzarr.open_daf(root, "w", zarr_format=zarr_format)).close()
    path = tmp_path / "x.daf.zarr.zip"
    subprocess.run(["zip", "-q", "-r", "-0", str(path), "."], cwd=root, check=True)
    check_example(dafzarr.open_daf(path))
    deflated = tmp_path / "y.daf.zarr.zip"
    subprocess.run(["zip", "-q", "-r", "-9", str(deflated), "."], cwd=root, check=True)
    check_example(dafzarr.open_daf(deflated))  # compressed entries decode (no zero-copy)
    w = dafzarr.open_daf(path, "r+")
    w.set_vector("cell", "more", np.arange(3))
    w.close()
    assert dafzarr.open_daf(path).get_np_vector("cell", "more").tolist() == [0, 1, 2]


@pytest.mark.parametrize("variant", ["bl", "bz", "gz", "zs"])
def test_julia_packed_fixtures_read(fixtures_dir: Path, variant: str) -> None:
    """Single-shard packed arrays (blosc lz4/zstd, gzip, zstd inner codecs) that
    zarr-python refuses."""
    d = dafzarr.open_daf(fixtures_dir / "julia-daf" / "zpk" / f"{variant}.daf.zarr")
    assert d.get_scalar("name") == "packed!"
    assert d.name == "packed!.read_only" or d.name.startswith("packed!.read_only#")
    assert np.array_equal(d.get_np_vector("cell", "score"), np.arange(1, 1201, dtype="float64"))
    label = d.get_np_vector("cell", "label")
    assert list(label[:3]) == ["v1", "v2", "v3"] and label[1199] == "v1200"
    dense = d.get_np_matrix("cell", "gene", "dense")
    assert dense.shape == (1200, 8)
    assert np.array_equal(dense, np.arange(1, 9601, dtype="float64").reshape(8, 1200).T)
    assert np.array_equal(d.get_np_matrix("gene", "cell", "dense"), dense.T)
    sparse = d.get_np_matrix("cell", "gene", "sparse")
    assert sparse.nnz == 2000 and sparse[0, 0] == 1 and sparse[0, 1] == 1201
    assert sparse[:, 0].toarray().ravel().tolist() == list(range(1, 1201))
    assert (d.get_np_matrix("gene", "cell", "sparse") != sparse.T).nnz == 0


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_metadata_with_two_writers(tmp_path: Path, zarr_format: int) -> None:
    """Two writable handles on one directory: each write sees the other's changes."""
    root = tmp_path / "x.daf.zarr"
    a = dafzarr.open_daf(root, "w", zarr_format=zarr_format)
    b = dafzarr.open_daf(root, "r+")
    a.add_axis("cell", ["c1", "c2"])
    b.set_scalar("from_b", 1)
    a.set_vector("cell", "from_a", [1, 2])
    b.delete_scalar("from_b")
    b.set_scalar("again_b", 2)
    doc = "zarr.json" if zarr_format == 3 else ".zmetadata"
    incremental = json.loads(_read(root / doc))
    dafzarr.open_daf(root, "r+").close()  # a writable open rebuilds it from the tree
    assert json.loads(_read(root / doc)) == incremental
    g: Any = zarr.open_group(str(root), mode="r")
    assert sorted(g["scalars"].array_keys()) == ["again_b"]
    assert g["vectors/cell/from_a"][:].tolist() == [1, 2]
