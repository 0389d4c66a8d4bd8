"""Hypothesis state machine: random ArrayFile operations against a plain numpy model.

Operations: define, write (any region: partial chunks are read-modify-write), read, delete,
set_attribute, flush, compact, reopen (after a flush) and drop-and-reopen (pending changes
discarded, the model falls back to the last flushed state). Run on local files and on a real
S3-compatible server.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from dafzarr import ArrayFile, FileConfig
from dafzarr._core.arrayfile import segments as seg
from tests.helpers._moto_s3 import S3Server, moto_s3

NAMES = ["a", "b", "c"]
DTYPES = ["i4", "u1", "f8", "str"]


class _Model:
    def __init__(self) -> None:
        self.arrays: dict[str, dict[str, Any]] = {}

    def snapshot(self) -> dict[str, dict[str, Any]]:
        # ndarray.copy, not deepcopy: a deep copy of a 0-d object array is its element
        return {
            n: {**m, "data": m["data"].copy(), "attrs": dict(m["attrs"])}
            for n, m in self.arrays.items()
        }


def _region(draw: Any, shape: tuple[int, ...], min_size: int) -> tuple[list[int], list[int]]:
    start = [draw(st.integers(0, s - 1)) for s in shape]
    size = [draw(st.integers(min_size, s - a)) for s, a in zip(shape, start, strict=True)]
    return start, size


def _index(start: list[int], size: list[int]) -> Any:
    """The model's index of a region (``...`` for 0-d, so the result stays an array)."""
    if not start:
        return ...
    return tuple(slice(a, a + k) for a, k in zip(start, size, strict=True))


def machine(new_target: Callable[[], Any]) -> type[RuleBasedStateMachine]:
    class ArrayFileMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.target = new_target()
            self.config = FileConfig(codec="lz4", block_target_size=64)
            # blocks of several independently decoded LZ4 segments (one per chunk here)
            self.segment_min, seg.SEGMENT_MIN = seg.SEGMENT_MIN, 8
            self.f = ArrayFile.create(self.target, config=self.config)
            self.model = _Model()
            self.committed = self.model.snapshot()

        def teardown(self) -> None:
            seg.SEGMENT_MIN = self.segment_min
            self.f.close(flush=False)

        @rule(data=st.data(), name=st.sampled_from(NAMES), dtype=st.sampled_from(DTYPES))
        def define(self, data: Any, name: str, dtype: str) -> None:
            if name in self.model.arrays:
                return
            ndim = data.draw(st.integers(0, 2))
            shape = tuple(data.draw(st.integers(1, 6)) for _ in range(ndim))
            chunks = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
            if dtype == "str":
                fill, fill_arg = "", None
                npd: Any = object
            else:
                fill_arg = data.draw(st.sampled_from([None, 3]))
                fill = 0 if fill_arg is None else fill_arg
                npd = dtype
            self.f.define_array(
                name,
                str if dtype == "str" else dtype,
                [f"d{i}" for i in range(ndim)],
                shape,
                chunk_shape=chunks,
                fill_value=fill_arg,
            )
            self.model.arrays[name] = {
                "data": np.full(shape, fill, dtype=npd),
                "attrs": {},
                "dtype": dtype,
            }

        @precondition(lambda self: self.model.arrays)
        @rule(data=st.data())
        def write(self, data: Any) -> None:
            name = data.draw(st.sampled_from(sorted(self.model.arrays)))
            m = self.model.arrays[name]
            shape = m["data"].shape
            start, size = _region(data.draw, shape, 1) if shape else ([], [])
            n = int(np.prod(size)) if size else 1
            ints = data.draw(st.lists(st.integers(0, 200), min_size=n, max_size=n))
            if m["dtype"] == "str":
                values = np.array([str(i) * (i % 4) for i in ints], dtype=object).reshape(size)
            else:
                values = np.array(ints, dtype=m["dtype"]).reshape(size)
            self.f.write_array(name, start, values)
            m["data"][_index(start, size)] = values

        @precondition(lambda self: self.model.arrays)
        @rule(data=st.data())
        def read(self, data: Any) -> None:
            name = data.draw(st.sampled_from(sorted(self.model.arrays)))
            m = self.model.arrays[name]
            shape = m["data"].shape
            start, size = _region(data.draw, shape, 0) if shape else ([], [])
            got = self.f.read_array(name, start, size)
            want = m["data"][_index(start, size)]
            assert got.shape == want.shape
            assert got.tolist() == want.tolist()

        @precondition(lambda self: self.model.arrays)
        @rule(data=st.data())
        def delete(self, data: Any) -> None:
            name = data.draw(st.sampled_from(sorted(self.model.arrays)))
            self.f.delete(name)
            del self.model.arrays[name]

        @precondition(lambda self: self.model.arrays)
        @rule(
            data=st.data(),
            key=st.sampled_from(["k1", "k2"]),
            value=st.one_of(st.integers(-5, 5), st.text(max_size=20)),
        )
        def set_attribute(self, data: Any, key: str, value: Any) -> None:
            name = data.draw(st.sampled_from(sorted(self.model.arrays)))
            self.f.set_attribute(name, key, value)
            self.model.arrays[name]["attrs"][key] = value

        @rule()
        def flush(self) -> None:
            self.f.flush()
            self.committed = self.model.snapshot()

        @rule()
        def compact(self) -> None:
            self.f.compact()
            self.committed = self.model.snapshot()
            assert self.f.num_layers == 1

        @rule()
        def reopen(self) -> None:
            self.f.close()
            self.committed = self.model.snapshot()
            self.f = ArrayFile.open(self.target, config=self.config)

        @rule()
        def drop_and_reopen(self) -> None:
            self.f.close(flush=False)
            self.model.arrays = self.committed
            self.committed = self.model.snapshot()
            self.f = ArrayFile.open(self.target, config=self.config)

        @invariant()
        def same_arrays_and_attributes(self) -> None:
            assert sorted(self.f.list_arrays()) == sorted(self.model.arrays)
            for name, m in self.model.arrays.items():
                assert self.f.attributes(name) == m["attrs"]

    return ArrayFileMachine


SETTINGS = settings(
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_state_machine_local() -> None:
    tmp = tempfile.mkdtemp(prefix="af-state-")
    counter = itertools.count()
    try:
        run_state_machine_as_test(machine(lambda: f"{tmp}/f{next(counter)}.af"), settings=SETTINGS)
    finally:
        shutil.rmtree(tmp)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


def test_state_machine_s3(s3: S3Server) -> None:
    store = s3.new_store()
    counter = itertools.count()
    run_state_machine_as_test(
        machine(lambda: (store, f"sm/f{next(counter)}.af")),
        settings=settings(SETTINGS, max_examples=15),
    )
