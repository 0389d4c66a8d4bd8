"""Stub of the compiled sparse-index kernels (``_ext/_indices.pyx``)."""

from typing import Any

import numpy as np

def shift_checked(
    src: np.ndarray[Any, Any],
    dst: np.ndarray[Any, Any],
    indptr: np.ndarray[Any, Any],
    lo: int,
    hi: int,
    bound: int,
) -> int: ...
def csr_to_csc(
    indptr: np.ndarray[Any, Any],
    indices: np.ndarray[Any, Any],
    data: np.ndarray[Any, Any],
    ncols: int,
    threads: int = 1,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]: ...
def zero_based(src: np.ndarray[Any, Any], dst: np.ndarray[Any, Any], threads: int = 1) -> int: ...
