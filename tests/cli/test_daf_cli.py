"""``dafzarr daf info|ls|convert`` and the Daf step of ``dafzarr demo``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.cli import main
from dafzarr.daf import copy_daf
from tests.daf.test_daf_format import check_example, fill_example


def _source(tmp_path: Path) -> Path:
    root = tmp_path / "src.daf.zarr"
    d = fill_example(dafzarr.open_daf(root, "w"))
    d.set_vector(
        "cell", "sparse", sp.csr_matrix(np.array([[0, 3, 0]], np.uint16)), indtype="uint32"
    )
    d.set_matrix("cell", "cell", "square", np.eye(3, dtype=bool))
    d.close()
    return root


def test_info_and_ls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _source(tmp_path)
    assert main(["daf", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert "type: ZarrDaf" in out and "cell: 3 entries" in out
    assert main(["daf", "ls", str(root)]) == 0
    out = capsys.readouterr().out
    assert "scalar  n = 7" in out
    assert "vector  cell/sparse: uint16 sparse (1 nonzeros)" in out
    assert "matrix  gene,cell/sp: float64 sparse (2 nonzeros)" in out
    assert "matrix  cell,cell/square: bool dense" in out
    assert main(["daf", "info", str(tmp_path / "missing.daf.zarr")]) == 1
    assert "no such directory" in capsys.readouterr().err


def test_convert_round_trip_through_every_layout(tmp_path: Path) -> None:
    src = _source(tmp_path)
    chain = [
        (src, tmp_path / "a.daf.zarr.zip", []),
        (tmp_path / "a.daf.zarr.zip", tmp_path / "b.daf.zarr", ["--zarr-format", "3"]),
        (tmp_path / "b.daf.zarr", f"{tmp_path}/c.dafs.zarr.zip#/g", []),
        (f"{tmp_path}/c.dafs.zarr.zip#/g", tmp_path / "d.daf.zarr", ["--zarr-format", "2"]),
    ]
    for a, b, extra in chain:
        assert main(["daf", "convert", str(a), str(b), "--quiet", *extra]) == 0
    assert dafzarr.open_daf(tmp_path / "b.daf.zarr").zarr_format == 3
    assert dafzarr.open_daf(f"{tmp_path}/c.dafs.zarr.zip#/g").zarr_format == 3
    final = dafzarr.open_daf(tmp_path / "d.daf.zarr")
    assert final.zarr_format == 2
    check_example(final)
    stored = final._array_info("vectors/cell/sparse/nzind")
    assert stored.dtype == np.uint32  # index types survive conversion
    assert final.get_np_vector("cell", "sparse").tolist() == [0, 3, 0]
    assert final.get_np_matrix("cell", "cell", "square").dtype == np.bool_
    # The v2 directory we end with has the same files as the one we started from.
    names = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    assert names == {
        p.relative_to(tmp_path / "d.daf.zarr").as_posix()
        for p in (tmp_path / "d.daf.zarr").rglob("*")
        if p.is_file()
    }


def test_copy_reports_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = dafzarr.open_daf(_source(tmp_path))
    dst = dafzarr.memory_daf()
    copy_daf(src, dst, progress=True)
    err = capsys.readouterr().err
    assert "copying: 100%" in err and "11/11" in err and "properties/s, matrix " in err


def test_module_entry_point(tmp_path: Path) -> None:
    root = _source(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "dafzarr", "daf", "ls", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "axis    gene (2 entries)" in res.stdout


def test_copy_into_new_and_existing_data_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src.daf.zarr"
    with dafzarr.open_daf(src, "w") as d:
        d.set_scalar("version", "1.0")
        d.add_axis("cell", ["A", "B"])
        d.set_vector("cell", "age", [1, 2])
        d.set_matrix("cell", "cell", "near", np.eye(2))
    dst = f"{tmp_path}/out.dafs.zarr.zip#/copy"
    assert main(["daf", "copy", str(src), dst]) == 0
    assert "src.daf.zarr -> " in capsys.readouterr().out
    with dafzarr.open_daf(dst) as out:
        assert out.get_scalar("version") == "1.0"
        assert out.get_np_vector("cell", "age").tolist() == [1, 2]
    # Again: the properties exist now.
    assert main(["daf", "copy", str(src), dst, "--quiet"]) == 1
    assert "existing scalar: version" in capsys.readouterr().err
    assert main(["daf", "copy", str(src), dst, "--quiet", "--skip-existing"]) == 0
    assert main(["daf", "copy", str(src), dst, "--quiet", "--overwrite"]) == 0
    # Into a destination whose axis has more entries: an empty value per property.
    grown = tmp_path / "grown.daf.zarr.zip"
    with dafzarr.open_daf(grown, "w") as g:
        g.add_axis("cell", ["A", "B", "C"])
    assert main(["daf", "copy", str(src), str(grown), "--quiet"]) == 1
    assert "missing entries in the axis: cell" in capsys.readouterr().err
    assert (
        main(
            [
                "daf",
                "copy",
                str(src),
                str(grown),
                "--quiet",
                "--empty",
                "cell,age=-1",
                "--empty",
                "cell,cell,near=0",
            ]
        )
        == 0
    )
    with dafzarr.open_daf(grown) as g:
        assert g.get_np_vector("cell", "age").tolist() == [1, 2, -1]
        assert g.get_np_matrix("cell", "cell", "near").toarray().tolist() == [
            [1, 0, 0],
            [0, 1, 0],
            [0, 0, 0],
        ]
    assert main(["daf", "copy", str(src), str(grown), "--empty", "age=1"]) == 1
    assert "invalid --empty" in capsys.readouterr().err
