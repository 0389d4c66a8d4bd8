"""Block placement: chunk payloads packed into blocks, compressed when a block is full.

A chunk never spans blocks; a block is sealed (compressed, as independently decodable
segments of whole chunks, see :mod:`._segments`) once it holds the configured target size.
The allocator hands back each chunk's (block id, offset, size) address for the chunk table.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from typing import Any

from . import _segments as seg
from ._backends import FileRange
from ._cache import DeltaCache
from ._config import FileConfig, MiB
from ._types import U32_MAX

__all__ = ["BlockAllocator", "SealedBlock"]

_tokens = itertools.count(1)

# (stored bytes or FileRange, uncompressed size, LZ4/Zstd segment table or None)
SealedBlock = tuple[Any, int, Any]


def _materialise(stored: Any) -> Any:
    return stored.read() if isinstance(stored, FileRange) else stored


class BlockAllocator:
    """Packs chunk payloads into blocks of about ``target`` bytes, compressing full blocks.

    Sealed blocks stay in memory up to ``spill_bytes`` in total; past that they go to an
    anonymous temporary file, so a large flush or compaction does not need its size in RAM.
    LZ4 blocks are made of independently decodable segments of whole chunks (see
    :mod:`._segments`), so a read of one chunk decompresses its segment, not its block.
    """

    spill_bytes = 256 * MiB

    def __init__(self, config: FileConfig, spill_dir: str | None = None) -> None:
        self.spill_dir = spill_dir
        self.codec = config.codec
        self.level = config.zstd_level
        self.target = config.block_target_size
        self.sealed: list[SealedBlock] = []
        self.cur = bytearray()
        self.bounds = [0]  # segment boundaries in cur
        self.token = next(_tokens)
        self._in_memory = 0
        self._spool: Any = None
        self._spool_end = 0

    def append(self, data: Any) -> tuple[int, int, int]:
        """Place one chunk payload; its (block id, offset in the block, size)."""
        size = len(data) if not isinstance(data, memoryview) else data.nbytes
        if size > U32_MAX:
            raise OverflowError(f"a {size}-byte chunk does not fit the format's u32 sizes")
        bid, off = len(self.sealed), len(self.cur)
        self.cur += data
        if len(self.cur) - self.bounds[-1] >= seg.SEGMENT_MIN:
            self.bounds.append(len(self.cur))
        if len(self.cur) >= self.target:
            self.seal()
        return bid, off, size

    def seal(self) -> None:
        """Compress and close the current block (nothing if it is empty)."""
        if not self.cur:
            return
        raw = self.cur
        table = None
        stored: Any
        if self.bounds[-1] != len(raw):
            self.bounds.append(len(raw))
        if self.codec == "lz4":
            stored, table = seg.compress(raw, self.bounds)
        elif self.codec == "zstd":
            stored, table = seg.compress_zstd(raw, self.bounds, self.level)
        else:
            stored = raw
        self.cur = bytearray()
        self.bounds = [0]
        if self._spool is None and self._in_memory + len(stored) > self.spill_bytes:
            self._spool = tempfile.TemporaryFile(  # noqa: SIM115
                prefix=".dafzarr-af-", dir=self.spill_dir
            )
        if self._spool is not None:
            n = os.pwrite(self._spool.fileno(), stored, self._spool_end)
            if n != len(stored):
                raise OSError(f"short write to the temporary block file ({n} bytes)")
            stored = FileRange(self._spool.fileno(), self._spool_end, n)
            self._spool_end += n
        else:
            self._in_memory += len(stored)
        self.sealed.append((stored, len(raw), table))

    def chunk(self, cache: DeltaCache, bid: int, off: int, size: int) -> bytes:
        """The bytes of a chunk placed here (decoded blocks are kept in ``cache``)."""
        if bid == len(self.sealed):
            return bytes(self.cur[off : off + size])
        stored, usize, _ = self.sealed[bid]
        if self.codec is None:
            if isinstance(stored, FileRange):
                return os.pread(stored.fd, size, stored.offset + off)
            return bytes(stored[off : off + size])
        ck = ("pending", self.token, bid)
        block = cache.blocks.get(ck)
        if block is None:
            block = seg.decode_block(
                self.codec, _materialise(stored), usize, what=f"pending block {bid}"
            )
            cache.blocks.put(ck, block)
        return bytes(block[off : off + size])

    def finish(self) -> list[SealedBlock]:
        """Seal the last block; every block, in id order."""
        self.seal()
        return self.sealed

    def close(self) -> None:
        """Release the temporary file, if blocks spilled to one."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None
