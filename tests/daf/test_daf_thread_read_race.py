"""A thread reading a property of a ZIP or memory data set while another thread of the same
process overwrites it again and again reads one whole generation of it every time.

A writer thread overwrites a vector, alternating int64 and float64 values, and a sparse
matrix, alternating numbers of stored values per column; every value names its generation.
Reader threads read through the same handle, a read-only view of it, or (ZIP) a second
handle on the same archive, which shares its store. A read that combined one generation's
metadata with another's chunk (integers read from float bytes, a column pointer of one
generation with the row indices of another, zeros for a chunk missing mid-overwrite) is a
failure, and so is any error: an overwrite is one change.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr._core.daf.changelock import ChangeLock

CELLS = 3000
GENES = 40
#: Overwrites of each property by the writer, unless it runs out of time first.
WRITES = 400
SECONDS = 2.0


def _vector(gen: int) -> np.ndarray[Any, Any]:
    """Generation ``gen`` (from 1) of the vector: even ones int64 ``gen``, odd ones float64
    ``gen + 0.5``, never zero."""
    if gen % 2 == 0:
        return np.full(CELLS, gen, np.int64)
    return np.full(CELLS, gen + 0.5, np.float64)


def _vector_gen(value: np.ndarray[Any, Any]) -> int | None:
    """The generation a vector read is, or None when it is none."""
    if value.shape != (CELLS,) or not np.all(value == value[0]):
        return None
    first = value[0]
    if value.dtype == np.int64 and first > 0 and first % 2 == 0:
        return int(first)
    if value.dtype == np.float64 and first % 1 == 0.5 and int(first) % 2 == 1:
        return int(first)
    return None


def _per_column(gen: int) -> int:
    return 1 + gen % 3


def _matrix(gen: int) -> sp.csc_matrix:
    """Generation ``gen`` of the GENES x CELLS matrix: the first ``_per_column(gen)`` genes
    of every cell hold ``gen``."""
    k = _per_column(gen)
    indptr = np.arange(CELLS + 1, dtype=np.int64) * k
    indices = np.tile(np.arange(k, dtype=np.int64), CELLS)
    data = np.full(CELLS * k, float(gen))
    return sp.csc_matrix((data, indices, indptr), shape=(GENES, CELLS))


def _matrix_gen(value: Any) -> int | None:
    if not sp.issparse(value) or value.shape != (GENES, CELLS):
        return None
    m = sp.csc_matrix(value)
    if m.nnz == 0 or not np.all(m.data == m.data[0]):
        return None
    gen = int(m.data[0])
    if m.data[0] != gen or gen < 1:
        return None
    k = _per_column(gen)
    ok = (
        m.nnz == CELLS * k
        and np.array_equal(m.indptr, np.arange(CELLS + 1) * k)
        and np.array_equal(m.indices, np.tile(np.arange(k), CELLS))
    )
    return gen if ok else None


def _fresh(daf: Any) -> Any:
    daf.add_axis("cell", [f"c{i}" for i in range(CELLS)])
    daf.add_axis("gene", [f"g{i}" for i in range(GENES)])
    daf.set_vector("cell", "v", _vector(1))
    daf.set_matrix("gene", "cell", "m", _matrix(1), relayout=False)
    return daf


@pytest.fixture(autouse=True)
def _switching() -> Iterator[None]:
    """Threads switch every microsecond, not every 5 ms: a reader is then often paused
    between a property's metadata and its chunk, where an overwrite can come in."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.fixture(params=["zip", "memory"])
def writable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(a writable data set, the function that opens a second handle on it or None)."""
    if request.param == "zip":
        path = str(tmp_path / "cells.daf.zarr.zip")
        daf = _fresh(dafzarr.open_daf(path, "w"))
        yield daf, lambda: dafzarr.open_daf(path, "r")
    else:
        daf = _fresh(dafzarr.memory_daf(name="cells"))
        yield daf, None
    daf.close()


def _race(
    write: Callable[[int], None], get: Callable[[], Any], gen_of: Callable[[Any], int | None]
) -> tuple[int, list[str]]:
    """``write(gen)`` for generations 2, 3, ... in one thread while two threads ``get()``
    again and again; (reads made, those that were no whole generation)."""
    done = threading.Event()
    bad: list[str] = []
    reads = [0, 0]

    def overwrite() -> None:
        try:
            deadline = time.monotonic() + SECONDS
            for gen in range(2, WRITES + 2):
                write(gen)
                if time.monotonic() > deadline:
                    break
        finally:
            done.set()

    def check(slot: int) -> None:
        while not done.is_set():
            reads[slot] += 1
            try:
                value = get()
            except Exception as exc:  # noqa: BLE001 - any error is counted and reported
                bad.append(f"{type(exc).__name__}: {exc}")
                continue
            if gen_of(value) is None:
                bad.append(f"read {value!r}")

    threads = [threading.Thread(target=check, args=(i,)) for i in range(2)]
    threads.append(threading.Thread(target=overwrite))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    return sum(reads), bad


def _check(reads: int, bad: list[str]) -> None:
    assert reads > 0
    wrong = [b for b in bad if b.startswith("read ")]
    assert not bad, (
        f"{len(bad)} of {reads} reads were no whole generation ({len(wrong)} silently wrong "
        f"values, {len(bad) - len(wrong)} errors): {(wrong or bad)[:2]}"
    )


def _readers(daf: Any, second: Any, how: str) -> Any:
    """The data set a reader reads: the writer's handle, a read-only view of it, or a
    second handle on the same ZIP."""
    if how == "same":
        return daf
    if how == "view":
        return daf.read_only_view()
    if second is None:
        pytest.skip("a memory data set has no second handle")
    return second()


@pytest.mark.parametrize("how", ["same", "view", "handle"])
def test_a_vector_overwritten_by_another_thread_reads_as_one_generation(
    writable: tuple[Any, Any], how: str
) -> None:
    daf, second = writable
    reader = _readers(daf, second, how)
    try:
        reads, bad = _race(
            lambda gen: daf.set_vector("cell", "v", _vector(gen), overwrite=True),
            lambda: reader.get_np_vector("cell", "v"),
            _vector_gen,
        )
    finally:
        if how == "handle":
            reader.close()
    _check(reads, bad)


@pytest.mark.parametrize("how", ["same", "view", "handle"])
def test_a_sparse_matrix_overwritten_by_another_thread_reads_as_one_generation(
    writable: tuple[Any, Any], how: str
) -> None:
    daf, second = writable
    reader = _readers(daf, second, how)
    try:
        reads, bad = _race(
            lambda gen: daf.set_matrix(
                "gene", "cell", "m", _matrix(gen), overwrite=True, relayout=False
            ),
            lambda: reader.get_np_matrix("gene", "cell", "m", relayout=False),
            _matrix_gen,
        )
    finally:
        if how == "handle":
            reader.close()
    _check(reads, bad)


def _fill_vector(daf: Any, gen: int) -> None:
    value = _vector(gen)
    with daf.empty_dense_vector("cell", "v", value.dtype, overwrite=True) as out:
        out[: CELLS // 2] = value[: CELLS // 2]
        time.sleep(0)  # another thread may read between the halves
        out[CELLS // 2 :] = value[CELLS // 2 :]


@pytest.mark.parametrize("how", ["same", "view"])
def test_a_vector_filled_by_another_thread_reads_as_one_generation(
    writable: tuple[Any, Any], how: str
) -> None:
    """``empty_dense_vector`` overwrites: a reader sees the old vector or the new one,
    never the reservation half filled. A ZIP deletes the old vector when the fill begins
    (its reservation cannot supersede an entry): there it reads as missing meanwhile."""
    daf, second = writable
    reader = _readers(daf, second, how)
    zip_backed = daf.path.endswith(".zip")
    reads, bad = _race(
        lambda gen: _fill_vector(daf, gen),
        lambda: reader.get_np_vector("cell", "v"),
        _vector_gen,
    )
    if zip_backed:
        bad = [b for b in bad if not b.startswith("DafMissingError: missing vector: v\n")]
    _check(reads, bad)


def test_listing_a_memory_data_set_while_another_thread_writes_it() -> None:
    """Listing the vectors of a memory data set while another thread adds and deletes
    some lists the keys of one moment (never a "dictionary changed size" error)."""
    daf = _fresh(dafzarr.memory_daf(name="cells"))
    names = {"v"}

    def write(gen: int) -> None:
        daf.set_vector("cell", f"w{gen}", _vector(gen))
        daf.delete_vector("cell", f"w{gen - 1}", must_exist=False)

    reads, bad = _race(
        write,
        lambda: daf.vectors_set("cell"),
        lambda found: 1 if names <= found and len(found) <= 3 else None,
    )
    _check(reads, bad)


def test_a_change_moves_the_generation_once_even_when_it_raises() -> None:
    lock = ChangeLock("test")
    assert lock.generation == 0
    with pytest.raises(dafzarr.DafzarrError), lock:
        assert lock.generation == 1
        with lock:  # a nested change is part of the outer one
            assert lock.generation == 1
            assert lock.read(lambda: "own") == "own"  # the writer reads its pending state
        raise dafzarr.DafzarrError("failed change")
    assert lock.generation == 2


def test_a_read_overlapped_by_a_change_is_made_again_after_it() -> None:
    """The first attempt reads half of the old state, a change comes in, and the read is
    made again: it returns the new state whole."""
    lock = ChangeLock("test")
    state = {"meta": "old", "chunk": "old"}
    attempts: list[tuple[str, str]] = []

    def change() -> None:
        with lock:
            state["meta"] = "new"
            state["chunk"] = "new"

    def read() -> tuple[str, str]:
        meta = state["meta"]
        if not attempts:
            writer = threading.Thread(target=change)
            writer.start()
            writer.join()
        attempts.append((meta, state["chunk"]))
        return meta, state["chunk"]

    assert lock.read(read) == ("new", "new")
    assert attempts == [("old", "new"), ("new", "new")]


def test_a_read_during_another_threads_change_waits_for_it() -> None:
    lock = ChangeLock("test")
    state = ["old"]
    inside, release = threading.Event(), threading.Event()

    def change() -> None:
        with lock:
            state[0] = "half"
            inside.set()
            release.wait(timeout=60)
            state[0] = "new"

    writer = threading.Thread(target=change)
    writer.start()
    assert inside.wait(timeout=60)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(lock.read(lambda: state[0])))
    reader.start()
    reader.join(timeout=0.2)
    assert reader.is_alive()  # waits for the change, never reads "half"
    release.set()
    writer.join(timeout=60)
    reader.join(timeout=60)
    assert got == ["new"]


def _scalar(gen: int) -> Any:
    return gen if gen % 2 == 0 else gen + 0.5


def test_a_property_overwritten_by_another_thread_is_never_missing(
    writable: tuple[Any, Any],
) -> None:
    """``has_*`` and ``get_scalar`` while another thread overwrites: always there, and a
    scalar read is one whole generation."""
    daf, _ = writable
    daf.set_scalar("s", _scalar(1))

    def write(gen: int) -> None:
        daf.set_scalar("s", _scalar(gen), overwrite=True)
        daf.set_vector("cell", "v", _vector(gen), overwrite=True)

    def get() -> Any:
        return (
            daf.has_vector("cell", "v"),
            daf.has_matrix("gene", "cell", "m"),
            daf.has_scalar("s"),
            daf.get_scalar("s"),
        )

    def gen_of(found: Any) -> int | None:
        *present, value = found
        if isinstance(value, int | np.integer):
            whole = value > 0 and value % 2 == 0
        else:
            whole = isinstance(value, float | np.floating) and value % 1 == 0.5
        return 1 if all(present) and whole else None

    reads, bad = _race(write, get, gen_of)
    _check(reads, bad)


def test_two_threads_each_reading_what_the_other_changes_never_wait_forever() -> None:
    """Each thread changes one data set and reads the other: the one whose wait would close
    the cycle gets a ``StateError`` (its change ends), and the other then reads."""
    locks = [ChangeLock("a"), ChangeLock("b")]
    both = threading.Barrier(2, timeout=60)
    outcome: dict[int, str] = {}

    def run(me: int) -> None:
        try:
            with locks[me]:
                both.wait()
                outcome[me] = locks[1 - me].read(lambda: "read")
        except dafzarr.StateError as exc:
            outcome[me] = str(exc)

    # Daemons: were they to wait for each other, the test run would still end.
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "the threads wait for each other"
    failed, read = sorted(outcome.values())  # the error's text sorts first
    assert read == "read"
    assert failed.startswith("can't wait for the change another thread makes to ")
