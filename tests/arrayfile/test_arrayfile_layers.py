"""Sidecars, flush and compact, and the array-format crate's bugs that ArrayFile must not have.

Each ``test_crate_bug_*`` test describes what the crate does; the assertions fail on that
behaviour.
"""

from __future__ import annotations

import itertools
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dafzarr import ArrayFile, DeltaCache, FileConfig
from dafzarr._core.arrayfile import format as fmt

CFG = FileConfig(codec="lz4", block_target_size=256)


def _footer(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    n = fmt.split_trailer(data, fmt.FOOTER_MAGIC, len(data))
    return fmt.decode_footer(data[len(data) - 12 - n : len(data) - 12])


def _sidecars(tmp_path: Path, stem: str = "f") -> list[str]:
    return sorted(p.name for p in tmp_path.glob(f"{stem}.*.af"))


def test_flush_writes_numbered_sidecars_and_compact_removes_them(tmp_path: Path) -> None:
    f = ArrayFile.create(tmp_path / "f.af", config=CFG)
    f.flush()  # nothing pending: no sidecar
    assert _sidecars(tmp_path) == []
    for i in range(3):
        f.define_array(f"a{i}", "i4", ["x"], [100], chunk_shape=[10])
        f.write_array(f"a{i}", [0], np.arange(100, dtype="i4") + i)
        f.flush()
    assert _sidecars(tmp_path) == ["f.1.af", "f.2.af", "f.3.af"]
    assert [_footer(tmp_path / n)["overlay_index"] for n in _sidecars(tmp_path)] == [1, 2, 3]
    assert _footer(tmp_path / "f.2.af")["base_file_hint"] == "f.af"
    assert f.num_layers == 4
    f.compact()
    assert _sidecars(tmp_path) == [] and f.num_layers == 1
    base = _footer(tmp_path / "f.af")
    assert base["overlay_index"] == 0 and base["base_file_hint"] == ""
    assert [a["name"] for a in base["arrays"]] == ["a0", "a1", "a2"]
    f.close()
    with ArrayFile.open(tmp_path / "f.af") as g:
        for i in range(3):
            assert (g.read_array(f"a{i}") == np.arange(100) + i).all()


def test_crate_bug_stale_cache_after_compact(tmp_path: Path) -> None:
    # crate: caches keyed by path; after compact the next flush reuses "f.1.af", and the read
    # returns the old .1.af block from cache
    cache = DeltaCache()
    f = ArrayFile.create(tmp_path / "f.af", config=FileConfig(codec=None, cache=cache))
    f.define_array("a", "u1", ["x"], [8])
    f.write_array("a", [0], np.full(8, 1, "u1"))
    f.flush()
    assert (f.read_array("a") == 1).all()  # block of f.1.af now cached
    f.compact()
    f.write_array("a", [0], np.full(8, 2, "u1"))
    f.flush()
    assert _sidecars(tmp_path) == ["f.1.af"]
    assert (f.read_array("a") == 2).all()
    # a second handle sharing the cache sees the new generation too
    with ArrayFile.open(tmp_path / "f.af", config=FileConfig(cache=cache)) as g:
        assert (g.read_array("a") == 2).all()
    f.close()


def _crate_get_attribute(footers: list[dict[str, Any]], array: str, key: str) -> Any:
    """The crate's lookup: the pairs of the newest meta; the key index resolved in the newest
    layer that has the key; the value index in the newest layer where it is in range."""
    meta = None
    for ft in reversed(footers):
        for a in ft["arrays"]:
            if a["name"] == array:
                meta = a
                break
        if meta is not None:
            break
    assert meta is not None
    for p in meta["attributes"][1]:
        name = next(
            (ft["attr_keys"][p["k"]] for ft in reversed(footers) if p["k"] < len(ft["attr_keys"])),
            None,
        )
        if name == key:
            return next(
                ft["attr_values"][p["v"]]
                for ft in reversed(footers)
                if p["v"] < len(ft["attr_values"])
            )
    return None


def test_crate_bug_attributes_mixed_across_layers(tmp_path: Path) -> None:
    # crate: A has units=m/s (layer 1); B has scale=2 (layer 2); A's chunks rewritten in
    # layer 2 keep layer-1 index pairs, so get_attribute(A, "units") returns 2
    f = ArrayFile.create(tmp_path / "f.af", config=CFG)
    f.define_array("A", "f4", ["x"], [4])
    f.set_attribute("A", "units", "m/s")
    f.flush()
    f.define_array("B", "f4", ["x"], [4])
    f.set_attribute("B", "scale", 2)
    f.write_array("A", [0], np.ones(4, "f4"))
    f.flush()
    assert f.get_attribute("A", "units") == "m/s"
    assert f.get_attribute("A", "scale") is None
    assert f.attributes("B") == {"scale": 2}
    f.close()
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert g.attributes("A") == {"units": "m/s"}
        assert g.attributes("B") == {"scale": 2}
    # written cumulatively: each layer's dictionaries extend the previous layer's, so the
    # crate's own lookup reads the same values
    footers = [_footer(tmp_path / n) for n in ("f.af", "f.1.af", "f.2.af")]
    for older, newer in itertools.pairwise(footers):
        assert newer["attr_keys"][: len(older["attr_keys"])] == older["attr_keys"]
        assert newer["attr_values"][: len(older["attr_values"])] == older["attr_values"]
    assert _crate_get_attribute(footers, "A", "units") == ("String", "m/s")
    assert _crate_get_attribute(footers, "A", "scale") is None
    assert _crate_get_attribute(footers, "B", "scale") == ("Int64", 2)
    with ArrayFile.open(tmp_path / "f.af") as g:
        g.compact()
        assert g.attributes("A") == {"units": "m/s"} and g.attributes("B") == {"scale": 2}
    base = [_footer(tmp_path / "f.af")]
    assert _crate_get_attribute(base, "A", "units") == ("String", "m/s")


@pytest.mark.parametrize("flush_between", [False, True])
def test_crate_bug_deleted_data_comes_back(tmp_path: Path, flush_between: bool) -> None:
    # crate: a tombstone falls through to older layers, and compact unions every layer's
    # coords, so unwritten chunks of a re-defined array show the pre-delete data
    f = ArrayFile.create(tmp_path / "f.af", config=CFG)
    f.define_array("a", "i8", ["x"], [20], chunk_shape=[5], fill_value=0)
    f.write_array("a", [0], np.arange(1, 21))
    f.set_attribute("a", "old", 1)
    f.flush()
    f.delete("a")
    assert "a" not in f and f.list_arrays() == []
    if flush_between:
        f.flush()
    f.define_array("a", "i8", ["x"], [20], chunk_shape=[5], fill_value=0)
    f.write_array("a", [5], np.full(5, -1))
    expected = np.zeros(20, "i8")
    expected[5:10] = -1
    assert (f.read_array("a") == expected).all()
    assert f.attributes("a") == {}
    f.flush()
    assert (f.read_array("a") == expected).all()
    s = f.array_stats("a")
    assert s is not None and (s.min, s.max, s.null_count) == (-1, -1, 15)
    f.close()
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert (g.read_array("a") == expected).all()
        assert g.attributes("a") == {}
        g.compact()
        assert (g.read_array("a") == expected).all()
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert (g.read_array("a") == expected).all()
        (meta,) = _footer(tmp_path / "f.af")["arrays"]
        assert meta["layout"]["storage"]["chunks"].coords.tolist() == [[1]]


def test_delete_drops_array_and_stats_at_compact(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        f.define_array("a", "u1", ["x"], [4])
        f.write_array("a", [0], np.arange(4, dtype="u1"))
        f.define_array("b", "u1", ["x"], [4])
        f.write_array("b", [0], np.arange(4, dtype="u1"))
        f.flush()
        f.delete("b")
        f.flush()
        with pytest.raises(KeyError):
            f.array_stats("b")
        f.compact()
        assert [a["name"] for a in _footer(tmp_path / "f.af")["arrays"]] == ["a"]
    _, stats = fmt.decode_stats((tmp_path / "f.stats").read_bytes()[:-12])
    assert [e["name"] for e in stats] == ["a"]


def test_crate_bug_sidecar_number_with_gaps(tmp_path: Path) -> None:
    # crate: the next sidecar is deltas.len(); with .1 and .3 present it overwrites .3
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        for i in range(3):
            f.define_array(f"a{i}", "u1", ["x"], [3])
            f.write_array(f"a{i}", [0], np.full(3, i, "u1"))
            f.flush()
    (tmp_path / "f.2.af").unlink()  # a gap: .1 and .3 remain
    third = (tmp_path / "f.3.af").read_bytes()
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert f.num_layers == 3
        f.define_array("b", "u1", ["x"], [3])
        f.flush()
    assert (tmp_path / "f.3.af").read_bytes() == third
    assert _sidecars(tmp_path) == ["f.1.af", "f.3.af", "f.4.af"]
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert f.list_arrays() == ["a0", "a2", "b"]


def test_crate_bug_two_writers_never_overwrite(tmp_path: Path) -> None:
    # crate: no create-only put, both handles pick .1.af and the last writer wins
    ArrayFile.create(tmp_path / "f.af").close()
    w1 = ArrayFile.open(tmp_path / "f.af")
    w2 = ArrayFile.open(tmp_path / "f.af")
    w1.define_array("one", "u1", ["x"], [2])
    w1.write_array("one", [0], np.array([1, 1], "u1"))
    w2.define_array("two", "u1", ["x"], [2])
    w2.write_array("two", [0], np.array([2, 2], "u1"))
    w1.flush()
    w2.flush()
    assert _sidecars(tmp_path) == ["f.1.af", "f.2.af"]
    w1.close()
    w2.close()
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert f.list_arrays() == ["one", "two"]
        assert f.read_array("two").tolist() == [2, 2]


def test_discovery_rules(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        f.define_array("a", "u1", ["x"], [1])
    # leading zeros parse; 0, non-numbers, other stems and sub-directories are ignored
    (tmp_path / "f.01.af").write_bytes((tmp_path / "f.1.af").read_bytes())
    (tmp_path / "f.1.af").unlink()
    for junk in ("f.0.af", "f.x.af", "g.2.af", "f.4294967296.af"):
        (tmp_path / junk).write_bytes(b"junk")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.3.af").write_bytes(b"junk")
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert f.num_layers == 2 and f.list_arrays() == ["a"]


def test_compact_failure_before_base_keeps_everything(tmp_path: Path) -> None:
    f = ArrayFile.create(tmp_path / "f.af", config=CFG)
    f.define_array("a", "i2", ["x"], [6], chunk_shape=[2])
    f.write_array("a", [0], np.arange(6, dtype="i2"))
    f.flush()
    before = {n: (tmp_path / n).read_bytes() for n in ("f.af", "f.1.af")}

    def failing_put(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    f._backend.put = failing_put  # type: ignore[method-assign]
    with pytest.raises(OSError, match="space"):
        f.compact()
    assert {n: (tmp_path / n).read_bytes() for n in ("f.af", "f.1.af")} == before
    f.close(flush=False)
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert g.read_array("a").tolist() == list(range(6))


def test_compact_failure_while_deleting_sidecars_reads_the_same(tmp_path: Path) -> None:
    f = ArrayFile.create(tmp_path / "f.af", config=CFG)
    f.define_array("a", "i2", ["x"], [6], chunk_shape=[2])
    for i in range(4):
        f.write_array("a", [i], np.full(2, 10 * i, "i2"))
        f.flush()
    expected = f.read_array("a")
    real_delete = f._backend.delete
    calls: list[str] = []

    def delete_two_then_fail(key: str) -> None:
        calls.append(key)
        if len(calls) > 2:
            raise PermissionError(13, "Permission denied", key)
        real_delete(key)

    f._backend.delete = delete_two_then_fail  # type: ignore[method-assign]
    with pytest.raises(PermissionError):
        f.compact()
    # oldest first: .1 and .2 are gone, .3 and .4 remain above the new base
    assert [Path(c).name for c in calls] == ["f.1.af", "f.2.af", "f.3.af"]
    assert _sidecars(tmp_path) == ["f.3.af", "f.4.af"]
    # the same handle goes on above the remaining sidecars (not at .1, below them)
    f._backend.delete = real_delete  # type: ignore[method-assign]
    f.write_array("a", [0], np.array([-7], "i2"))
    f.flush()
    assert _sidecars(tmp_path) == ["f.3.af", "f.4.af", "f.5.af"]
    expected[0] = -7
    f.close(flush=False)
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert (g.read_array("a") == expected).all()
    (tmp_path / "f.5.af").unlink()
    expected[0] = 0
    with ArrayFile.open(tmp_path / "f.af") as g:
        assert (g.read_array("a") == expected).all()
        g.write_array("a", [5], np.array([99], "i2"))
        g.flush()
        assert _sidecars(tmp_path) == ["f.3.af", "f.4.af", "f.5.af"]
        g.compact()
        assert _sidecars(tmp_path) == []
        expected[5] = 99
        assert (g.read_array("a") == expected).all()


def test_open_reads_one_suffix_per_layer(tmp_path: Path) -> None:
    obstore_store = pytest.importorskip("obstore.store")
    import obstore

    store = obstore_store.MemoryStore()
    with ArrayFile.create((store, "x/f.af"), config=CFG) as f:
        for i in range(3):
            f.define_array(f"a{i}", "u1", ["x"], [3])
            f.write_array(f"a{i}", [0], np.full(3, i, "u1"))
            f.flush()
    calls: list[Any] = []
    real_get = obstore.get

    def counting_get(store: Any, path: str, *, options: Any = None) -> Any:
        calls.append((path, options))
        return real_get(store, path, options=options)

    obstore.get = counting_get  # type: ignore[assignment]
    try:
        g = ArrayFile.open((store, "x/f.af"))
    finally:
        obstore.get = real_get  # type: ignore[assignment]
    layer_gets = [c for c in calls if c[0].endswith(".af")]
    assert len(layer_gets) == 4
    assert all(c[1] == {"range": {"suffix": 65536}} for c in layer_gets)
    assert g.read_array("a2").tolist() == [2, 2, 2]
    g.close()


def test_large_footer_needs_a_second_read(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        f.define_array("many", "u1", ["x", "y"], [100, 100], chunk_shape=[1, 1])
        f.write_array("many", [0, 0], np.ones((100, 100), "u1"))
    assert (tmp_path / "f.1.af").stat().st_size > 65536 * 4
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert (f.read_array("many") == 1).all()


def test_redefined_array_shows_no_old_statistics(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        f.define_array("a", "i4", ["x"], [4])
        f.write_array("a", [0], np.array([5, 6, 7, 8], "i4"))
        f.flush()
        assert f.array_stats("a") is not None
        f.delete("a")
        f.define_array("a", "i4", ["x"], [4])
        f.flush()
        assert f.array_stats("a") is None
    with ArrayFile.open(tmp_path / "f.af") as f:
        assert f.array_stats("a") is None


def test_create_refuses_leftovers_of_an_earlier_file_set(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "f.af", config=CFG) as f:
        f.define_array("a", "i4", ["x"], [4])
        f.write_array("a", [0], np.arange(4, dtype="i4"))
    (tmp_path / "f.af").unlink()
    with pytest.raises(FileExistsError, match="sidecars"):
        ArrayFile.create(tmp_path / "f.af")
    (tmp_path / "f.1.af").unlink()
    with pytest.raises(FileExistsError, match="statistics"):
        ArrayFile.create(tmp_path / "f.af")


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_sidecars_statistics_and_compaction_keep_the_base_files_mode(
    tmp_path: Path, mode: int
) -> None:
    """Under umask 022, everything derived from a 0600 or 0640 base (sidecars with blocks or
    metadata only, the statistics, the compacted base) has the base's permission bits."""
    old_umask = os.umask(0o022)
    try:
        ArrayFile.create(tmp_path / "f.af", config=CFG).close()
        os.chmod(tmp_path / "f.af", mode)
        with ArrayFile.open(tmp_path / "f.af", config=CFG) as f:
            f.define_array("a", "u1", ["x"], [600], chunk_shape=[100])
            f.write_array("a", [0], np.arange(600, dtype="u1"))
            f.flush()  # a sidecar with blocks, and the statistics
            f.set_attribute("a", "units", "m")
            f.flush()  # a sidecar of metadata only
            derived = sorted(p.name for p in tmp_path.iterdir())
            assert derived == ["f.1.af", "f.2.af", "f.af", "f.stats"], derived
            modes = {n: stat.S_IMODE((tmp_path / n).stat().st_mode) for n in derived}
            assert modes == dict.fromkeys(derived, mode)
            f.compact()
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
        assert modes == {"f.af": mode, "f.stats": mode}
    finally:
        os.umask(old_umask)
