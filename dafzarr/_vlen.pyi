"""Stub of the compiled vlen-utf8 decoder (``_ext/_vlen.pyx``)."""

from typing import Any

import numpy as np

def decode_vlen_utf8(raw: Any, count: int) -> np.ndarray[Any, Any] | None: ...
def first_repeated_vlen_utf8(raw: Any, count: int) -> int: ...
