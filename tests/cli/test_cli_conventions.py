"""What users expect of any command line: exit statuses, Ctrl-C, closed pipes, ``--json`` on
the inspecting commands, ``-q`` on every command, no ``\\r`` progress in a log."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zarr

import dafzarr
from dafzarr import MmapZipStore
from dafzarr._core.cli import build_parser

from .test_cli import run


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    p = tmp_path / "a.zip"
    with MmapZipStore(p, "w") as store, store.batch():
        store["zarr.json"] = b'{"zarr_format":3,"node_type":"group"}'
        for i in range(5000):
            store[f"notes/{i:05d}"] = b"x" * 10
        store["big"] = bytes(64 << 20)
    return p


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> dict[str, argparse.ArgumentParser]:
    """Every runnable (sub)command's parser, by its words."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {" ".join(path): parser}
    out = {}
    for name, child in subs[0].choices.items():
        if child.prog.split()[-1] == name:  # aliases are the same parser again
            out.update(_leaves(child, (*path, name)))
    return out


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def test_every_command_takes_quiet_and_the_inspecting_ones_json() -> None:
    leaves = _leaves(build_parser())
    inspecting = (
        "zip ls",
        "zip info",
        "zip verify",
        "daf describe",
        "daf ls",
        "refs info",
        "refs check",
    )
    assert {*inspecting, "demo", "refs build", "zip pack"} <= set(leaves)
    for words, parser in leaves.items():
        assert {"-q", "--quiet"} <= _options(parser), words
    for words in inspecting:
        assert "--json" in _options(leaves[words]), words


def test_exit_statuses(tmp_path: Path, archive: Path) -> None:
    assert run("zip", "verify", "-q", str(archive)).returncode == 0
    usage = run("zip", "verify")  # the path is missing
    assert usage.returncode == 2 and "usage:" in usage.stderr
    assert run("zip", "frobnicate", str(archive)).returncode == 2
    failed = run("zip", "verify", str(tmp_path / "missing.zip"))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "missing.zip" in failed.stderr
    (tmp_path / "junk.zip").write_bytes(b"not an archive" * 100)
    bad = run("zip", "info", str(tmp_path / "junk.zip"))
    assert bad.returncode == 1 and "junk.zip" in bad.stderr and "Traceback" not in bad.stderr


def test_json_output(tmp_path: Path, archive: Path) -> None:
    listing = json.loads(run("zip", "ls", "--json", str(archive)).stdout)
    assert len(listing["entries"]) == 5002
    assert {e["name"] for e in listing["entries"][:2]} == {"zarr.json", "notes/00000"}
    info = json.loads(run("zip", "info", "--json", str(archive)).stdout)
    assert info["entries"] == 5002 and info["dead_bytes"] == 0
    assert info["file_size"] == archive.stat().st_size
    verify = json.loads(run("zip", "verify", "--json", str(archive)).stdout)
    assert verify == {"path": str(archive), "entries": 5002, "bad": []}
    daf = dafzarr.open_daf(tmp_path / "d.daf.zarr", "w")
    daf.set_scalar("organism", "yeast")
    daf.add_axis("cell", ["a", "b", "c"])
    daf.set_vector("cell", "umis", np.array([1, 0, 2], "u4"))
    daf.close()
    for command in ("describe", "info", "ls"):
        doc = json.loads(run("daf", command, "--json", str(tmp_path / "d.daf.zarr")).stdout)
        assert doc["scalars"] == {"organism": "yeast"} and doc["axes"] == {"cell": 3}
        assert doc["vectors"] == {"cell/umis": {"dtype": "uint32", "layout": "dense"}}


def test_quiet_leaves_only_the_data(archive: Path) -> None:
    res = run("zip", "verify", "-q", str(archive))
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""
    res = run("zip", "ls", "-q", str(archive))
    assert "entries" not in res.stdout.splitlines()[-1]  # no summary line
    assert "notes/04999" in res.stdout


def test_no_carriage_return_progress_in_a_log(tmp_path: Path) -> None:
    src = tmp_path / "g.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=3)
    for i in range(50):
        g.create_array(f"a{i}", data=np.arange(10.0))
    res = run("zip", "pack", str(src), str(tmp_path / "g.zip"))  # stderr is a pipe
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr and res.stderr == ""
    assert "entries" in res.stdout


def test_closed_pipe_ends_quietly(archive: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "dafzarr", "zip", "ls", str(archive)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as ls:
        assert ls.stdout is not None and ls.stderr is not None
        ls.stdout.readline()
        ls.stdout.close()  # as `| head -1` does
        status = ls.wait(timeout=120)
        assert ls.stderr.read() == b""
    assert status == 128 + signal.SIGPIPE


@contextlib.contextmanager
def _sigint_not_ignored() -> Iterator[None]:
    """Start children with SIGINT's default action, as a shell starts the job a terminal's
    Ctrl-C reaches. A runner that starts the tests in the background ignores SIGINT; children
    would inherit that, and Python then installs no handler of its own. A handled signal,
    unlike an ignored one, is reset to its default by exec."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def test_ctrl_c_exits_130_without_a_traceback(archive: Path) -> None:
    # `zip cat` of a 64 MiB entry into a pipe nobody reads blocks in its write.
    with _sigint_not_ignored():
        cat = subprocess.Popen(
            [sys.executable, "-m", "dafzarr", "zip", "cat", str(archive), "big"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    with cat:
        assert cat.stdout is not None and cat.stderr is not None
        assert cat.stdout.read(1 << 16) == bytes(1 << 16)  # it is writing
        time.sleep(0.2)
        os.kill(cat.pid, signal.SIGINT)
        try:
            status = cat.wait(timeout=120)
        except subprocess.TimeoutExpired:
            cat.kill()
            pytest.fail("`zip cat` was still writing 120 s after SIGINT")
        err = cat.stderr.read()
    assert status == 130
    assert b"Traceback" not in err and b"interrupted" in err


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    src = tmp_path / "g.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=3)
    for i in range(50):
        g.create_array(f"a{i}", data=np.arange(10.0))
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-m", "dafzarr", "zip", "pack", str(src), str(tmp_path / "g.zip")],
        stdout=subprocess.PIPE,
        stderr=follower,
    ) as proc:
        os.close(follower)
        out, _ = proc.communicate(timeout=120)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the terminal has no writer left
        while chunk := os.read(leader, 1 << 16):
            chunks.append(chunk)
    os.close(leader)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0 and b"entries" in out
    assert "packing: 100%" in shown and "files/s" in shown


def test_zip_info_reports_the_room_an_open_writer_keeps(tmp_path: Path) -> None:
    path = tmp_path / "open.zip"
    with MmapZipStore(path, "w") as store:
        for i in range(20):
            store[f"k{i}"] = bytes(100)  # single commits: the writer keeps free room
        text = run("zip", "info", str(path)).stdout
        info = json.loads(run("zip", "info", "--json", str(path)).stdout)
        assert info["free_bytes"] > 0
        assert f"free bytes       {info['free_bytes']:>14}" in text
    closed = run("zip", "info", str(path)).stdout
    assert "free bytes" not in closed and "dead bytes" in closed
