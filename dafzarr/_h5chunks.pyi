"""Stub of the compiled chunk-index walker (``_ext/_h5chunks.pyx``)."""

from typing import Any

import numpy as np
import numpy.typing as npt

CHUNK_ITER_SIGNATURE: str
MAX_RANK: int

def chunk_index(
    dsid: Any,
    chunks: tuple[int, ...],
    grid: tuple[int, ...],
    offsets: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    masks: npt.NDArray[np.uint32],
) -> int: ...

SLOW: object

def read_attrs(
    objid: Any, dataset: bool, skip: frozenset[bytes]
) -> list[tuple[bytes, Any]] | None: ...
def scale_names(dsid: Any, fid: Any) -> Any: ...
def numeric_info(dsid: Any) -> tuple[np.dtype[Any], Any] | None: ...
def storage_problem(dsid: Any) -> str | None: ...
def type_problem(typeid: Any) -> str | None: ...
def stored_fill_bytes(dsid: Any) -> bytes | None: ...
