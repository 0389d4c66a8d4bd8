"""``dafzarr daf query PATH QUERY [--json | --csv]``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr.cli import main


@pytest.fixture
def path(tmp_path: Path) -> Path:
    root = tmp_path / "q.daf.zarr.zip"
    d = dafzarr.open_daf(root, "w")
    d.set_scalar("organism", "mouse")
    d.add_axis("cell", ["A", "B", "C"])
    d.add_axis("gene", ["X", "Y"])
    d.set_vector("cell", "age", np.array([3, 1, 2]))
    d.set_vector("cell", "is_doublet", np.array([False, True, False]))
    d.set_matrix("cell", "gene", "UMIs", np.array([[1, 0], [2, 5], [0, 7]], dtype=np.int32))
    d.close()
    return root


def test_query_results_as_text(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["daf", "query", str(path), "@ ?"]) == 0
    assert capsys.readouterr().out == "cell\ngene\n"
    assert main(["daf", "query", str(path), ". organism"]) == 0
    assert capsys.readouterr().out == "mouse\n"
    assert main(["daf", "query", str(path), "@ cell [ ! is_doublet ] : age"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "cell" and out[1].split() == ["A", "3"] and out[2].split() == ["C", "2"]


def test_query_results_as_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["daf", "query", str(path), "@ cell : age >> Sum", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == 6
    assert main(["daf", "query", str(path), "@ cell : age", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "axis": "cell",
        "entries": ["A", "B", "C"],
        "values": [3, 1, 2],
    }
    assert main(["daf", "query", str(path), "@ cell [ age > 1 ] @ gene :: UMIs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "rows_axis": "cell",
        "columns_axis": "gene",
        "rows": ["A", "C"],
        "columns": ["X", "Y"],
        "values": [[1, 0], [0, 7]],
    }


def test_query_results_as_csv(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["daf", "query", str(path), "@ cell : age", "--csv"]) == 0
    assert capsys.readouterr().out == "cell,value\nA,3\nB,1\nC,2\n"
    assert main(["daf", "query", str(path), "@ cell @ gene :: UMIs >- Max", "--csv"]) == 0
    assert capsys.readouterr().out == "gene,value\nX,2\nY,7\n"
    assert main(["daf", "query", str(path), "@ cell @ gene :: UMIs", "--csv"]) == 0
    assert capsys.readouterr().out == "cell,X,Y\nA,1,0\nB,2,5\nC,0,7\n"


def test_query_failures_exit_with_one(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["daf", "query", str(path), "@ cell : nope"]) == 1
    assert "missing vector: nope" in capsys.readouterr().err
    assert main(["daf", "query", str(path), "cell"]) == 1
    assert "expected: operator\nin: cell\nat: ▲▲▲▲" in capsys.readouterr().err
    assert main(["daf", "query", str(path), "@ cell @ gene"]) == 1
    assert "invalid query: @ cell @ gene" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["daf", "query", str(path), "@ ?", "--json", "--csv"])
    assert info.value.code == 2
