"""Stub of the compiled central-directory parser (``_ext/_zipdir.pyx``)."""

from collections.abc import Callable

LFH_SIG: int
DEAD_LFH_SIG: int
CD_SIG: int
EOCD_SIG: int
ZIP64_EOCD_SIG: int
ZIP64_LOCATOR_SIG: int
LFH_SIZE: int
CD_SIZE: int
EOCD_SIZE: int
ZIP64_EOCD_SIZE: int
ZIP64_LOCATOR_SIZE: int
TRAILER_SIZE: int
LFH_ZIP64_EXTRA: int
CD_ZIP64_EXTRA: int
LFH_CRC_OFFSET: int
CD_CRC_OFFSET: int
VERSION_NEEDED: int
VERSION_MADE_BY: int
FLAG_ENCRYPTED: int
FLAG_DATA_DESCRIPTOR: int
FLAG_UTF8: int
DOS_DATE_1980: int
EXTERNAL_ATTR: int
ZIP64_EXTRA_ID: int
PAD_EXTRA_ID: int
ALIGNMENT: int
MAX_COMMENT: int
MAX_NAME: int
U16_MAX: int
U32_MAX: int

def alignment_padding(lfh_offset: int, name_length: int) -> int: ...
def plain_key(raw: bytes | bytearray | memoryview) -> bool: ...

class Entry:
    """One central-directory entry, with sizes and offsets resolved from ZIP64 extras."""

    name: str
    method: int
    flags: int
    crc: int
    csize: int
    usize: int
    lfh_offset: int
    cd_pos: int
    cd_len: int
    data_offset: int
    end_limit: int
    refused: str | None
    def __init__(
        self,
        name: str,
        method: int,
        flags: int,
        crc: int,
        csize: int,
        usize: int,
        lfh_offset: int,
        cd_pos: int,
        cd_len: int,
        data_offset: int = -1,
        end_limit: int = -1,
        refused: str | None = None,
    ) -> None: ...
    @property
    def is_dir(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...

def parse_entries(
    cd: bytes | bytearray | memoryview,
    n_entries: int,
    limit: int,
    path: object,
    unsafe_name_reason: Callable[[str], str | None],
    base: int = 0,
    first: int = 0,
) -> list[Entry]: ...
def parse_some(
    cd: bytes | bytearray | memoryview,
    most: int,
    limit: int,
    path: object,
    unsafe_name_reason: Callable[[str], str | None],
    base: int,
    first: int,
) -> tuple[list[Entry], int]: ...
def check_no_overlap(entries: list[Entry], path: object) -> None: ...
def index_entries(
    entries: list[Entry],
) -> tuple[dict[str, Entry], list[Entry], bool, int]: ...

SMALL_VALUE_MAX: int

def stage_small(a: object, fm: object, key: object, value: object) -> bool: ...
def stage_small_run(a: object, fm: object, items: list[object], start: int) -> int: ...
def live_entries(
    entries: list[Entry],
    index: dict[str, Entry],
    dropped: set[str],
) -> list[Entry]: ...
def gather_records(keep: list[Entry], cd: bytearray) -> bytearray: ...
def renumber(keep: list[Entry]) -> int: ...
