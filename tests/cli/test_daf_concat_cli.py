"""``dafzarr daf concat OUT SRC... --axis cell``: the command line of ``concatenate``."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.cli import main


def _source(
    tmp_path: Path,
    name: str,
    cells: list[str],
    genes: list[str] | None = None,
    suffix: str = ".daf.zarr.zip",
) -> str:
    path = str(tmp_path / f"{name}{suffix}")
    d = dafzarr.open_daf(path, "w", name=name)
    d.set_scalar("name", name)
    d.add_axis("cell", cells)
    d.add_axis("gene", genes or ["X", "Y"])
    rng = np.random.default_rng(len(cells))
    umis = sp.random(
        len(genes or "XY"),
        len(cells),
        density=0.5,
        random_state=rng,
        dtype=np.float32,
        format="csc",
    )
    d.set_matrix("gene", "cell", "UMIs", umis)
    d.set_vector("cell", "age", np.arange(len(cells), dtype=np.int32))
    d.close()
    return path


def test_concat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _source(tmp_path, "a", ["A", "B"])
    b = _source(tmp_path, "b", ["C", "D", "E"], suffix=".daf.zarr")
    out = str(tmp_path / "out.daf.zarr.zip")
    assert main(["daf", "concat", out, a, b, "--axis", "cell"]) == 0
    assert "2 data sets -> " in capsys.readouterr().out
    r = dafzarr.open_daf(out)
    assert list(r.axis_np_entries("cell")) == ["A", "B", "C", "D", "E"]
    assert list(r.get_np_vector("cell", "dataset")) == ["a", "a", "b", "b", "b"]
    assert list(r.get_np_vector("cell", "age")) == [0, 1, 0, 1, 2]
    want = sp.hstack([dafzarr.open_daf(p).get_np_matrix("gene", "cell", "UMIs") for p in (a, b)])
    got = r.get_np_matrix("gene", "cell", "UMIs")
    assert np.array_equal(np.asarray(sp.csc_matrix(got).todense()), want.toarray())
    r.close()
    # an existing destination is replaced only with --force
    assert main(["daf", "concat", out, a, b, "--axis", "cell", "-q"]) == 1
    assert "exists" in capsys.readouterr().err
    assert (
        main(
            [
                "daf",
                "concat",
                out,
                a,
                a.replace("a.daf", "a.daf"),
                "--axis",
                "cell",
                "--prefix",
                "--name",
                "one",
                "--name",
                "two",
                "--force",
                "-q",
                "--dataset-axis",
                "batch",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == ""
    r = dafzarr.open_daf(out)
    assert list(r.axis_np_entries("cell")) == ["one.A", "one.B", "two.A", "two.B"]
    assert list(r.axis_np_entries("batch")) == ["one", "two"]


def test_concat_errors_leave_no_destination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _source(tmp_path, "a", ["A", "B"])
    b = _source(tmp_path, "b", ["C"], genes=["X", "Z"])
    out = tmp_path / "out.daf.zarr"
    assert main(["daf", "concat", str(out), a, b, "--axis", "cell"]) == 1
    err = capsys.readouterr().err
    assert "different entries for the axis: gene" in err and "between the daf data: a" in err
    assert not out.exists() and os.listdir(tmp_path) == sorted(os.listdir(tmp_path))
    assert {p.name for p in tmp_path.iterdir()} == {"a.daf.zarr.zip", "b.daf.zarr.zip"}
    assert main(["daf", "concat", str(out), a, a, "--axis", "cell"]) == 1
    assert "the data set names are not unique" in capsys.readouterr().err
    assert (
        main(
            [
                "daf",
                "concat",
                str(out),
                a,
                a,
                "--axis",
                "cell",
                "--no-dataset-axis",
                "--name",
                "one",
                "--name",
                "two",
            ]
        )
        == 1
    )
    assert "non-unique entries for new axis: cell" in capsys.readouterr().err
    assert main(["daf", "concat", str(out), a, "--axis", "nope"]) == 1
    assert "missing axis: nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["daf", "concat", str(out), a])  # no --axis: a usage error
    assert exc.value.code == 2


def test_concat_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    a = _source(tmp_path, "a", ["A", "B"])
    b = _source(tmp_path, "b", ["C", "D", "E"])
    out = str(tmp_path / "out.daf.zarr")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-m", "dafzarr", "daf", "concat", out, a, b, "--axis", "cell"],
        stdout=subprocess.PIPE,
        stderr=follower,
    ) as proc:
        os.close(follower)
        proc.communicate(timeout=120)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the terminal has no writer left
        while chunk := os.read(leader, 1 << 16):
            chunks.append(chunk)
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0, shown
    assert "concatenating: 100%" in shown and "parts/s" in shown
    assert dafzarr.open_daf(out).axis_length("cell") == 5
