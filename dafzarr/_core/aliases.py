"""Type aliases that several layers of the package share, each defined once."""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np

__all__ = ["Array", "OpenMode", "PathLike"]

Array = np.ndarray[Any, Any]
OpenMode = Literal["r", "r+", "w+", "w"]
PathLike = str | os.PathLike[str]
