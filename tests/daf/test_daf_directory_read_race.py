"""A reader of a directory data set reads each property from one generation while another
process overwrites or deletes it.

The reader (this process) is paused right after it read a property's metadata (its
storage's ``array_info`` is wrapped): a second process then deletes or overwrites the
property, and the reader goes on to its chunks. It
must return the old value, the new one, or raise a ``DafzarrError``: never zeros for a chunk
that was deleted under it, nor the new chunk's bytes read with the old metadata.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import DafMissingError, UnstableFileSetError

ROOT = str(Path(__file__).parents[2])

#: Reads a command a line, changes the data set, answers ``done``.
WRITER = """
import sys, numpy as np, dafzarr
d = dafzarr.open_daf(sys.argv[1], "r+")
n = d.axis_length("cell")
for line in sys.stdin:
    command = line.split()
    if command[0] == "delete":
        d.delete_vector("cell", command[1])
    elif command[0] == "float":
        d.set_vector("cell", command[1], np.arange(n) * 0.5 + 0.25, overwrite=True)
    elif command[0] == "matrix":
        d.set_matrix("gene", "cell", command[1], np.full((4, n), 0.5), overwrite=True, relayout=False)
    print("done", flush=True)
"""


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[str, Callable[[str], None]]]:
    """(the data set's path, a function that has the second process run one command)."""
    path = str(tmp_path / "cells.daf.zarr")
    process: subprocess.Popen[str] | None = None

    def run(command: str) -> None:
        nonlocal process
        if process is None:
            process = subprocess.Popen(
                [sys.executable, "-c", WRITER, path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(command + "\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        assert answer == "done\n", process.stderr.read() if process.stderr else ""

    yield path, run
    if process is not None:
        assert process.stdin and process.stdout and process.stderr
        process.stdin.close()
        process.wait(timeout=60)
        process.stdout.close()
        process.stderr.close()


def _paused(
    daf: Any,
    command: str,
    run: Callable[[str], None],
    after: str,
    times: int = 1,
    prefix: str = "vectors/cell/age",
) -> None:
    """Have the second process run ``command`` right after each of the reader's first
    ``times`` calls of the storage's ``after`` (``array_info``: the metadata of an array was
    read) on the property at ``prefix``."""
    storage = daf._storage
    original = getattr(storage, after)
    pending = [command] * times

    def paused(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if pending and args[0].startswith(prefix):
            run(pending.pop())
        return out

    setattr(storage, after, paused)


def _make(path: str, n: int, value: Any, zarr_format: int = 2) -> None:
    with dafzarr.open_daf(path, "w", zarr_format=zarr_format) as d:
        d.add_axis("cell", [f"c{i}" for i in range(n)])
        d.set_vector("cell", "age", value)


# 3,000 entries are read into memory, 30,000 are mapped.
SIZES = [3000, 30000]


@pytest.mark.parametrize("n", SIZES)
def test_a_vector_deleted_under_the_read_is_not_read_as_zeros(
    writer: tuple[str, Callable[[str], None]], n: int
) -> None:
    path, run = writer
    old = np.arange(n, dtype=np.int64) + 1
    _make(path, n, old)
    run("noop")  # the second process is up
    with dafzarr.open_daf(path, "r") as daf:
        _paused(daf, "delete age", run, "array_info")
        try:
            got = np.array(daf.get_np_vector("cell", "age"))
        except DafMissingError:
            return
    np.testing.assert_array_equal(got, old)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("n", SIZES)
def test_old_metadata_never_reads_the_new_chunk(
    writer: tuple[str, Callable[[str], None]], n: int, zarr_format: int
) -> None:
    path, run = writer
    old = np.arange(n, dtype=np.int64) + 1
    new = np.arange(n) * 0.5 + 0.25  # float64: as many bytes as the int64 vector
    _make(path, n, old, zarr_format)
    run("noop")
    with dafzarr.open_daf(path, "r") as daf:
        _paused(daf, "float age", run, "array_info")
        got = np.array(daf.get_np_vector("cell", "age"))
    if got.dtype == old.dtype:
        np.testing.assert_array_equal(got, old)
    else:
        assert got.dtype == new.dtype
        np.testing.assert_array_equal(got, new)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_sparse_vector_is_read_from_one_generation(
    writer: tuple[str, Callable[[str], None]], zarr_format: int
) -> None:
    """Its indices and values come from the same generation: the old sparse vector, or the
    dense vector that replaced it, never the old indices with another's values."""
    path, run = writer
    n = 3000
    old = np.zeros(n, np.int64)
    old[::3] = np.arange(len(old[::3])) + 7
    _make(path, n, sp.csr_matrix(old.reshape(1, -1)), zarr_format)
    assert (Path(path) / "vectors" / "cell" / "age" / "nzind").is_dir()
    run("noop")
    with dafzarr.open_daf(path, "r") as daf:
        _paused(daf, "float age", run, "array_info")
        got = np.array(daf.get_np_vector("cell", "age"))
    if got.dtype == old.dtype:
        np.testing.assert_array_equal(got, old)
    else:
        np.testing.assert_array_equal(got, np.arange(n) * 0.5 + 0.25)


def test_a_property_replaced_under_every_read_is_named_in_an_error(
    writer: tuple[str, Callable[[str], None]],
) -> None:
    """A property overwritten during each attempt to read it: after a bounded number of
    attempts, an error that names the data set and the property."""
    path, run = writer
    n = 3000
    _make(path, n, np.arange(n, dtype=np.int64))
    run("noop")
    with dafzarr.open_daf(path, "r") as daf:
        _paused(daf, "float age", run, "array_info", times=1000)
        with pytest.raises(UnstableFileSetError) as caught:
            daf.get_np_vector("cell", "age")
    message = str(caught.value)
    assert "vectors/cell/age" in message and path in message, message


def test_a_sparse_matrix_is_read_from_one_generation(
    writer: tuple[str, Callable[[str], None]],
) -> None:
    """Its column pointers, row indices and values come from one generation: the old sparse
    matrix, or the dense one that replaced it."""
    path, run = writer
    n = 3000
    old = np.zeros((4, n), np.int64)
    old[1, ::3] = 5
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", [f"c{i}" for i in range(n)])
        d.add_axis("gene", ["g0", "g1", "g2", "g3"])
        d.set_matrix("gene", "cell", "umis", sp.csc_matrix(old), relayout=False)
    run("noop")
    with dafzarr.open_daf(path, "r") as daf:
        # Paused at its last part: the column pointers and row indices were read.
        _paused(daf, "matrix umis", run, "array_info", prefix="matrices/gene/cell/umis/nzval")
        got = daf.get_np_matrix("gene", "cell", "umis")
    got = got.toarray() if sp.issparse(got) else np.asarray(got)
    if got.dtype == old.dtype:
        np.testing.assert_array_equal(got, old)
    else:
        np.testing.assert_array_equal(got, np.full((4, n), 0.5))
