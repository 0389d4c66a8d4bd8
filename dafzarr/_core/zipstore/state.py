"""What a store knows of its archive in memory: the directory, where things are, the open
transaction.

:class:`Archive` is the explicit state every step of the commit protocol (``commit``), of
opening and recovery (``open``, ``recover``) and of reading (``read``) takes, so that each
step can run on an archive without a :class:`~dafzarr.zipstore.MmapZipStore` around it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..._zipdir import index_entries, live_entries
from ...errors import ArchiveFullError
from . import ziprecords as zf

__all__ = ["Archive", "Txn", "live_index"]


@dataclass(slots=True)
class Txn:
    """An open transaction: entries being appended and where the live CD currently is."""

    n0: int  # entries committed when it began
    cd_len0: int  # bytes of CD committed when it began
    start: int  # data end when it began
    write: int  # where the next local header goes
    live_cd: int  # offset of the live CD
    live_end: int  # EOF (end of the live trailer)
    dirty: list[tuple[int, int]] = field(default_factory=list)  # ranges holding stale bytes
    depth: int = 0
    batch: bool = False
    # Where the entries the open batch announced (``batch(size_hint=...)``) end; 0: none.
    reach: int = 0
    committed: bool = False  # the new directory is live (past the commit point)
    relocated: bool = False  # the live CD was copied past the end to make room
    pruned: bool = False  # an entry was superseded or deleted: the next CD leaves it out
    done: bool = False  # committed, or abandoned (then ``failure`` says why)
    failure: BaseException | None = None


def live_index(entries: Iterable[zf.Entry]) -> dict[str, zf.Entry]:
    """Key -> entry for the non-directory entries that are served (names not refused); the
    last of duplicate names wins."""
    return index_entries(entries if isinstance(entries, list) else list(entries))[0]


@dataclass(eq=False, slots=True)
class Archive:
    """The options that steer writes, and the archive's directory as loaded and appended to.

    ``path`` only names the file in messages; the steps read and write through the
    :class:`~dafzarr._posix.FileMapping` they are given.
    """

    path: str
    max_file_size: int
    durable: bool = False
    max_decompressed_size: int = 1 << 34
    # Whether writable mappings take the writer's flock (MmapZipStore's ``lock`` option).
    lock: bool = True
    # Entries in central-directory order (ascending local-header offset for the entries this
    # store writes); after a rewrite or delete, until the next commit, the list still holds
    # the superseded entries, which ``index`` no longer points to.
    entries: list[zf.Entry] = field(default_factory=list)
    # Key -> its live entry. Readers look keys up without the lock: one dict lookup.
    index: dict[str, zf.Entry] = field(default_factory=dict)
    shadowed: bool = False  # the directory repeats a name (a foreign archive)
    # Lowest local-header offset the directory lists (-1: none), and how far the local
    # headers before it are marked as listed by no directory.
    first_listed: int = -1
    dead_prefix: int = 0
    # Bytes at the start of the file that are not the archive's (a self-extracting stub, or
    # the file the archive was appended to; see ``lead``): never written, marked or dropped.
    lead: int = 0
    # Whether the bytes before the first listed entry are only plain-text metadata of dead
    # entries and few enough for 7-Zip to find the archive past them (see
    # ``_commit.mark_unlisted_start``); False asks the store to renew the archive.
    plain_start: bool = True
    comment: bytes = b""
    cd: bytearray = field(default_factory=bytearray)  # the directory's bytes, as in memory
    # A read-only archive keeps only its entries: the directory's size, when its bytes
    # are not kept in ``cd`` (-1: they are).
    unkept_cd_size: int = -1
    cd_offset: int = 0  # where the live directory is in the file
    # Where the next local header goes; ``[data_end, cd_offset)`` is free room (dead bytes
    # that no entry claims: old directories, zeros) that the next commits write into.
    data_end: int = 0
    placed: bool = False  # a commit of this handle placed the directory (see _commit.settle)
    # Counts the directories made live (loads and commits): what a cache of values read
    # through this archive compares to know the archive changed.
    generation: int = 0
    limit: int = 0  # entries' data ends before this offset
    unpatched: set[str] = field(default_factory=set)  # reservations without their CRC yet
    tx: Txn | None = None
    # Folder entries (``zip -r`` writes them) under deleted prefixes: the next directory
    # leaves them out.
    dropped_folders: set[str] = field(default_factory=set)
    refused: list[zf.Entry] = field(default_factory=list)  # entries whose names are unsafe

    def reset(self) -> None:
        """Forget the loaded directory (the options stay)."""
        self.entries, self.index, self.cd, self.unkept_cd_size = [], {}, bytearray(), -1
        self.shadowed, self.first_listed, self.dead_prefix, self.comment = False, -1, 0, b""
        self.plain_start, self.lead = True, 0
        self.cd_offset = self.data_end = self.limit = 0
        self.placed = False
        self.unpatched, self.tx, self.dropped_folders, self.refused = set(), None, set(), []

    def install(
        self,
        entries: list[zf.Entry],
        cd: bytes | bytearray | None,
        tr: zf.Trailer,
        comment: bytes = b"",
    ) -> None:
        """Take ``entries`` (parsed from ``cd``, the directory ``tr`` points to) as live.

        A ``bytearray`` is kept as it is (no second copy of a large directory); the caller
        gives it up. ``None``: a reader's archive, which keeps no directory bytes.
        """
        self.generation += 1
        self.comment = comment
        self.entries = entries
        self.cd = bytearray() if cd is None else cd if isinstance(cd, bytearray) else bytearray(cd)
        self.unkept_cd_size = tr.cd_size if cd is None else -1
        self.cd_offset = tr.cd_offset
        self.data_end = tr.cd_offset
        self.limit = tr.cd_offset
        self.index, self.refused, self.shadowed, self.first_listed = index_entries(entries)

    def live_entries(self) -> list[zf.Entry]:
        """What the next directory lists, in order: each key's live copy, each folder once."""
        return live_entries(self.entries, self.index, self.dropped_folders)

    def refused_list(self, most: int = 5) -> str:
        """The refused entries and why, for a message (the first ``most`` of them)."""
        parts = [f"{e.name!r} ({e.refused})" for e in self.refused[:most]]
        more = len(self.refused) - most
        return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")

    def directory_size(self) -> int:
        """Bytes of the directory (as in memory, or as last read for a reader)."""
        return len(self.cd) if self.unkept_cd_size < 0 else self.unkept_cd_size

    def trailer_len(self) -> int:
        """Bytes of the end records and the archive comment."""
        return zf.TRAILER_SIZE + len(self.comment)

    def reserve_size(self) -> int:
        """The address space a writable mapping reserves.

        A commit may briefly hold a second copy of the central directory past the final end
        of the file; the directory is never larger than the file, so twice the limit (plus
        room for two trailers) always suffices. Address space costs no memory.
        """
        return 2 * self.max_file_size + 2 * (zf.TRAILER_SIZE + zf.MAX_COMMENT)

    def check_size(self, required: int, what: str) -> None:
        """Refuse a commit whose final file size would pass ``max_file_size``."""
        if required > self.max_file_size:
            raise ArchiveFullError(
                f"append of {what} would grow {self.path} past max_file_size = "
                f"{self.max_file_size} bytes (required: {required})"
            )

    def check_reserve(self, required: int, what: str) -> None:
        """Refuse a temporary size past the reserved address space (never expected)."""
        if required > self.reserve_size():
            raise ArchiveFullError(
                f"append of {what} would need {required} bytes of {self.path} mapped, more than "
                f"the {self.reserve_size()} bytes reserved for max_file_size = "
                f"{self.max_file_size}"
            )
