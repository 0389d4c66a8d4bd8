"""ArrayFile API: types, regions, fill values, codecs, statistics, attributes, validation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dafzarr
from dafzarr import ArrayFile, ArrayStats, DeltaCache, FileConfig
from dafzarr._core.arrayfile.types import dtype_info, fill_element
from dafzarr.arrayfile import ArrayExistsError, ArrayNotFoundError
from dafzarr.errors import InvalidArgumentTypeError, UnsafeCastError

Factory = Callable[..., ArrayFile]


@pytest.fixture(params=["local", "memory", "obstore-memory", "obstore-local"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """Create (and reopen, where the backend persists) a file set on each backend."""
    kind = request.param
    made: list[ArrayFile] = []
    store: Any = None
    if kind.startswith("obstore"):
        obstore_store = pytest.importorskip("obstore.store")
        store = (
            obstore_store.MemoryStore()
            if kind == "obstore-memory"
            else obstore_store.LocalStore(str(tmp_path))
        )

    def factory(*, reopen: bool = False, **config: Any) -> ArrayFile:
        cfg = FileConfig(**config)
        if kind == "memory":
            if reopen:
                pytest.skip("an in-memory file set cannot be reopened")
            f = ArrayFile.create_memory(cfg)
        elif kind == "local":
            target = tmp_path / "data.af"
            f = (
                ArrayFile.open(target, config=cfg)
                if reopen
                else ArrayFile.create(target, config=cfg)
            )
        else:
            f = (
                ArrayFile.open((store, "dir/data.af"), config=cfg)
                if reopen
                else ArrayFile.create((store, "dir/data.af"), config=cfg)
            )
        made.append(f)
        return f

    yield factory
    for f in made:
        f.close(flush=False)


DTYPES = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8"]


@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
def test_roundtrip_all_fixed_types(make: Factory, codec: str | None) -> None:
    f = make(codec=codec, block_target_size=4096)
    rng = np.random.default_rng(0)
    data = {}
    for dt in DTYPES:
        x = (rng.random((23, 17)) * 100).astype(dt)
        f.define_array(dt, dt, ["r", "c"], x.shape, chunk_shape=[5, 4])
        f.write_array(dt, [0, 0], x)
        data[dt] = x
    t = np.array(["2020-01-01T00:00:00.000000001", "1969-12-31", "NaT"], "datetime64[ns]")
    f.define_array("ts", "datetime64[ns]", ["t"], [3], chunk_shape=[2])
    f.write_array("ts", [0], t)
    for dt, x in data.items():
        np.testing.assert_array_equal(f.read_array(dt), x)
    f.flush()
    f.close()
    g = make(reopen=True, codec=codec)
    for dt, x in data.items():
        got = g.read_array(dt)
        assert got.dtype == np.dtype(dt)
        np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(g.read_array("ts"), t)
    assert g.list_arrays() == [*DTYPES, "ts"]


def test_masked_arrays_that_mask_values_are_refused_by_name(make: Factory) -> None:
    """No ArrayFile layout keeps a mask: the values under it would be stored as data."""
    f = make()
    f.define_array("x", "f4", ["r"], [4], chunk_shape=[2])
    f.define_array("s", "String", ["r"], [2], chunk_shape=[2])
    masked = np.ma.masked_array(np.arange(4, dtype="f4"), mask=[0, 1, 0, 0])
    with pytest.raises(InvalidArgumentTypeError, match=r"'x'.*1 masked value"):
        f.write_array("x", [0], masked)
    with pytest.raises(InvalidArgumentTypeError, match="masked"):
        f.write_array("s", [0], np.ma.masked_array(np.array(["a", "b"], object), mask=[1, 0]))
    f.write_array("x", [0], np.ma.masked_array(np.arange(4, dtype="f4")))  # masks nothing
    np.testing.assert_array_equal(f.read_array("x"), np.arange(4, dtype="f4"))


def test_partial_writes_and_regions(make: Factory) -> None:
    f = make(block_target_size=1000)
    f.define_array("a", "i8", ["x", "y", "z"], [9, 8, 7], chunk_shape=[4, 3, 5], fill_value=-1)
    model = np.full((9, 8, 7), -1, "i8")
    rng = np.random.default_rng(1)
    for _ in range(25):
        st = [int(rng.integers(0, s)) for s in model.shape]
        sh = [int(rng.integers(1, s - a + 1)) for s, a in zip(model.shape, st, strict=True)]
        x = rng.integers(-1000, 1000, sh)
        f.write_array("a", st, x)
        model[tuple(slice(a, a + n) for a, n in zip(st, sh, strict=True))] = x
        if rng.random() < 0.3:
            f.flush()
        rs = [int(rng.integers(0, s)) for s in model.shape]
        rsh = [int(rng.integers(0, s - a + 1)) for s, a in zip(model.shape, rs, strict=True)]
        np.testing.assert_array_equal(
            f.read_array("a", rs, rsh),
            model[tuple(slice(a, a + n) for a, n in zip(rs, rsh, strict=True))],
        )
    f.flush()
    np.testing.assert_array_equal(f.read_array("a"), model)
    f.compact()
    np.testing.assert_array_equal(f.read_array("a"), model)
    assert f.num_layers == 1


def test_variable_length_types(make: Factory) -> None:
    f = make()
    words = np.array([["cat", "", "elephant"], ["é", "日本", "x" * 100]], dtype=object)
    f.define_array("s", str, ["r", "c"], [2, 3], chunk_shape=[1, 2])
    f.write_array("s", [0, 0], words)
    f.define_array("b", bytes, ["n"], [4], chunk_shape=[3])
    f.write_array("b", [1], np.array([b"\x00\xff", b"", b"zz"], dtype=object))
    f.flush()
    f.write_array("s", [1, 1], np.array([["new"]], dtype=object))  # partial rewrite
    words[1, 1] = "new"
    np.testing.assert_array_equal(f.read_array("s"), words)
    assert f.read_array("b").tolist() == [b"", b"\x00\xff", b"", b"zz"]
    f.flush()
    s = f.array_stats("s")
    assert s is not None and (s.min, s.max) == ("", "é")
    f.close()


def test_vlen_chunk_layout_matches_the_format(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "v.af", config=FileConfig(codec=None)) as f:
        f.define_array("s", str, ["n"], [3])
        f.write_array("s", [0], ["cat", "", "elephant"])
    data = (tmp_path / "v.1.af").read_bytes()
    assert data[:27] == np.array([0, 3, 3, 11], "<u4").tobytes() + b"catelephant"


def test_zero_dimensional_array(make: Factory) -> None:
    f = make()
    f.define_array("scalar", "f8", [], [], fill_value=2.5)
    assert f.read_array("scalar")[()] == 2.5
    f.write_array("scalar", [], np.float64(7.0))
    f.flush()
    assert f.read_array("scalar").shape == () and f.read_array("scalar")[()] == 7.0
    stats = f.array_stats("scalar")
    assert stats == ArrayStats(7.0, 7.0, 0, 1)
    f.define_array("word", str, [], [])
    assert f.read_array("word").shape == () and f.read_array("word")[()] == ""
    f.write_array("word", [], np.array("hello", dtype=object))
    f.flush()
    got = f.read_array("word")
    assert got.shape == () and got[()] == "hello"


def test_fill_values_are_stored_exactly(make: Factory) -> None:
    f = make()
    f.define_array("f", "f4", ["x"], [3], fill_value=3)
    f.define_array("t", "datetime64[ns]", ["x"], [2], fill_value=np.datetime64(5, "ns"))
    f.define_array("b", "i4", ["x"], [2], fill_value=True)  # the crate reads a Bool fill as 0
    f.define_array("w", "f4", ["x"], [2], fill_value=0.1)  # rounded to float32
    assert f.read_array("f").tolist() == [3.0] * 3
    assert f.read_array("t").view("i8").tolist() == [5, 5]
    assert f.read_array("b").tolist() == [1, 1]
    assert f.read_array("w").tolist() == [np.float32(0.1)] * 2
    with pytest.raises(ValueError, match="fill_value"):
        f.define_array("bad", str, ["x"], [1], fill_value="x")


@pytest.mark.parametrize(
    ("dtype", "fill", "why"),
    [
        ("u1", -1, "outside 0..255"),
        ("i2", 1e9, "floating-point"),
        ("i4", float("nan"), "floating-point"),
        ("i4", 2**40, "outside"),
        ("u8", 2**64, "64 bits"),
        ("f4", 1e300, "infinity"),
        ("datetime64[ns]", np.datetime64("2500-01-01", "s"), "does not fit"),
    ],
)
def test_fill_values_that_do_not_fit_are_refused(
    make: Factory, dtype: str, fill: Any, why: str
) -> None:
    f = make()
    with pytest.raises(UnsafeCastError, match=rf"array 'a': fill_value: .*{why}"):
        f.define_array("a", dtype, ["x"], [3], fill_value=fill)
    assert "a" not in f


def test_fill_values_of_other_writers_read_with_the_crate_casts() -> None:
    # files written by the crate may hold fills their type cannot hold: read as the crate does
    u1, i2, i4 = (dtype_info(t) for t in ("u1", "i2", "i4"))
    assert fill_element(u1, ("Int", -1)) == 255  # wraps
    assert fill_element(i2, ("Float", 1e9)) == 32767  # saturates
    assert fill_element(i4, ("Float", float("nan"))) == 0
    assert fill_element(i4, ("Bool", True)) == 0


def test_statistics_rules(make: Factory) -> None:
    f = make()
    f.define_array("f", "f8", ["x"], [6], chunk_shape=[2], fill_value=0.0)
    f.write_array("f", [0], np.array([0.0, -3.0, 5.0, np.nan]))
    f.define_array("i", "i4", ["x"], [4], fill_value=7)
    f.write_array("i", [0], np.array([7, 7, 1, 9], "i4"))
    f.define_array("e", "u2", ["x"], [4], chunk_shape=[2], fill_value=1)
    f.write_array("e", [0], np.array([1, 1], "u2"))
    f.flush()
    s = f.array_stats("f")
    # NaN is not the fill, so it enters max under the total order; chunk 3 was never written
    assert s is not None and s.min == -3.0 and np.isnan(s.max)
    assert (s.null_count, s.row_count) == (6 - 3, 6)
    assert f.array_stats("i") == ArrayStats(1, 9, 2, 4)
    assert f.array_stats("e") == ArrayStats(None, None, 4, 4)
    # a later flush that touches one chunk recomputes the whole array
    f.write_array("f", [4], np.array([-10.0, 1.0]))
    f.flush()
    s = f.array_stats("f")
    assert s is not None and s.min == -10.0 and s.null_count == 1


def test_attributes(make: Factory) -> None:
    f = make()
    f.define_array("a", "u1", ["x"], [2])
    f.set_attribute("a", "units", "m/s")
    f.set_attribute("a", "scale", 2)
    f.set_attribute("a", "ok", True)
    f.set_attribute("a", "w", np.float32(0.5))
    f.flush()
    f.close()
    g = make(reopen=True)
    assert g.attributes("a") == {"units": "m/s", "scale": 2, "ok": True, "w": 0.5}
    assert g.get_attribute("a", "missing", default=3) == 3
    with pytest.raises(TypeError):
        g.set_attribute("a", "bad", [1, 2])


def test_validation_errors(make: Factory) -> None:
    f = make()
    with pytest.raises(ValueError, match="zero-length"):
        f.define_array("z", "f4", ["x"], [0])
    with pytest.raises(OverflowError, match="u32"):
        f.define_array("big", "u1", ["x"], [2**32])
    with pytest.raises(OverflowError, match="u32"):
        f.define_array("neg", "u1", ["x"], [-1])
    with pytest.raises(OverflowError, match="chunk"):
        f.define_array("huge", "f8", ["x", "y"], [2**31, 2**31], chunk_shape=[2**16, 2**16])
    with pytest.raises(ValueError, match="axes"):
        f.define_array("c", "f4", ["x"], [4], chunk_shape=[2, 2])
    with pytest.raises(ValueError, match="dimension names"):
        f.define_array("d", "f4", ["x", "y"], [4])
    with pytest.raises(TypeError, match="unsupported dtype"):
        f.define_array("d", "c16", ["x"], [4])
    f.define_array("a", "f4", ["x"], [4])
    with pytest.raises(ArrayExistsError):
        f.define_array("a", "f4", ["x"], [4])
    with pytest.raises(IndexError, match="'a'"):
        f.write_array("a", [2], np.zeros(3, "f4"))
    with pytest.raises(ValueError, match="axes"):
        f.read_array("a", [0, 0])
    with pytest.raises(TypeError, match="float32"):
        f.write_array("a", [0], np.array(["x"]))
    with pytest.raises(ArrayNotFoundError):
        f.read_array("nope")
    with pytest.raises(KeyError):
        f.delete("nope")
    f.close()
    with pytest.raises(ValueError, match="closed"):
        f.read_array("a")


def test_targets_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.af"):
        ArrayFile.create(tmp_path / "x.zarr")
    with pytest.raises(FileNotFoundError):
        ArrayFile.open(tmp_path / "missing.af")
    ArrayFile.create(tmp_path / "x.af").close()
    with pytest.raises(FileExistsError):
        ArrayFile.create(tmp_path / "x.af")
    with pytest.raises(TypeError):
        ArrayFile(None, "k", "k", FileConfig(), _token=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="codec"):
        FileConfig(codec="gzip")


def test_shared_cache_budget(tmp_path: Path) -> None:
    cache = DeltaCache(block_bytes=3000, io_bytes=0)
    cfg = FileConfig(codec="lz4", block_target_size=1000, cache=cache)
    files = [ArrayFile.create(tmp_path / f"f{i}.af", config=cfg) for i in range(3)]
    for i, f in enumerate(files):
        f.define_array("a", "u1", ["x"], [5000], chunk_shape=[1000])
        f.write_array("a", [0], np.full(5000, i, "u1"))
        f.flush()
    for i, f in enumerate(files):
        assert (f.read_array("a") == i).all()
    assert cache.blocks.nbytes <= 3000 and len(cache.blocks) == 3
    for f in files:
        f.close()


def test_context_manager_flushes_only_on_success(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "c.af") as f:
        f.define_array("a", "u1", ["x"], [2])
    with pytest.raises(RuntimeError), ArrayFile.open(tmp_path / "c.af") as f:
        f.define_array("b", "u1", ["x"], [2])
        raise RuntimeError
    with ArrayFile.open(tmp_path / "c.af") as f:
        assert f.list_arrays() == ["a"]


async def test_async_twins(tmp_path: Path) -> None:
    f = await ArrayFile.create_async(tmp_path / "a.af")
    f.define_array("a", "i2", ["x"], [10], chunk_shape=[3])
    await f.write_array_async("a", [2], np.arange(5, dtype="i2"))
    await f.flush_async()
    await f.compact_async()
    await f.close_async()
    g = await ArrayFile.open_async(tmp_path / "a.af")
    got = await g.read_array_async("a", [2], [5])
    assert got.tolist() == [0, 1, 2, 3, 4]
    g.close()


def test_exported_from_package() -> None:
    for name in ("ArrayFile", "FileConfig", "DeltaCache", "ArrayStats"):
        assert name in dafzarr.__all__ and getattr(dafzarr, name) is not None


@pytest.mark.parametrize("codec", [None, "lz4"])
@pytest.mark.parametrize("where", ["local", "obstore-memory"])
def test_pending_blocks_spill_to_a_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str | None, where: str
) -> None:
    from dafzarr._core.arrayfile import allocator

    monkeypatch.setattr(allocator.BlockAllocator, "spill_bytes", 3000)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, (40, 50)).astype("i8")
    target: Any = tmp_path / "s.af"
    if where != "local":
        target = (pytest.importorskip("obstore.store").MemoryStore(), "s.af")
    with ArrayFile.create(target, config=FileConfig(codec=codec, block_target_size=1000)) as f:
        f.define_array("x", "i8", ["r", "c"], x.shape, chunk_shape=[7, 9])
        f.write_array("x", [0, 0], x)
        f.write_array("x", [3, 4], np.full((2, 2), -1))  # read-modify-write of spilled chunks
        x[3:5, 4:6] = -1
        assert f._alloc is not None and f._alloc._spool_fd >= 0
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.flush()
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.compact()
    with ArrayFile.open(target) as g:
        np.testing.assert_array_equal(g.read_array("x"), x)


def test_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dafzarr._core.arrayfile import types

    f = ArrayFile.create(tmp_path / "w.af")
    f.define_array("s", str, ["n"], [4], chunk_shape=[2])
    f.write_array("s", [0], ["a", "b", "c", "d"])
    monkeypatch.setattr(types, "U32_MAX", 50)  # a small stand-in for the 4 GiB limit
    with pytest.raises(OverflowError, match="u32"):
        f.write_array("s", [0], ["x", "y", "z" * 40, "w" * 40])  # the second chunk overflows
    assert f.read_array("s").tolist() == ["a", "b", "c", "d"]
    f.close()
