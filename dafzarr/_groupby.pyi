"""Stub of the compiled group-by kernels (``_ext/_groupby.pyx``)."""

from typing import Any

import numpy as np

def group_sums(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    threads: int = 1,
    base: int = 0,
) -> int: ...
def group_extremes(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    high: bool,
    threads: int = 1,
    base: int = 0,
) -> int: ...
def group_moments(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    sums: np.ndarray[Any, Any],
    devs: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    second: bool,
    threads: int = 1,
    base: int = 0,
) -> int: ...
def group_quantiles(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    p: float,
    out: np.ndarray[Any, Any],
    threads: int = 1,
    base: int = 0,
) -> int: ...
def group_modes(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    threads: int = 1,
    base: int = 0,
) -> int: ...
def scatter_sums(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    base: int = 0,
) -> int: ...
def scatter_extremes(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    high: bool,
    base: int = 0,
) -> int: ...
def scatter_moments(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    sums: np.ndarray[Any, Any],
    devs: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    second: bool,
    base: int = 0,
) -> int: ...
def scatter_quantiles(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    p: float,
    out: np.ndarray[Any, Any],
    base: int = 0,
    block: int = 65536,
) -> int: ...
def scatter_modes(
    data: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
    base: int = 0,
    block: int = 65536,
) -> int: ...
