"""Stub of the compiled cache-blocked transposition (``_ext/_transpose.pyx``)."""

from typing import Any

import numpy as np

def transpose_columns(
    src: np.ndarray[Any, Any], dst: np.ndarray[Any, Any], lo: int, hi: int, threads: int = 1
) -> None: ...
