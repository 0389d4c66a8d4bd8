"""Block placement: chunk payloads packed into blocks, compressed when a block is full.

A chunk never spans blocks; a block is sealed (compressed, as independently decodable
segments of whole chunks, see :mod:`._segments`) once it holds the configured target size.
The allocator hands back each chunk's (block id, offset, size) address for the chunk table.
"""

from __future__ import annotations

import errno
import itertools
import os
import tempfile
from typing import Any

from ...errors import FormatLimitError
from . import segments as seg
from .fileconfig import FileConfig, MiB
from .lru import DeltaCache
from .objects import FileRange
from .types import U32_MAX

__all__ = ["BlockAllocator", "SealedBlock"]

_tokens = itertools.count(1)
_TMPFILE = getattr(os, "O_TMPFILE", 0)  # 0 where the system has no unnamed files

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

    def __init__(
        self, config: FileConfig, spill_dir: str | None = None, *, stage: bool = False
    ) -> None:
        self.spill_dir = spill_dir
        self.codec = config.codec
        self.level = config.zstd_level
        self.target = config.block_target_size
        self.sealed: list[SealedBlock] = []
        self.cur = bytearray()
        self.bounds = [0]  # segment boundaries in cur
        self.token = next(_tokens)
        self._in_memory = 0
        self._spool: Any = None  # the temporary file object, when it is not a bare fd
        self._spool_fd = -1
        self._spool_end = 0
        # staged: every block goes to a temporary file next to the file set from the start,
        # laid out as the new object will hold them, so that a local put can take that file
        # as the object itself (see LocalStorage.put); uncompressed chunks are then written
        # there directly, without a block buffer in memory
        self._direct = False
        self._cur_len = 0  # direct: bytes of the open block already in the spool
        if stage and spill_dir is not None:
            self._open_spool(staged=True)
            self._direct = self.codec is None

    def _open_spool(self, *, staged: bool = False) -> None:
        if staged and _TMPFILE:
            try:
                # no name and no O_EXCL: it can be linked into place once complete, and
                # nothing is left behind if the process dies first
                self._spool_fd = os.open(
                    self.spill_dir or ".", _TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o644
                )
                return
            except OSError:
                pass  # a file system without O_TMPFILE: an ordinary temporary file
        self._spool = tempfile.TemporaryFile(  # noqa: SIM115
            prefix=".dafzarr-af-", dir=self.spill_dir
        )
        self._spool_fd = self._spool.fileno()

    def _write_spool(self, data: Any, at: int) -> None:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            n = os.pwrite(self._spool_fd, view[done:], at + done)
            if n <= 0:
                raise OSError(
                    errno.ENOSPC,
                    f"short write to the temporary block file ({done} bytes)",
                    self.spill_dir or ".",
                )
            done += n

    def append(self, data: Any) -> tuple[int, int, int]:
        """Place one chunk payload; its (block id, offset in the block, size)."""
        size = len(data) if not isinstance(data, memoryview) else data.nbytes
        if size > U32_MAX:
            raise FormatLimitError(f"a {size}-byte chunk does not fit the format's u32 sizes")
        if self._direct:
            bid, off = len(self.sealed), self._cur_len
            self._write_spool(data, self._spool_end + off)
            self._cur_len += size
            if self._cur_len >= self.target:
                self.seal()
            return bid, off, size
        bid, off = len(self.sealed), len(self.cur)
        self.cur += data
        if len(self.cur) - self.bounds[-1] >= seg.SEGMENT_MIN:
            self.bounds.append(len(self.cur))
        if len(self.cur) >= self.target:
            self.seal()
        return bid, off, size

    def seal(self) -> None:
        """Compress and close the current block (nothing if it is empty)."""
        if self._direct:
            if self._cur_len:
                n, self._cur_len = self._cur_len, 0
                self.sealed.append((FileRange(self._spool_fd, self._spool_end, n), n, None))
                self._spool_end += n
            return
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
        if self._spool_fd < 0 and self._in_memory + len(stored) > self.spill_bytes:
            self._open_spool()
        if self._spool_fd >= 0:
            n = len(stored)
            self._write_spool(stored, self._spool_end)
            stored = FileRange(self._spool_fd, self._spool_end, n)
            self._spool_end += n
        else:
            self._in_memory += len(stored)
        self.sealed.append((stored, len(raw), table))

    def chunk(self, cache: DeltaCache, bid: int, off: int, size: int) -> bytes:
        """The bytes of a chunk placed here (decoded blocks are kept in ``cache``)."""
        if bid == len(self.sealed):
            if self._direct:
                return os.pread(self._spool_fd, size, self._spool_end + off)
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
        elif self._spool_fd >= 0:
            os.close(self._spool_fd)
        self._spool = None
        self._spool_fd = -1
