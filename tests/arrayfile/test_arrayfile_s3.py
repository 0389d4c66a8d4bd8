"""ArrayFile on a real S3-compatible server (moto's server mode on 127.0.0.1) through obstore."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest

from dafzarr import ArrayFile, FileConfig
from tests.helpers._moto_s3 import S3Server, moto_s3


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


def test_roundtrip_flush_compact_reopen(s3: S3Server) -> None:
    store = s3.new_store()
    cfg = FileConfig(codec="lz4", block_target_size=500)
    with ArrayFile.create((store, "runs/exp.af"), config=cfg) as f:
        f.define_array("sig", "f8", ["t", "c"], [60, 3], chunk_shape=[16, 2], fill_value=np.nan)
        f.write_array("sig", [0, 0], np.arange(90.0).reshape(30, 3))
        f.set_attribute("sig", "units", "mV")
        f.flush()
        f.define_array("names", str, ["c"], [3])
        f.write_array("names", [0], ["a", "bb", "ccc"])
        f.write_array("sig", [20, 1], np.full((5, 2), -1.0))
        f.flush()
        assert f.num_layers == 3
    with ArrayFile.open((store, "runs/exp.af"), config=cfg) as f:
        sig = f.read_array("sig")
        assert np.isnan(sig[30:]).all() and sig[0, 2] == 2.0 and (sig[20:25, 1:] == -1).all()
        assert f.get_attribute("sig", "units") == "mV"
        assert f.read_array("names").tolist() == ["a", "bb", "ccc"]
        f.compact()
        assert f.num_layers == 1
        np.testing.assert_array_equal(f.read_array("sig"), sig)
    import obstore

    keys = sorted(o["path"] for batch in obstore.list(store) for o in batch)
    assert keys == ["runs/exp.af", "runs/exp.stats"]
    with ArrayFile.open((store, "runs/exp.af")) as f:
        np.testing.assert_array_equal(f.read_array("sig"), sig)
        s = f.array_stats("sig")
        assert s is not None and s.row_count == 180 and s.min == -1.0


def test_open_costs_one_suffix_get_per_layer(s3: S3Server) -> None:
    store = s3.new_store()
    with ArrayFile.create((store, "p/f.af"), config=FileConfig(codec=None)) as f:
        for i in range(3):
            f.define_array(f"a{i}", "u2", ["x"], [5])
            f.write_array(f"a{i}", [0], np.full(5, i, "u2"))
            f.flush()
    s3.log.take()
    g = ArrayFile.open((store, "p/f.af"))
    lines = s3.log.take()
    layer_gets = [ln for ln in lines if re.search(r"GET /[^ ?]+\.af HTTP", ln)]
    assert len(layer_gets) == 4, lines
    # and one HEAD: the base is still the one read (a compaction meanwhile: read again)
    assert [ln for ln in lines if "HEAD " in ln] == [
        ln for ln in lines if re.search(r"HEAD /[^ ?]+/p/f\.af HTTP", ln)
    ], lines
    assert len([ln for ln in lines if "HEAD " in ln]) == 1, lines
    # sidecars are found by listing one level (with a delimiter), never the whole bucket
    lists = [ln for ln in lines if re.search(r"GET /[^ /?]+\?", ln)]
    assert len(lists) == 1 and "delimiter=/" in lists[0] and "prefix=p/" in lists[0], lists
    assert g.read_array("a1").tolist() == [1] * 5
    g.close()


def test_two_writers_create_distinct_sidecars(s3: S3Server) -> None:
    store = s3.new_store()
    ArrayFile.create((store, "f.af")).close()
    w1 = ArrayFile.open((store, "f.af"))
    w2 = ArrayFile.open((store, "f.af"))
    for w, name in ((w1, "one"), (w2, "two")):
        w.define_array(name, "i8", ["x"], [2])
        w.write_array(name, [0], np.array([1, 2]))
    w1.flush()
    w2.flush()  # the create-only put of .1 is refused (412): it takes .2
    w1.close()
    w2.close()
    with ArrayFile.open((store, "f.af")) as f:
        assert f.list_arrays() == ["one", "two"] and f.num_layers == 3


def test_no_stale_blocks_after_compact(s3: S3Server) -> None:
    store = s3.new_store()
    f = ArrayFile.create((store, "c.af"), config=FileConfig(codec="zstd"))
    f.define_array("a", "u1", ["x"], [4])
    f.write_array("a", [0], np.full(4, 1, "u1"))
    f.flush()
    assert f.read_array("a").tolist() == [1] * 4
    f.compact()
    f.write_array("a", [0], np.full(4, 2, "u1"))
    f.flush()
    assert f.read_array("a").tolist() == [2] * 4
    f.close()


def test_missing_and_corrupt_objects(s3: S3Server) -> None:
    import obstore

    store = s3.new_store()
    with pytest.raises(FileNotFoundError):
        ArrayFile.open((store, "nope.af"))
    obstore.put(store, "bad.af", b"not an array file at all")
    with pytest.raises(ValueError, match=r"bad\.af"):
        ArrayFile.open((store, "bad.af"))
