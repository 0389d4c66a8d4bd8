"""Stub of the compiled ArrayFile footer-record decoder (``_ext/_affooter.pyx``)."""

from typing import Any

ARRAY_SIZE: int
STATS_SIZE: int
MAX_NDIM: int
UNIT_DTYPES: dict[int, str]
ATTR_WIDTHS: tuple[str, ...]
FILL_KINDS: tuple[str, ...]
STAT_KINDS: tuple[str, ...]

def read_arrays(
    dec: Any,
    start: int,
    n: int,
    dtype_type: Any,
    table_type: Any,
) -> list[dict[str, Any]]: ...
def read_stats(dec: Any, start: int, n: int) -> list[dict[str, Any]]: ...
