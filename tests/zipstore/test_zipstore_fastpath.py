"""Small entries written inside a batch through the compiled path, and ``set_many``.

Inside a ``batch()``, a new small entry (plain ASCII key, ``bytes``-like value of at most
16 KiB) is written by one compiled call (``dafzarr._zipdir.stage_small``); everything else
goes the general way. Both must leave the same bytes in the file, the same errors for bad
input, and the same crash safety: a process killed during a batch leaves the archive as the
last batch that returned committed it, or with that batch too.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dafzarr._core.zipstore.commit as commit_module
from dafzarr import MmapZipStore
from dafzarr._zipdir import SMALL_VALUE_MAX, Entry, gather_records, live_entries, renumber
from dafzarr.errors import (
    AppendOnlyError,
    ArchiveFullError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    RecoveryWarning,
)
from tests.helpers.common import check_archive

# --- Helpers --------------------------------------------------------------------------------


def _rng_bytes(seed: int, n: int) -> bytes:
    return np.random.default_rng(seed).bytes(n)


def _batches() -> list[list[tuple[str, Any]]]:
    """Batches that mix what the compiled path writes with what it leaves to the general
    path (names it must check, existing keys, values of other types or sizes)."""
    small = [(f"small/{i:05d}", _rng_bytes(i, i % 300)) for i in range(600)]
    edge = [
        ("zarr.json", b'{"zarr_format": 3}'),  # a dot, not a relative component
        (".zattrs", b"{}"),
        ("a/.b/c..d", b"dots"),
        ("é/ü", b"non-ASCII"),
        ("exact", _rng_bytes(1, SMALL_VALUE_MAX)),
        ("over", _rng_bytes(2, SMALL_VALUE_MAX + 1)),
        ("empty", b""),
        ("ba", bytearray(b"a bytearray")),
        ("mv", memoryview(b"a memoryview")),
        ("mv-strided", memoryview(b"0123456789")[::2]),
        ("mv-float", memoryview(np.arange(4, dtype=np.float64))),
        ("np", np.arange(10, dtype=np.int32)),
        ("np-f", np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4))),
    ]
    rewrites = [("small/00001", b"rewritten"), ("zarr.json", b"{}"), ("new", b"n")]
    return [small[:300], edge, small[300:], rewrites]


def _expected_bytes(value: Any) -> bytes:
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    return bytes(value)


def _write(path: Path, batches: list[list[tuple[str, Any]]], *, use_set_many: bool) -> None:
    with MmapZipStore(path, "w") as store:
        expected: dict[str, bytes] = {}
        for items in batches:
            if use_set_many:
                store.set_many(items)
            else:
                with store.batch():
                    for k, v in items:
                        store[k] = v
            expected.update((k, _expected_bytes(v)) for k, v in items)
            # a valid archive after every batch, for every reader
            check_archive(path, expected)
            assert {k: bytes(store[k]) for k in store} == expected


# --- Same bytes as the general path ---------------------------------------------------------


@pytest.mark.parametrize("use_set_many", [False, True], ids=["setitem", "set_many"])
def test_same_bytes_as_the_general_path(tmp_path: Path, use_set_many: bool) -> None:
    fast, general = tmp_path / "fast.zip", tmp_path / "general.zip"
    _write(fast, _batches(), use_set_many=use_set_many)
    previous = commit_module.step_hook
    commit_module.step_hook = lambda name: None
    try:
        _write(general, _batches(), use_set_many=False)
    finally:
        commit_module.step_hook = previous
    assert fast.read_bytes() == general.read_bytes()


def test_small_entries_in_a_batch_take_the_compiled_path(tmp_path: Path) -> None:
    """Inside a batch, only the relocations of the directory (a handful for 2,000 entries)
    go through the general path's ``add_entry``."""
    calls = []
    original = commit_module.add_entry

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[3])
        return original(*args, **kwargs)

    commit_module.add_entry = counting
    try:
        with MmapZipStore(tmp_path / "a.zip", "w") as store:
            with store.batch():
                for i in range(1000):
                    store[f"k/{i}"] = b"x" * 100
            store.set_many((f"m/{i}", b"y" * 100) for i in range(1000))
    finally:
        commit_module.add_entry = original
    assert len(calls) < 20, calls
    check_archive(tmp_path / "a.zip")


def test_general_path_without_a_batch(tmp_path: Path) -> None:
    """Outside a batch each write commits at once, as before (the file is valid and holds
    the entry when the assignment returns)."""
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        for i in range(5):
            store[f"k{i}"] = b"v" * i
            with zipfile.ZipFile(path) as z:
                assert z.read(f"k{i}") == b"v" * i


# --- Bad input: the same errors, and a failed batch leaves nothing ---------------------------


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ("", InvalidArgumentError),
        ("/abs", InvalidArgumentError),
        ("dir/", InvalidArgumentError),
        ("a//b", InvalidArgumentError),
        ("a/../b", InvalidArgumentError),
        ("./a", InvalidArgumentError),
        ("a/.", InvalidArgumentError),
        ("back\\slash", InvalidArgumentError),
        ("nul\x00", InvalidArgumentError),
        ("x" * 65536, InvalidArgumentError),
        (b"bytes", InvalidArgumentTypeError),
        (7, InvalidArgumentTypeError),
    ],
)
def test_bad_keys_refused_inside_a_batch(tmp_path: Path, key: Any, error: type) -> None:
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        store["kept"] = b"committed"
        with pytest.raises(error), store.batch():
            store["first"] = b"in the failed batch"
            store[key] = b"v"
        assert list(store) == ["kept"]
        with pytest.raises(error):
            store.set_many([("other", b"in the failed batch"), (key, b"v")])
        assert list(store) == ["kept"]
    check_archive(path, {"kept": b"committed"})


def test_bad_values_refused_inside_a_batch(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        with pytest.raises(InvalidArgumentTypeError), store.batch():
            store["a"] = b"ok"
            store["b"] = 12
        released = memoryview(b"gone")
        released.release()
        with pytest.raises(ValueError), store.batch():
            store["c"] = released
        assert list(store) == []
    check_archive(path, {})


# Arrays whose bytes do not hold their values: what each message says.
_LOSSY_ARRAYS: dict[str, tuple[Any, str]] = {
    "masked": (np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]), "1 masked value"),
    "masked 2-d": (np.ma.masked_array(np.ones((2, 3), "i4"), mask=np.eye(2, 3)), "2 masked value"),
    "masked constant": (np.ma.masked, "1 masked value"),
    "objects": (np.array([b"a", 1], dtype=object), "array of Python objects"),
    "strings as objects": (np.array(["a", "b"], dtype=object), "array of Python objects"),
    "object field": (np.zeros(2, dtype=[("n", "i4"), ("o", "O")]), "array of Python objects"),
}


@pytest.mark.parametrize("kind", sorted(_LOSSY_ARRAYS))
def test_masked_and_object_arrays_refused(tmp_path: Path, kind: str) -> None:
    """Refused by name on every way in (one put, a batch, ``set_many``), leaving nothing."""
    value, why = _LOSSY_ARRAYS[kind]
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        store["kept"] = b"committed"
        puts = [
            lambda: store.__setitem__("bad", value),
            lambda: store.set_many([("first", b"in the failed batch"), ("bad", value)]),
            lambda: store.set_streamed("bad", 16, [value]),
        ]
        for put in puts:
            with pytest.raises(InvalidArgumentTypeError, match=f"a.zip: entry 'bad': .*{why}"):
                put()
            assert list(store) == ["kept"]
        with pytest.raises(InvalidArgumentTypeError, match="entry 'bad'"), store.batch():
            store["first"] = b"in the failed batch"
            store["bad"] = value
        assert list(store) == ["kept"]
        # A masked array that masks nothing is its data.
        store["unmasked"] = np.ma.masked_array(np.arange(3, dtype="<i4"))
        assert bytes(store["unmasked"]) == np.arange(3, dtype="<i4").tobytes()
    check_archive(path, {"kept": b"committed", "unmasked": np.arange(3, dtype="<i4").tobytes()})


def test_append_only_refuses_rewrites_inside_a_batch(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w", append_only=True) as store:
        store.set_many([("a", b"1"), ("b", b"2")])
        with pytest.raises(AppendOnlyError):
            store.set_many([("c", b"3"), ("a", b"changed")])
        store.set_many([("a", b"1")])  # the same bytes: nothing to do
        assert {k: bytes(store[k]) for k in store} == {"a": b"1", "b": b"2"}
    check_archive(path, {"a": b"1", "b": b"2"})


def test_set_many_takes_a_mapping_and_joins_an_open_batch(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        store.set_many({"m/1": b"one", "m/2": np.arange(3, dtype=np.uint8)})
        with pytest.raises(RuntimeError), store.batch():
            store.set_many({"m/3": b"three"})
            raise RuntimeError("abandon the batch")
        assert sorted(store) == ["m/1", "m/2"]
        with pytest.raises(ValueError):
            store.set_many([("pair", b"v", "extra")])  # type: ignore[list-item]
    check_archive(path, {"m/1": b"one", "m/2": b"\x00\x01\x02"})


def test_max_file_size_inside_a_batch(tmp_path: Path) -> None:
    """The compiled path leaves an entry that would pass ``max_file_size`` to the general
    path, which refuses it with the usual error; the batch is abandoned."""
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w", max_file_size=4096) as store:
        store["a"] = b"x"
        with pytest.raises(ArchiveFullError), store.batch():
            for i in range(100):
                store[f"k/{i}"] = b"y" * 100
        assert list(store) == ["a"]
    check_archive(path, {"a": b"x"})


# --- SIGKILL during batches written by the compiled path ------------------------------------

_CHILD = r"""
import sys
from dafzarr import MmapZipStore

path, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = MmapZipStore(path, "r+")
print("ready", flush=True)
for b in range(batches):
    items = [(f"b{b:04d}/{i:04d}", bytes([b % 256]) * (i % size)) for i in range(500)]
    if b % 2:
        store.set_many(items)
    else:
        with store.batch():
            for k, v in items:
                store[k] = v
    print(b, flush=True)
print("done", flush=True)
"""


def _batch_items(b: int, size: int) -> dict[str, bytes]:
    return {f"b{b:04d}/{i:04d}": bytes([b % 256]) * (i % size) for i in range(500)}


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5, 1.0])
def test_sigkill_during_batches_leaves_a_committed_state(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "a.zip"
    size = 300
    with MmapZipStore(path, "w") as store:
        store.set_many({"base/0": b"kept", "base/1": b"also kept"})
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), "100000", str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read() if proc.stderr else ""
        time.sleep(delay)
        proc.kill()  # SIGKILL
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -9, err.decode()
    lines = out.decode().split("\n")
    assert "done" not in lines
    reported = [int(ln) for ln in lines[:-1] if ln]  # the last element may be cut short
    assert reported == list(range(len(reported)))
    with warnings.catch_warnings():  # a writable open recovers what the kill left
        warnings.simplefilter("ignore", RecoveryWarning)
        store = MmapZipStore(path, "r+")
    with store:
        keys = set(store)
        contents = {k: bytes(store[k]) for k in keys}
    committed = {"base/0": b"kept", "base/1": b"also kept"}
    for b in reported:
        committed.update(_batch_items(b, size))
    # the batch in flight may have reached its commit point before the kill
    with_next = {**committed, **_batch_items(len(reported), size)}
    assert contents in (committed, with_next), (len(reported), len(keys))
    check_archive(path, contents)


# --- The directory after rewrites and deletes, gathered in compiled loops --------------------


def _reference_live(
    entries: list[Entry], index: dict[str, Entry], dropped: set[str]
) -> list[Entry]:
    """The definition the compiled ``live_entries`` follows."""
    folders = {e.name: e for e in entries if e.is_dir and e.name not in dropped}
    return [e for e in entries if (folders.get(e.name) if e.is_dir else index.get(e.name)) is e]


def test_live_entries_and_records_match_their_definition() -> None:
    names = ["a", "d/", "b", "a", "d/", "e/", "c", "b", "f/"]
    entries, cd = [], bytearray()
    for i, name in enumerate(names):
        record = bytes([i]) * (10 + i)
        entries.append(Entry(name, 0, 0x800, 0, 1, 1, 100 * i, len(cd), len(record)))
        cd += record
    index = {e.name: e for e in entries if not e.is_dir}
    del index["c"]  # deleted
    for dropped in (set(), {"d/"}, {"e/", "f/", "d/"}):
        keep = live_entries(entries, index, dropped)
        assert keep == _reference_live(entries, index, dropped)
        records = gather_records(keep, cd)
        assert records == b"".join(bytes(cd[e.cd_pos : e.cd_pos + e.cd_len]) for e in keep)
    keep = live_entries(entries, index, set())
    assert [e.name for e in keep] == ["a", "d/", "e/", "b", "f/"]
    assert renumber(keep) == 300
    assert [e.cd_pos for e in keep] == [0, 13, 27, 42, 59]
    assert live_entries([], {}, set()) == [] and renumber([]) == -1


@pytest.mark.parametrize("durable", [False, True])
def test_streamed_entries_in_a_batch_of_a_durable_store(tmp_path: Path, durable: bool) -> None:
    """An entry streamed inside a batch has no record in the archive's live directory until
    the batch commits: a durable store syncs its data and header, not that record (a sync of
    it read past the end of the file)."""
    path = tmp_path / "s.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("old", b"x" * 1000)
    blocks = [np.arange(5000, dtype=np.int64), np.arange(3000, dtype=np.int64)]
    with MmapZipStore(path, "r+", durable=durable) as store, store.batch():
        store.set_streamed("new", 64_000, blocks)
        store.set_streamed("more", 40_000, [blocks[0]])
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert z.read("new") == np.concatenate(blocks).tobytes()
        assert z.read("more") == blocks[0].tobytes()
        assert z.read("old") == b"x" * 1000
