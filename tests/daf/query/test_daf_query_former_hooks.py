"""The reduction passes that were public methods of ``ReductionOperation`` in earlier releases
(``reduce``, ``segments``, ``keyed``, ``grouped_rows``, ``grouped_columns``, ``dense``) keep
working under their old names, with a deprecation warning."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dafzarr
from dafzarr.daf.query import Mean, ReductionOperation, Sum
from dafzarr.errors import DafzarrDeprecationWarning


def _cells() -> Any:
    d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C", "D"])
    d = d.set_vector("cell", "age", np.array([20, 35, 41, 50]))
    return d.set_vector("cell", "type", np.array(["T", "B", "T", "B"]))


def test_the_old_names_call_the_passes_with_a_warning() -> None:
    values = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 8.0]])
    with pytest.warns(DafzarrDeprecationWarning, match="ReductionOperation.dense"):
        got = Sum().dense(values)
    np.testing.assert_array_equal(got, [6.0, 12.0])
    with pytest.warns(DafzarrDeprecationWarning, match="segments"):
        got = Mean().segments(np.array([1.0, 3.0, 5.0]), np.array([0, 2, 3]), np.array([2, 1]))
    np.testing.assert_array_equal(got, [2.0, 5.0])
    assert issubclass(DafzarrDeprecationWarning, DeprecationWarning)


def test_other_missing_attributes_still_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        Sum().nothing  # noqa: B018 (the access is the test)


def test_a_subclass_overriding_an_old_name_keeps_its_behaviour() -> None:
    with pytest.warns(DafzarrDeprecationWarning, match="Spread.reduce"):

        class Spread(ReductionOperation):
            NAME = "SpreadFormerHook"

            def result_type(self, dtype: Any) -> Any:
                return dtype

            def one(self, values: Any) -> Any:  # never called: reduce does it all
                raise AssertionError("the old pass was not used")

            def reduce(self, runs: Any, sizes: Any) -> Any:
                data, indptr = runs.sorted()
                return np.array(
                    [np.ptp(data[indptr[i] : indptr[i + 1]]) for i in range(runs.count)],
                    dtype=data.dtype,
                )

    dafzarr.daf.query.register_reduction(Spread)
    got = _cells().get_np_query("@ cell : age / type >> SpreadFormerHook")
    np.testing.assert_array_equal(got, [15, 21])


def test_the_current_names_warn_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Range(ReductionOperation):
            NAME = "RangeCurrentHooks"

            def result_type(self, dtype: Any) -> Any:
                return dtype

            def one(self, values: Any) -> Any:
                return values.max() - values.min()

        dafzarr.daf.query.register_reduction(Range)
        got = _cells().get_np_query("@ cell : age / type >> RangeCurrentHooks")
    np.testing.assert_array_equal(got, [15, 21])
