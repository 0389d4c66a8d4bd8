"""The options of an ArrayFile (:class:`FileConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvalidArgumentError
from .lru import DeltaCache
from .types import U32_MAX

__all__ = ["FileConfig", "MiB"]

MiB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class FileConfig:
    """Options of an :class:`ArrayFile`.

    Parameters
    ----------
    codec
        Block compression: ``"lz4"`` (LZ4 block with a 4-byte size prefix, as the crate's
        ``lz4_flex`` writes), ``"zstd"`` or ``None``.
    zstd_level
        Zstandard level.
    block_target_size
        A block is compressed and closed once it holds this many bytes (chunks never span
        blocks); must be below 4 GiB.
    cache_capacity, io_cache_capacity
        Budgets of the private cache (decompressed blocks, raw bytes) used when ``cache`` is
        None.
    cache
        A :class:`DeltaCache` shared with other files, under its own budget.

    Raises
    ------
    InvalidArgumentError
        An unknown ``codec``, or a ``block_target_size`` outside 1 byte to 4 GiB - 1.

    Examples
    --------
    >>> from dafzarr.arrayfile import ArrayFile, FileConfig
    >>> config = FileConfig(codec="zstd", zstd_level=5)
    >>> with ArrayFile.create("example.af", config=config) as f:
    ...     f.define_array("a", "float64", ["x"], [3])
    ...     f.write_array("a", [0], [1.0, 2.0, 3.0])
    """

    codec: str | None = "lz4"
    zstd_level: int = 3
    block_target_size: int = 8 * MiB
    cache_capacity: int = 256 * MiB
    io_cache_capacity: int = 64 * MiB
    cache: DeltaCache | None = None

    def __post_init__(self) -> None:
        if self.codec not in (None, "lz4", "zstd"):
            raise InvalidArgumentError(f"codec must be 'lz4', 'zstd' or None, not {self.codec!r}")
        if not 1 <= self.block_target_size <= U32_MAX:
            raise InvalidArgumentError(
                f"block_target_size must be between 1 and 4 GiB - 1 (the format's u32 chunk "
                f"offsets), not {self.block_target_size}"
            )
