"""The compiled central-directory parser against the pure-Python parser it replaced.

``dafzarr._zipdir`` reads the directory of an archive in one C pass; the reference below is
the record-by-record ``struct`` parser MmapZipStore used before, kept here as the
specification. On real directories (MmapZipStore's ZIP64 records, ``zipfile``'s plain ones,
names that are unsafe, not UTF-8, or CP437, duplicates, folders) and on hypothesis' mutations
of them, both must give the same entries, the same overlap limits and index, or the same
error message.
"""

from __future__ import annotations

import itertools
import re
import struct
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dafzarr import MmapZipStore
from dafzarr._core.zipstore import ziprecords as zf
from dafzarr._zipdir import Entry, check_no_overlap, index_entries, parse_entries
from dafzarr.errors import CorruptArchiveError

# --- The reference: the parser as it was in pure Python ---------------------------------

_CD = struct.Struct("<IHHHHHHIIIHHHHHII")
_HH = struct.Struct("<HH")
_RELATIVE_PART = re.compile(r"(?:^|/)\.\.?(?:/|$)")


def _bad(path: object, what: str) -> CorruptArchiveError:
    return CorruptArchiveError(f"{path}: not a valid ZIP archive: {what}")


def _ref_decode(raw: bytes, flags: int) -> tuple[str, str | None]:
    try:
        name = raw.decode("utf-8") if flags & 0x0800 else raw.decode("cp437")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape"), "its name is not valid UTF-8"
    return name, zf.unsafe_name_reason(name)


def _ref_zip64(
    cd: bytes,
    start: int,
    length: int,
    usize: int,
    csize: int,
    lfh: int,
    path: object,
    name: str,
) -> tuple[int, int, int]:
    pos, end = start, start + length
    while pos + 4 <= end:
        tag, size = _HH.unpack_from(cd, pos)
        body = pos + 4
        if body + size > end:
            break
        if tag == 1:
            need = 8 * ((usize == 0xFFFFFFFF) + (csize == 0xFFFFFFFF) + (lfh == 0xFFFFFFFF))
            if size < need:
                raise _bad(path, f"entry {name!r}: ZIP64 extra field too short")
            q = body
            if usize == 0xFFFFFFFF:
                usize = struct.unpack_from("<Q", cd, q)[0]
                q += 8
            if csize == 0xFFFFFFFF:
                csize = struct.unpack_from("<Q", cd, q)[0]
                q += 8
            if lfh == 0xFFFFFFFF:
                lfh = struct.unpack_from("<Q", cd, q)[0]
            return usize, csize, lfh
        pos = body + size
    raise _bad(path, f"entry {name!r}: ZIP64 sizes announced but no ZIP64 extra field")


def ref_parse(cd: bytes, n_entries: int, limit: int, path: object) -> list[tuple[Any, ...]]:
    """Entries as field tuples, with the previous parser's checks and messages."""
    out: list[tuple[Any, ...]] = []
    pos, end = 0, len(cd)
    for index in range(n_entries):
        if pos + 46 > end:
            raise _bad(path, f"central directory ends inside entry {index}")
        (
            sig,
            _m,
            _n,
            flags,
            method,
            _t,
            _d,
            crc,
            csize,
            usize,
            n_len,
            e_len,
            c_len,
            disk,
            _i,
            _e,
            lfh,
        ) = _CD.unpack_from(cd, pos)
        if sig != 0x02014B50:
            raise _bad(path, f"bad central directory signature at entry {index}")
        rec_len = 46 + n_len + e_len + c_len
        if pos + rec_len > end:
            raise _bad(path, f"central directory entry {index} runs past the directory")
        name, refused = _ref_decode(cd[pos + 46 : pos + 46 + n_len], flags)
        if 0xFFFFFFFF in (usize, csize, lfh) or disk == 0xFFFF:
            usize, csize, lfh = _ref_zip64(
                cd, pos + 46 + n_len, e_len, usize, csize, lfh, path, name
            )
        if lfh + 30 + n_len > limit or csize > limit:
            raise _bad(path, f"entry {name!r}: local header or data outside the archive")
        out.append((name, method, flags, crc, csize, usize, lfh, pos, rec_len, -1, -1, refused))
        pos += rec_len
    if pos != end:
        raise _bad(path, f"central directory has {end - pos} bytes after its last entry")
    return out


def ref_overlap(entries: list[list[Any]], path: object) -> None:
    """The previous overlap check on field lists (sets ``end_limit``, index 10)."""
    order = sorted(entries, key=lambda e: e[6])
    for a, b in itertools.pairwise(order):
        if b[6] == a[6]:
            raise _bad(path, f"entries {a[0]!r} and {b[0]!r} share one local header")
        a_len = len(a[0].encode("utf-8" if a[2] & 0x0800 else "cp437", "replace"))
        if b[6] < a[6] + 30 + a_len + a[4]:
            raise _bad(path, f"entries {a[0]!r} and {b[0]!r} overlap")
        a[10] = b[6]


def _fields(e: Entry) -> tuple[Any, ...]:
    return (
        e.name,
        e.method,
        e.flags,
        e.crc,
        e.csize,
        e.usize,
        e.lfh_offset,
        e.cd_pos,
        e.cd_len,
        e.data_offset,
        e.end_limit,
        e.refused,
    )


def _outcome_ref(cd: bytes, n: int, limit: int) -> object:
    try:
        rows = [list(t) for t in ref_parse(cd, n, limit, "x.zip")]
        ref_overlap(rows, "x.zip")
    except CorruptArchiveError as e:
        return str(e)
    index: dict[str, tuple[Any, ...]] = {}
    served = 0
    for r in rows:
        if r[11] is None and not r[0].endswith("/"):
            index[r[0]] = tuple(r)
            served += 1
    refused = [tuple(r) for r in rows if r[11] is not None]
    first = min((r[6] for r in rows), default=-1)
    return [tuple(r) for r in rows], index, refused, len(index) != served, first


def _outcome_new(cd: bytes, n: int, limit: int) -> object:
    return _outcome(lambda: parse_entries(cd, n, limit, "x.zip", zf.unsafe_name_reason))


def _outcome(parse: Any) -> object:
    """What the compiled parser makes of a directory (``parse()``): the entries, the
    index, the refused entries, whether a name repeats and the first header; or the
    error message."""
    try:
        entries = parse()
        check_no_overlap(entries, "x.zip")
    except CorruptArchiveError as e:
        return str(e)
    index, refused, shadowed, first = index_entries(entries)
    return (
        [_fields(e) for e in entries],
        {k: _fields(e) for k, e in index.items()},
        [_fields(e) for e in refused],
        shadowed,
        first,
    )


# --- Directories to start from ----------------------------------------------------------


def _directory(path: Path) -> tuple[bytes, int, int]:
    """(directory bytes, entry count, directory offset) of an archive, via its trailer."""
    data = path.read_bytes()

    def read(offset: int, length: int) -> bytes:
        return data[offset : offset + length]

    tr = zf.find_trailer(read, len(data), path)
    return read(tr.cd_offset, tr.cd_size), tr.n_entries, tr.cd_offset


def _seeds(tmp: Path) -> list[tuple[bytes, int, int]]:
    own = tmp / "own.zip"
    with MmapZipStore(own, "w") as store, store.batch():
        for i in range(6):
            store[f"a/c/{i}/0"] = bytes(i)
        store["a/zarr.json"] = b"{}"
    foreign = tmp / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as z:
        z.writestr("folder/", b"")
        z.writestr("k", b"1")
        z.writestr("../evil", b"2")
        z.writestr("\u00e9t\u00e9/x", b"3")
        z.writestr("a\\b", b"4")
        z.writestr("./dot", b"5")
        z.writestr("/abs", b"6")
        with pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr("k", b"7")  # a duplicate: the last one is served
        z.writestr(zipfile.ZipInfo("cp437-\x80"), b"8")
        z.comment = b"comment"
    forced64 = tmp / "zip64.zip"
    with zipfile.ZipFile(forced64, "w") as z:
        for i in range(3):
            with z.open(f"z/{i}", "w", force_zip64=True) as f:
                f.write(b"abc" * i)
    seeds = [_directory(p) for p in (own, foreign, forced64)]
    # A name that is not valid UTF-8 though flagged as UTF-8: the own archive's first name.
    cd, n, limit = seeds[0]
    bad = bytearray(cd)
    bad[46] = 0xFF
    return [*seeds, (bytes(bad), n, limit)]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, int, int]]:
    return _seeds(tmp_path_factory.mktemp("cdparse"))


def test_seed_directories_parse_alike(seeds: list[tuple[bytes, int, int]]) -> None:
    outcomes = [_outcome_new(*s) for s in seeds]
    assert outcomes == [_outcome_ref(*s) for s in seeds]
    # the seeds reach what they are there for: ZIP64 extras, refused and shadowed names
    own, foreign, forced64, bad_utf8 = outcomes
    assert isinstance(foreign, tuple) and foreign[3] is True and len(foreign[2]) == 4
    assert isinstance(bad_utf8, tuple) and bad_utf8[2][0][11] == "its name is not valid UTF-8"
    assert isinstance(own, tuple) and isinstance(forced64, tuple)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, 3),
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, 1 << 16),
    n_delta=st.integers(-2, 2),
    limit_delta=st.integers(-64, 64),
)
def test_mutated_directories_parse_alike(
    seeds: list[tuple[bytes, int, int]],
    which: int,
    edits: list[tuple[int, int]],
    cut: int,
    n_delta: int,
    limit_delta: int,
) -> None:
    cd, n, limit = seeds[which]
    data = bytearray(cd)
    for pos, value in edits:
        data[pos % len(data)] = value
    data = data[: len(data) - cut % 48] if cut & 1 else data
    n = max(0, n + n_delta)
    limit = max(0, limit + limit_delta)
    assert _outcome_new(bytes(data), n, limit) == _outcome_ref(bytes(data), n, limit)


def _outcome_pieces(cd: bytes, n: int, limit: int, piece: int) -> object:
    """As ``_outcome_new``, the directory read and parsed ``piece`` bytes at a time."""

    def read(offset: int, length: int) -> bytes:
        assert limit <= offset and offset + length <= limit + len(cd) and length <= piece
        return cd[offset - limit : offset - limit + length]

    tr = zf.Trailer(limit, len(cd), n, limit + len(cd), limit + len(cd) + 22)
    return _outcome(lambda: zf.parse_central_directory_in_pieces(read, tr, "x.zip", piece))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, 3),
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 1 << 16),
    n_delta=st.integers(-2, 2),
    piece=st.sampled_from([1, 7, 45, 46, 47, 100, 333, 1 << 20]),
)
def test_a_directory_read_in_pieces_parses_as_a_whole(
    seeds: list[tuple[bytes, int, int]],
    which: int,
    edits: list[tuple[int, int]],
    cut: int,
    n_delta: int,
    piece: int,
) -> None:
    """Readers parse the directory a piece at a time (no copy of it kept): the same entries,
    or the same error, whatever the piece size and wherever records straddle pieces."""
    cd, n, limit = seeds[which]
    data = bytearray(cd)
    for pos, value in edits:
        data[pos % len(data)] = value
    data = data[: len(data) - cut % 48] if cut & 1 else data
    n = max(0, n + n_delta)
    whole = _outcome_new(bytes(data), n, limit)
    assert _outcome_pieces(bytes(data), n, limit, piece) == whole


def test_a_reader_keeps_no_copy_of_a_large_directory(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    with MmapZipStore(path, "w") as store, store.batch():
        for i in range(30_000):  # a directory of about 2.6 MB: several pieces
            store[f"arr/c/{i}"] = b"x"
    with MmapZipStore(path, "r") as reader, MmapZipStore(path, "r+") as writer:
        assert reader._handle.archive.directory_size() > 2 * zf.DIRECTORY_PIECE
        assert len(reader._handle.archive.cd) == 0  # the entries only
        assert reader.space() == writer.space()
        assert sorted(reader.keys()) == sorted(writer.keys())
        assert reader["arr/c/29999"] == b"x"


def test_entry_compares_and_prints_like_the_record_it_was() -> None:
    a = Entry("k", 0, 0x0800, 7, 1, 1, 0, 0, 74)
    b = Entry("k", 0, 0x0800, 7, 1, 1, 0, 0, 74)
    assert a == b and a is not b
    b.end_limit = 100
    assert a != b
    assert repr(a).startswith("Entry(name='k', method=0,") and "refused=None" in repr(a)
    assert not a.is_dir and Entry("d/", 0, 0, 0, 0, 0, 0, 0, 0).is_dir
    with pytest.raises(TypeError):
        hash(a)


def test_an_entry_holds_any_zip64_size_in_96_bytes() -> None:
    """A million-entry archive holds a million entries: each takes 96 bytes (one of
    pymalloc's size classes), whatever its sizes, up to the format's 2^64 - 1."""
    for usize in (1, 1 << 40, (1 << 64) - 1):
        e = Entry("arr/c/0", 8, 0x0808, 7, 1, usize, 0, 0, 74)
        assert e.usize == usize
        assert sys.getsizeof(e) <= 96
    with pytest.raises(OverflowError):
        Entry("k", 1 << 16, 0, 0, 0, 0, 0, 0, 46)  # a 16-bit field of the records
    with pytest.raises(OverflowError):
        Entry("k", 0, 0, 0, 0, 1 << 64, 0, 0, 46)
