"""MmapZipStore against damaged and hostile archives, and a byte-mutation fuzz.

The rule checked everywhere: opening read-only and reading every key either raises a
:class:`~dafzarr.DafzarrError` or returns the right bytes; it never crashes, hangs, allocates
without bound, returns wrong bytes silently, or modifies the file. A writable open either
raises a ``DafzarrError`` without touching the file, or leaves a valid archive whose entries
are a subset of the original ones with the right bytes, to which a new entry can be added.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dafzarr import (
    CorruptArchiveError,
    DafzarrError,
    MmapZipStore,
    RecoveryWarning,
    RefusedEntryWarning,
    UnsupportedEntryError,
)
from tests.helpers import zipbuild as zb
from tests.helpers.common import peak_allocation

APPENDED_KEY = "appended/after-open"
APPENDED = b"a new entry written after a writable open"

# ``expected`` maps a key to its right bytes, or to None when no bytes are right for it (the
# entry is hostile: the store must never serve it).
Expected = dict[str, bytes | None]


@dataclass
class ReadOutcome:
    open_error: BaseException | None = None
    values: dict[str, bytes | BaseException] = field(default_factory=dict)
    verify: list[str] = field(default_factory=list)
    keys_in_order: list[str] = field(default_factory=list)
    index_of: dict[str, int] = field(default_factory=dict)  # CD position of the chosen record

    def served(self) -> dict[str, bytes]:
        return {k: v for k, v in self.values.items() if isinstance(v, bytes)}


def read_only(path: Path, **kw: Any) -> ReadOutcome:
    """Open read-only, read every key, and check the file was not modified."""
    before = path.read_bytes()
    out = ReadOutcome()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RefusedEntryWarning)  # such keys are not served
            store = MmapZipStore(path, "r", **kw)
        keys = store.keys()
    except DafzarrError as e:
        out.open_error = e
        assert path.read_bytes() == before
        return out
    try:
        out.keys_in_order = keys
        assert len(keys) == len(set(keys)) == len(store)
        try:
            infos = store.info()
        except DafzarrError:
            infos = []  # info() resolves every data offset: it may refuse a damaged entry
        for i, info in enumerate(infos):
            out.index_of[info["name"]] = i  # the last of duplicate names wins
        for k in keys:
            try:
                out.values[k] = bytes(store[k])
            except (DafzarrError, KeyError) as e:
                out.values[k] = e
        out.verify = store.verify()
    finally:
        store.close()
    assert path.read_bytes() == before, "a read-only open modified the file"
    return out


def assert_served_correctly(out: ReadOutcome, expected: Expected) -> None:
    for k, v in out.served().items():
        assert k in expected, f"the store serves a key that is not in the archive: {k!r}"
        want = expected[k]
        assert want is not None, f"the store serves hostile entry {k!r}: {v[:64]!r}"
        assert v == want, f"wrong bytes for {k!r}"


def writable(path: Path, expected: Expected, **kw: Any) -> str:
    """Writable open of a copy of ``path``; return 'refused' or 'recovered'."""
    w = path.with_name(path.stem + "-writable.zip")
    shutil.copyfile(path, w)
    before = w.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        try:
            store = MmapZipStore(w, "r+", **kw)
            store.keys()
        except DafzarrError:
            assert w.read_bytes() == before, "a refused writable open modified the file"
            return "refused"
        try:
            store[APPENDED_KEY] = APPENDED
        finally:
            store.close()
    out = read_only(w, **kw)
    assert out.open_error is None, f"writable open left an archive that does not open: {out}"
    assert out.values.get(APPENDED_KEY) == APPENDED
    assert out.keys_in_order[-1] == APPENDED_KEY
    assert_served_correctly(out, {**expected, APPENDED_KEY: APPENDED})
    with zipfile.ZipFile(w) as z:
        assert APPENDED_KEY in z.namelist()
        assert z.read(APPENDED_KEY) == APPENDED
    return "recovered"


def check(path: Path, expected: Expected, local: Expected | None = None, **kw: Any) -> ReadOutcome:
    """Read-only and writable checks; ``local`` gives, for entries the directory gets wrong,
    the bytes their own local header describes consistently (CRC included): a writable
    open that rebuilds the directory from local headers may legitimately serve those."""
    out = read_only(path, **kw)
    assert_served_correctly(out, expected)
    writable(path, {**expected, **(local or {})}, **kw)
    return out


# --- Hand-built hostile archives --------------------------------------------------------

GOOD = {
    "good/stored": b"a stored entry that is fine",
    "good/deflated": b"a deflated entry that is fine " * 40,
}


def good_members() -> list[zb.Member]:
    return [
        zb.Member("good/stored", GOOD["good/stored"]),
        zb.Member.compressed("good/deflated", GOOD["good/deflated"], 8),
    ]


def zip64_extra(*values: int) -> bytes:
    return struct.pack(f"<HH{len(values)}Q", 1, 8 * len(values), *values)


@dataclass
class Case:
    data: bytes
    expected: Expected
    kw: dict[str, Any] = field(default_factory=dict)
    # The error the read-only side must produce, at open or when reading the hostile key.
    error: type[BaseException] = DafzarrError
    must_fail: bool = True
    local: Expected = field(default_factory=dict)


def _with_last(member: zb.Member, local: bytes | None = None) -> Case:
    """The good entries, then ``member`` (hostile); ``local``: the bytes its local header
    consistently describes, when it does."""
    data = zb.build([*good_members(), member]).data
    name = member.raw_name.decode("utf-8", "replace")
    return Case(data, {**GOOD, name: None}, local={} if local is None else {name: local})


def _two_pass(members: Callable[[zb.Built | None], list[zb.Member]], **kw: Any) -> bytes:
    """Build once to learn the offsets, then again with fields that depend on them."""
    first = zb.build(members(None), **kw)
    return zb.build(members(first), **kw).data


def case_csize_past_eof() -> Case:
    return _with_last(
        zb.Member("bad", b"0123456789", cd_csize=1_000_000, cd_usize=1_000_000), b"0123456789"
    )


def case_csize_into_cd() -> Case:
    return _with_last(zb.Member("bad", b"0123456789", cd_csize=40, cd_usize=40), b"0123456789")


def case_deflate_csize_into_cd() -> Case:
    plain = b"deflate into the directory" * 9
    m = zb.Member.compressed("bad", plain, 8)
    m.cd_csize = len(m.data) + 30
    return _with_last(m, plain)


def case_zip64_csize_past_eof() -> Case:
    m = zb.Member(
        "bad", b"0123456789", cd_csize=zb.U32, cd_usize=zb.U32, cd_extra=zip64_extra(2**62, 2**62)
    )
    return _with_last(m, b"0123456789")


def case_lfh_offset_past_eof() -> Case:
    return _with_last(zb.Member("bad", b"0123456789", cd_lfh_offset=10**9), b"0123456789")


def case_zip64_lfh_offset_huge() -> Case:
    return _with_last(
        zb.Member("bad", b"0123456789", cd_lfh_offset=zb.U32, cd_extra=zip64_extra(2**64 - 1)),
        b"0123456789",
    )


def case_lfh_offset_into_cd() -> Case:
    def members(first: zb.Built | None) -> list[zb.Member]:
        off = first.cd_offset if first else 0
        return [*good_members(), zb.Member("bad", b"0123456789", cd_lfh_offset=off)]

    return Case(_two_pass(members), {**GOOD, "bad": None}, local={"bad": b"0123456789"})


def case_lfh_offset_past_cd() -> Case:
    def members(first: zb.Built | None) -> list[zb.Member]:
        off = first.eocd_offset if first else 0
        return [*good_members(), zb.Member("bad", b"0123456789", cd_lfh_offset=off)]

    return Case(_two_pass(members), {**GOOD, "bad": None}, local={"bad": b"0123456789"})


def case_shared_local_header() -> Case:
    members = [
        *good_members(),
        zb.Member(
            "good/other-name",
            write_local=False,
            cd_lfh_offset=0,
            crc=zlib.crc32(GOOD["good/stored"]),
            usize=len(GOOD["good/stored"]),
            cd_csize=len(GOOD["good/stored"]),
        ),
    ]
    return Case(
        zb.build(members).data, {**GOOD, "good/other-name": None}, error=CorruptArchiveError
    )


def case_overlapping_stored_data() -> Case:
    """Entry A's stored data covers entry B's header and data, with a CRC that matches."""
    b_data = b"entry B" * 20

    def members(first: zb.Built | None) -> list[zb.Member]:
        a = zb.Member("a", b"A" * 50)
        b = zb.Member("b", b_data)
        if first is not None:
            span = first.data[first.data_offsets[0] : first.cd_offset]
            a = zb.Member(
                "a", b"A" * 50, crc=zlib.crc32(span), cd_csize=len(span), cd_usize=len(span)
            )
        return [a, b]

    return Case(_two_pass(members), {"a": None, "b": b_data}, error=CorruptArchiveError)


def _hidden_overlap(name: str, lfh_extra: bytes) -> Case:
    """Entry A's data is entry B's whole local record; A's long name (or local extra field)
    puts B's header past ``A's header + 30 + A's size``, so a span check that leaves out
    A's name and extra lengths misses the overlap."""
    b_data = b"entry B " * 8
    inner = zb.build([zb.Member("b", b_data)])
    b_record = inner.data[: inner.cd_offset]  # B's local header and data
    a = zb.Member(name, b_record, lfh_extra=lfh_extra)
    first = zb.build([a])
    b = zb.Member("b", b_data, write_local=False, cd_lfh_offset=first.data_offsets[0])
    assert first.data_offsets[0] >= 30 + len(b_record)  # the situation under test
    return Case(
        zb.build([a, b]).data,
        {name: None, "b": b_data},
        error=CorruptArchiveError,
        local={name: b_record},
    )


def case_overlapping_deflate_bomb() -> Case:
    """Many central records pointing into one deflate stream (the overlap zip bomb)."""
    plain = b"\x00" * (1 << 20)
    kernel = zb.Member.compressed("k0", plain, 8)
    members = [kernel] + [
        zb.Member(
            f"k{i}",
            kernel.data,
            8,
            crc=kernel.crc,
            usize=kernel.usize,
            write_local=False,
            cd_lfh_offset=0,
        )
        for i in range(1, 50)
    ]
    expected: Expected = {f"k{i}": None for i in range(1, 50)}
    expected["k0"] = plain
    return Case(zb.build(members).data, expected, error=CorruptArchiveError)


def case_deflate_usize_understated() -> Case:
    """Decodes to 64 MiB, the directory says 1000 bytes with the CRC of the first 1000."""
    plain = b"\x00" * (64 << 20)
    m = zb.Member("bomb", zb.raw_deflate(plain, 1), 8, crc=zlib.crc32(plain[:1000]), usize=1000)
    return _with_last(m)


def case_deflate_over_max_decompressed() -> Case:
    plain = bytes(range(256)) * 4096  # 1 MiB, honest sizes
    case = _with_last(zb.Member.compressed("big", plain, 8))
    case.kw = {"max_decompressed_size": 1000}
    return case


def case_deflate_real_size_over_max() -> Case:
    plain = b"\x07" * (1 << 20)
    m = zb.Member("big", zb.raw_deflate(plain), 8, crc=zlib.crc32(plain[:500]), usize=500)
    case = _with_last(m)
    case.kw = {"max_decompressed_size": 1000}
    return case


def case_usize_over_default_max() -> Case:
    m = zb.Member(
        "huge",
        zb.raw_deflate(b"\x00" * 1000),
        8,
        crc=0,
        cd_usize=zb.U32,
        cd_extra=zip64_extra(2**40),
    )
    return _with_last(m)


def case_bzip2_usize_understated() -> Case:
    plain = b"\x01" * (8 << 20)
    m = zb.Member.compressed("bomb", plain, 12, crc=zlib.crc32(plain[:1000]), usize=1000)
    return _with_last(m)


def case_zstd_declared_size_mismatch() -> Case:
    plain = b"\x02" * (8 << 20)
    m = zb.Member.compressed("bomb", plain, 93, crc=zlib.crc32(plain[:1000]), usize=1000)
    return _with_last(m)


def case_stored_sizes_disagree() -> Case:
    return _with_last(zb.Member("bad", b"0123456789", cd_usize=5), b"0123456789")


def case_lfh_method_differs() -> Case:
    m = zb.Member.compressed("bad", b"method mismatch" * 20, 8, cd_method=0)
    return _with_last(m, b"method mismatch" * 20)


def case_missing_zip64_extra() -> Case:
    return _with_last(zb.Member("bad", b"0123456789", cd_csize=zb.U32), b"0123456789")


def case_short_zip64_extra() -> Case:
    m = zb.Member("bad", b"0123456789", cd_csize=zb.U32, cd_usize=zb.U32, cd_extra=zip64_extra(10))
    return _with_last(m, b"0123456789")


def case_zip64_extra_runs_past_record() -> Case:
    m = zb.Member(
        "bad",
        b"0123456789",
        cd_csize=zb.U32,
        cd_usize=zb.U32,
        cd_extra=struct.pack("<HHQ", 1, 200, 10),
    )
    return _with_last(m, b"0123456789")


def _named(name: bytes, *, safe: bool = False) -> Case:
    """An archive whose last entry has the name ``name``: served only when ``safe``; the
    other entries are served either way, and a writable open refuses an unsafe name."""
    content = b"content of a dangerous name"
    m = zb.Member(name, content, flags=0x0800)
    key = name.decode("utf-8", "surrogateescape")
    data = zb.build([*good_members(), m]).data
    return Case(data, {**GOOD, key: content if safe else None}, must_fail=False)


def case_encrypted(bit: int) -> Case:
    content = b"pretend ciphertext" * 5
    case = _with_last(zb.Member("secret", content, flags=bit))
    case.error = UnsupportedEntryError
    return case


def _good_archive(**kw: Any) -> Case:
    return Case(zb.build(good_members(), **kw).data, dict(GOOD), must_fail=False)


def _cd_offset_shifted(delta: int) -> Case:
    first = zb.build(good_members())
    return _good_archive(cd_offset=first.cd_offset + delta)


def _cd_size_changed(delta: int) -> Case:
    first = zb.build(good_members())
    return _good_archive(cd_size=first.cd_size + delta)


def _zip64_locator_at(where: Callable[[zb.Built], int]) -> Case:
    first = zb.build(good_members(), zip64=True)
    return _good_archive(zip64=True, locator_offset=where(first))


def _comment_length_past_eof() -> Case:
    data = bytearray(zb.build(good_members(), comment=b"0123456789").data)
    struct.pack_into("<H", data, len(data) - 12, 500)
    return Case(bytes(data), dict(GOOD), must_fail=False)


def _prefixed() -> Case:
    """Bytes before the first local header that the offsets do not account for."""
    good = zb.build(good_members()).data
    return Case(b"\x00" * 64 + good, dict(GOOD), must_fail=False)


def _lfh_name_differs() -> Case:
    # The central directory is authoritative for names: the entry is "renamed".
    m = zb.Member("cd-name", b"renamed entry data", cd_name=b"cd-name")
    data = bytearray(zb.build([*good_members(), m]).data)
    pos = data.find(b"cd-name")  # the local header's copy comes first
    data[pos : pos + 7] = b"lf-name"
    return Case(
        bytes(data), {**GOOD, "cd-name": b"renamed entry data", "lf-name": None}, must_fail=False
    )


CASES: dict[str, Callable[[], Case]] = {
    "csize-past-eof": case_csize_past_eof,
    "csize-into-cd": case_csize_into_cd,
    "deflate-csize-into-cd": case_deflate_csize_into_cd,
    "zip64-csize-past-eof": case_zip64_csize_past_eof,
    "lfh-offset-past-eof": case_lfh_offset_past_eof,
    "zip64-lfh-offset-2**64-1": case_zip64_lfh_offset_huge,
    "lfh-offset-into-cd": case_lfh_offset_into_cd,
    "lfh-offset-past-cd": case_lfh_offset_past_cd,
    "shared-local-header": case_shared_local_header,
    "overlapping-stored-data": case_overlapping_stored_data,
    "overlapping-deflate-bomb": case_overlapping_deflate_bomb,
    "overlap-hidden-by-long-name": lambda: _hidden_overlap("a" * 200, b""),
    "overlap-hidden-by-local-extra": lambda: _hidden_overlap(
        "a", struct.pack("<HH", 0xCAFE, 196) + bytes(196)
    ),
    "deflate-usize-understated": case_deflate_usize_understated,
    "deflate-over-max-decompressed": case_deflate_over_max_decompressed,
    "deflate-real-size-over-max": case_deflate_real_size_over_max,
    "usize-over-default-max": case_usize_over_default_max,
    "bzip2-usize-understated": case_bzip2_usize_understated,
    "zstd-declared-size-mismatch": case_zstd_declared_size_mismatch,
    "stored-sizes-disagree": case_stored_sizes_disagree,
    "lfh-method-differs": case_lfh_method_differs,
    "missing-zip64-extra": case_missing_zip64_extra,
    "short-zip64-extra": case_short_zip64_extra,
    "zip64-extra-past-record": case_zip64_extra_runs_past_record,
    "name-dotdot": lambda: _named(b"../x"),
    "name-absolute": lambda: _named(b"/abs"),
    "name-inner-dotdot": lambda: _named(b"a/../b"),
    "name-dot": lambda: _named(b"./x"),
    "name-nul": lambda: _named(b"nul\x00name"),
    "name-backslash": lambda: _named(b"..\\x"),
    "name-not-utf8": lambda: _named(b"\xff\xfe"),
    "name-empty": lambda: _named(b"", safe=True),
    "encrypted-bit0": lambda: case_encrypted(0x0001),
    "encrypted-bit6": lambda: case_encrypted(0x0041),
    "encrypted-bit13": lambda: case_encrypted(0x2000),
    "multi-disk-eocd-disk": lambda: _good_archive(disk=1),
    "multi-disk-eocd-cd-disk": lambda: _good_archive(cd_disk=2),
    "multi-disk-eocd-per-disk-count": lambda: _good_archive(n_disk=1),
    "multi-disk-zip64-total-disks": lambda: _good_archive(zip64=True, total_disks=3),
    "multi-disk-zip64-locator-disk": lambda: _good_archive(zip64=True, locator_disk=1),
    "multi-disk-zip64-eocd-disk": lambda: _good_archive(zip64=True, z64_disk=1),
    "multi-disk-zip64-cd-disk": lambda: _good_archive(zip64=True, z64_cd_disk=1),
    "multi-disk-entry-start-disk": lambda: Case(
        zb.build([zb.Member("good/stored", GOOD["good/stored"], disk_start=1)]).data,
        {"good/stored": GOOD["good/stored"]},
        must_fail=False,
    ),
    "count-one-more": lambda: _good_archive(n_entries=3),
    "count-one-less": lambda: _good_archive(n_entries=1),
    "count-zero": lambda: _good_archive(n_entries=0),
    "count-sentinel-without-zip64": lambda: _good_archive(n_entries=0xFFFF),
    "count-zip64-huge": lambda: _good_archive(zip64=True, n_entries=2**40),
    "count-zip64-2**64-1": lambda: _good_archive(zip64=True, n_entries=2**64 - 1),
    "cd-size-larger": lambda: _cd_size_changed(+10),
    "cd-size-smaller": lambda: _cd_size_changed(-10),
    "cd-size-huge": lambda: _good_archive(cd_size=0xFFFFFFF0),
    "cd-offset-earlier": lambda: _cd_offset_shifted(-7),
    "cd-offset-later": lambda: _cd_offset_shifted(+7),
    "cd-offset-zero": lambda: _good_archive(cd_offset=0),
    "cd-offset-past-eof": lambda: _good_archive(cd_offset=10**8),
    "zip64-cd-offset-2**64-1": lambda: _good_archive(zip64=True, cd_offset=2**64 - 1),
    "zip64-record-size-huge": lambda: _good_archive(zip64=True, z64_record_size=2**62),
    "zip64-record-size-small": lambda: _good_archive(zip64=True, z64_record_size=4),
    "zip64-locator-past-eof": lambda: _zip64_locator_at(lambda b: 10**9),
    "zip64-locator-2**64-1": lambda: _zip64_locator_at(lambda b: 2**64 - 1),
    "zip64-locator-at-zero": lambda: _zip64_locator_at(lambda b: 0),
    "zip64-locator-at-itself": lambda: _zip64_locator_at(lambda b: b.eocd_offset - 20),
    "zip64-locator-into-cd": lambda: _zip64_locator_at(lambda b: b.cd_offset),
    "zip64-locator-one-off": lambda: _zip64_locator_at(lambda b: b.eocd_offset - 20 - 55),
    "comment-length-past-eof": _comment_length_past_eof,
    "prefix-bytes-unaccounted": _prefixed,
    "lfh-name-differs": _lfh_name_differs,
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_archive(tmp_path: Path, name: str) -> None:
    case = CASES[name]()
    p = tmp_path / "hostile.zip"
    p.write_bytes(case.data)
    out = check(p, case.expected, case.local, **case.kw)
    hostile = [k for k, v in case.expected.items() if v is None]
    if case.must_fail:
        errors = (
            [out.open_error]
            if out.open_error is not None
            else [out.values[k] for k in hostile if k in out.values]
        )
        assert errors, f"the hostile entries {hostile} were neither refused nor reported"
        assert all(isinstance(e, case.error) for e in errors), errors
    if out.open_error is None:
        # Whatever the store refused to decode, verify() reports.
        assert sorted(out.verify) == sorted(
            k for k, v in out.values.items() if not isinstance(v, bytes)
        )


def test_encrypted_entry_refused_others_read(tmp_path: Path) -> None:
    p = tmp_path / "enc.zip"
    p.write_bytes(zb.build([*good_members(), zb.Member("secret", b"x" * 64, flags=1)]).data)
    with MmapZipStore(p) as store:
        assert "secret" in store
        with pytest.raises(UnsupportedEntryError, match="encrypt"):
            store["secret"]
        assert store.try_mmap_entry_as("secret", np.uint8, 64) is None
        for k, v in GOOD.items():
            assert bytes(store[k]) == v
        assert store.verify() == ["secret"]


def test_overlap_refused_at_open(tmp_path: Path) -> None:
    for builder, what in [
        (case_shared_local_header, "share one local header"),
        (case_overlapping_stored_data, "overlap"),
    ]:
        p = tmp_path / "overlap.zip"
        p.write_bytes(builder().data)
        with pytest.raises(CorruptArchiveError, match=what):
            MmapZipStore(p).keys()


def _peak_traced(fn: Callable[[], object]) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    try:
        fn()
        err = None
    except DafzarrError as e:
        err = e
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return err, peak


def test_deflate_bomb_is_bounded(tmp_path: Path) -> None:
    """An understated size stops decoding at the size the directory states, +1."""
    p = tmp_path / "bomb.zip"
    case = case_deflate_usize_understated()
    p.write_bytes(case.data)
    with MmapZipStore(p) as store:
        err, peak = _peak_traced(lambda: store["bomb"])
        assert isinstance(err, CorruptArchiveError)
        assert "1000" in str(err)
        assert peak < 8 << 20, f"decoding a 1000-byte entry allocated {peak} bytes"


def test_usize_over_limit_refused_before_decoding(tmp_path: Path) -> None:
    p = tmp_path / "big.zip"
    p.write_bytes(case_usize_over_default_max().data)
    with MmapZipStore(p) as store:
        err, peak = _peak_traced(lambda: store["huge"])
    assert isinstance(err, DafzarrError)
    assert "max_decompressed_size" in str(err)
    assert peak < 1 << 20
    plain = b"\x03" * 5000
    p.write_bytes(zb.build([zb.Member.compressed("e", plain, 12)]).data)
    with (
        MmapZipStore(p, max_decompressed_size=4999) as store,
        pytest.raises(DafzarrError, match="max_decompressed_size"),
    ):
        store["e"]
    with MmapZipStore(p, max_decompressed_size=5000) as store:
        assert bytes(store["e"]) == plain


def test_zstd_frame_without_content_size_is_bounded(tmp_path: Path) -> None:
    """An 8 KiB zstd frame of RLE blocks that decodes to 256 MiB, sizes understated."""
    frame = zb.zstd_rle_frame(0, 256 << 20)
    assert len(frame) < 16 << 10
    p = tmp_path / "zstd-bomb.zip"
    p.write_bytes(zb.build([zb.Member("bomb", frame, 93, crc=0, usize=100)]).data)
    with MmapZipStore(p, max_decompressed_size=1000) as store:
        err, peak = _peak_traced(lambda: store["bomb"])
    assert isinstance(err, DafzarrError)
    assert peak < 16 << 20, f"decoding a 100-byte zstd entry allocated {peak} bytes"


def test_small_zstd_frame_without_content_size_reads(tmp_path: Path) -> None:
    frame = zb.zstd_rle_frame(0x5A, 300_000)
    plain = b"\x5a" * 300_000
    p = tmp_path / "zstd-rle.zip"
    p.write_bytes(
        zb.build([zb.Member("rle", frame, 93, crc=zlib.crc32(plain), usize=len(plain))]).data
    )
    with MmapZipStore(p) as store:
        assert bytes(store["rle"]) == plain


def test_writable_open_scan_over_many_fake_end_records_is_not_quadratic(tmp_path: Path) -> None:
    """20,000 end-record signatures, each claiming the same 4 MB directory at offset 0.

    The recovery scan looks at every one; the claimed directory's first record decides it is
    bogus, so the scan costs one short read per candidate, not a 4 MB copy (which would add
    up to 80 GB here).
    """
    claimed = 4_000_000
    fake = zb.EOCD.pack(zb.EOCD_SIG, 0, 0, 1, 1, claimed, 0, 0)
    p = tmp_path / "fakes.zip"
    data = bytes(claimed) + fake * 20_000 + b"not an end record"
    p.write_bytes(data)
    # Work is measured in bytes, not seconds: not one claimed directory is copied whole.
    err, peak = peak_allocation(lambda: MmapZipStore(p, "r+").keys())
    assert isinstance(err, CorruptArchiveError), err
    assert p.read_bytes() == data
    assert peak < claimed // 4, f"refusing a 4 MB file allocated {peak} bytes"


# --- Truncation at every offset ---------------------------------------------------------


def _our_small_archive(path: Path) -> dict[str, bytes]:
    entries = {
        "zarr.json": b'{"zarr_format":3,"node_type":"group"}',
        "x/c/0": np.arange(6, dtype="<i4").tobytes(),
        "empty": b"",
    }
    with MmapZipStore(path, "w") as store:
        for k, v in entries.items():
            store[k] = v
    return entries


def _zipfile_small_archive(path: Path) -> dict[str, bytes]:
    entries = {
        "zarr.json": b'{"zarr_format":3,"node_type":"group"}' * 3,
        "x/c/0": np.arange(60, dtype="<i4").tobytes(),
        "stored": b"stored bytes",
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for k, v in entries.items():
            z.writestr(k, v, compress_type=zipfile.ZIP_STORED if k == "stored" else None)
    return entries


@pytest.mark.parametrize(
    "writer", [_our_small_archive, _zipfile_small_archive], ids=["ours", "zipfile-deflate"]
)
def test_truncation_at_every_offset(tmp_path: Path, writer: Callable[[Path], Expected]) -> None:
    src = tmp_path / "src.zip"
    expected = writer(src)
    full = src.read_bytes()
    p = tmp_path / "cut.zip"
    results = {"refused": 0, "recovered": 0, "read-only opened": 0}
    for cut in range(len(full)):
        p.write_bytes(full[:cut])
        out = read_only(p)
        assert_served_correctly(out, expected)
        if out.open_error is None:
            results["read-only opened"] += 1
        else:
            assert isinstance(out.open_error, CorruptArchiveError)
            assert str(p) in str(out.open_error)
        results[writable(p, expected)] += 1
    # Without its end records no archive opens read-only; the only writable "recovery" is of
    # the empty file (an interrupted creation).
    assert results["read-only opened"] == 0
    assert results["recovered"] >= 1


# --- Fuzz ---------------------------------------------------------------------------------


@dataclass(repr=False)
class Base:
    name: str
    data: bytes
    entries: list[tuple[str, bytes]]  # in central-directory order
    regions: dict[str, list[tuple[int, int]]]

    @property
    def expected(self) -> dict[str, bytes]:
        return dict(self.entries)

    def __repr__(self) -> str:  # keeps hypothesis' report of a failing example short
        return f"<{self.name} archive, {len(self.data)} bytes>"


class FuzzBases(dict[str, Any]):
    def __repr__(self) -> str:
        return "<fuzz base archives>"


def _regions(data: bytes) -> dict[str, list[tuple[int, int]]]:
    end = zb.end_records(data)
    records = zb.central_records(data)
    lfh = []
    for r in records:
        n_len, e_len = struct.unpack_from("<HH", data, r.lfh_offset + 26)
        lfh.append((r.lfh_offset, r.lfh_offset + 30 + n_len + e_len))
    cd = [(r.offset, r.offset + r.length) for r in records]
    trailer_start = end.zip64_eocd if end.zip64_eocd is not None else end.eocd
    return {
        "trailer": [(trailer_start, len(data))],
        "cd": cd,
        "lfh": lfh,
        "anywhere": [(0, len(data))],
    }


def _make_ours(path: Path) -> Base:
    rng = np.random.default_rng(7)
    entries = [
        ("zarr.json", b'{"zarr_format":3,"node_type":"group","attributes":{}}'),
        ("arr/zarr.json", b'{"shape":[300],"data_type":"float64"}'),
        ("arr/c/0", rng.standard_normal(100).tobytes()),
        ("arr/c/1", rng.standard_normal(100).tobytes()),
        ("arr/c/2", rng.standard_normal(100).tobytes()),
        ("empty", b""),
        ("names/with/a/longer/path/\u00e9t\u00e9", b"utf-8 name"),
    ]
    with MmapZipStore(path, "w") as store:
        for k, v in entries[:3]:
            store[k] = v
        with store.batch():
            for k, v in entries[3:]:
                store[k] = v
    data = path.read_bytes()
    return Base("ours", data, entries, _regions(data))


def _make_zipfile(path: Path) -> Base:
    entries = [
        ("zarr.json", b'{"zarr_format":3,"node_type":"group","attributes":{}}' * 4),
        ("arr/c/0", np.arange(500, dtype="<f8").tobytes()),
        ("arr/c/1", b"\x00" * 3000),
        ("stored", b"this one is stored"),
        ("empty", b""),
        ("text", b"the quick brown fox jumps over the lazy dog " * 30),
    ]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for k, v in entries:
            z.writestr(k, v, compress_type=zipfile.ZIP_STORED if k == "stored" else None)
    data = path.read_bytes()
    return Base("zipfile-deflate", data, entries, _regions(data))


@pytest.fixture(scope="module")
def fuzz_bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("fuzz")
    return FuzzBases(
        dir=d,
        ours=_make_ours(d / "ours-base.zip"),
        **{"zipfile-deflate": _make_zipfile(d / "zipfile-base.zip")},
    )


def assert_fuzz_outcome(out: ReadOutcome, base: Base) -> None:
    """Every served key has its original bytes, or verify() reports it.

    The central directory is authoritative for names, so a mutated name byte legitimately
    renames an entry: a key that was not in the archive may serve the bytes of the record
    the store chose (its position, when ``info()`` tells it) or, failing that, of one of
    the original entries.
    """
    expected = base.expected
    originals = {v for _, v in base.entries}
    for k, v in out.served().items():
        if k in out.verify or v == expected.get(k):
            continue
        i = out.index_of.get(k, -1)
        if 0 <= i < len(base.entries):
            ok = v == base.entries[i][1]
        else:
            ok = k not in expected and v in originals
        assert ok, (
            f"{base.name}: key {k!r} (record {i}) served {len(v)} wrong bytes {v[:32]!r} "
            "and verify() does not report it"
        )


def _interesting(size: int, width: int) -> list[int]:
    top = 256**width - 1
    values = {
        0,
        1,
        8,
        22,
        30,
        46,
        56,
        98,
        top,
        top - 1,
        top // 2 + 1,
        size,
        size - 1,
        size + 1,
        size - 22,
        size - 98,
        0xFFFF,
        0xFFFFFFFF,
        2**32,
        2**63,
    }
    return sorted(v for v in values if 0 <= v <= top)


def run_fuzz_example(base: Base, workdir: Path, data: st.DataObject) -> None:
    region = data.draw(st.sampled_from(sorted(base.regions)), label="region")
    spans = base.regions[region]
    buf = bytearray(base.data)
    n = data.draw(st.integers(1, 6), label="mutations")
    for _ in range(n):
        lo, hi = data.draw(st.sampled_from(spans), label="span")
        if hi <= lo:
            continue
        off = data.draw(st.integers(lo, hi - 1), label="offset")
        how = data.draw(st.sampled_from(["byte", "bit", "zero", "ff", "field"]), label="how")
        if how == "byte":
            buf[off] = data.draw(st.integers(0, 255), label="value")
        elif how == "bit":
            buf[off] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif how == "field":
            # A 2-, 4- or 8-byte little-endian field set to a value that means something
            # to a parser: sentinels, offsets and sizes of this very archive, or random.
            width = data.draw(st.sampled_from([2, 4, 8]), label="width")
            value = data.draw(
                st.sampled_from(_interesting(len(base.data), width))
                | st.integers(0, 256**width - 1),
                label="field value",
            )
            buf[off : off + width] = value.to_bytes(width, "little")
            del buf[len(base.data) :]  # a field written at the end does not grow the file
        else:
            buf[off] = 0 if how == "zero" else 0xFF
    if data.draw(st.booleans(), label="truncate"):
        buf = buf[: data.draw(st.integers(0, len(buf)), label="length")]
    p = workdir / f"{base.name}-mutated.zip"
    p.write_bytes(bytes(buf))
    try:
        _check_mutated(base, workdir, p)
    except AssertionError as exc:
        # keep the archive: later examples (and shrinking) overwrite the working copy
        kept = workdir / f"failing-{base.name}-{hashlib.sha1(buf).hexdigest()[:12]}.zip"
        kept.write_bytes(bytes(buf))
        original = kept.with_name(f"base-{base.name}.zip")
        original.write_bytes(base.data)
        exc.add_note(f"mutated archive kept at {kept}; its unmutated base at {original}")
        raise


def _check_mutated(base: Base, workdir: Path, p: Path) -> None:
    out = read_only(p)
    assert_fuzz_outcome(out, base)
    try:
        with zipfile.ZipFile(p) as z:
            z.namelist()
        zipfile_opens = True
    except Exception:  # noqa: BLE001 - zipfile refuses mutations in many ways
        zipfile_opens = False
    # Writable open: refused cleanly, or a valid archive whose entries have right bytes.
    w = workdir / f"{base.name}-mutated-writable.zip"
    shutil.copyfile(p, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        try:
            store = MmapZipStore(w, "r+")
            store.keys()
        except DafzarrError:
            assert w.read_bytes() == p.read_bytes(), "a refused writable open modified the file"
            return
        try:
            store[APPENDED_KEY] = APPENDED
        finally:
            store.close()
    after = read_only(w)
    assert after.open_error is None, f"writable open left an unreadable archive: {after}"
    assert after.values.get(APPENDED_KEY) == APPENDED
    del after.values[APPENDED_KEY]
    assert_fuzz_outcome(after, base)
    if zipfile_opens:  # what zipfile accepted before, it still accepts, with the new entry
        with zipfile.ZipFile(w) as z:
            assert z.read(APPENDED_KEY) == APPENDED


FUZZ_BASES = ["ours", "zipfile-deflate"]


@pytest.mark.parametrize("base_name", FUZZ_BASES)
@settings(
    max_examples=200,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_fuzz_mutated_archives(
    fuzz_bases: dict[str, Any], base_name: str, data: st.DataObject
) -> None:
    run_fuzz_example(fuzz_bases[base_name], fuzz_bases["dir"], data)


@pytest.mark.slow
@pytest.mark.parametrize("base_name", FUZZ_BASES)
@settings(
    max_examples=10_000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_fuzz_mutated_archives_long(
    fuzz_bases: dict[str, Any], base_name: str, data: st.DataObject
) -> None:
    run_fuzz_example(fuzz_bases[base_name], fuzz_bases["dir"], data)


def _renamed_in_directory(path: Path) -> bytes:
    """An archive whose directory record of ``arr/c/1`` was damaged into ``arr/c/0``: it
    lists ``arr/c/0`` twice, the newer record pointing at ``arr/c/1``'s header and data."""
    with MmapZipStore(path, "w") as store:
        store["arr/c/0"] = b"zero" * 50
        store["arr/c/1"] = b"one!" * 50
    data = bytearray(path.read_bytes())
    pos = data.index(b"arr/c/1", data.index(b"PK\x01\x02"))  # in the directory
    data[pos + 6] = ord("0")
    path.write_bytes(bytes(data))
    return bytes(data)


def test_a_directory_record_naming_another_entrys_header_is_refused(tmp_path: Path) -> None:
    """Reading serves no bytes under a name whose local header names another entry, and
    ``verify()`` reports it (zipfile refuses such an entry too)."""
    p = tmp_path / "renamed.zip"
    _renamed_in_directory(p)
    with MmapZipStore(p) as store:
        assert sorted(store) == ["arr/c/0"]
        with pytest.raises(
            CorruptArchiveError,
            match=r"'arr/c/0': the local header at offset "
            r"\d+ names 'arr/c/1'",
        ):
            bytes(store["arr/c/0"])
        assert store.verify() == ["arr/c/0"]
    with zipfile.ZipFile(p) as z, pytest.raises(zipfile.BadZipFile, match="differ"):
        z.read(z.infolist()[1])


def test_a_writable_open_does_not_drop_the_intact_copy_of_a_name_listed_twice(
    tmp_path: Path,
) -> None:
    """A commit keeps the newest record of a name: when that record is damaged, the older
    (intact) copy would be dropped, so the writable open is refused and the file kept."""
    p = tmp_path / "renamed.zip"
    before = _renamed_in_directory(p)
    with pytest.raises(CorruptArchiveError, match="lists 'arr/c/0' more than once"):
        MmapZipStore(p, "r+")
    assert p.read_bytes() == before


@pytest.mark.parametrize(
    "builder",
    [case_overlapping_stored_data, CASES["overlap-hidden-by-long-name"]],
    ids=["stored-data", "hidden-by-long-name"],
)
def test_an_entry_inside_another_entrys_data_is_never_dropped(
    tmp_path: Path, builder: Callable[[], Case]
) -> None:
    """``zipfile`` reads both entries of such a complete directory; rebuilding it from the
    local headers would keep only the outer one. A writable open and ``dafzarr zip repair``
    refuse it, name both entries, and leave the file as it was."""
    p = tmp_path / "overlap.zip"
    p.write_bytes(builder().data)
    before = p.read_bytes()
    with zipfile.ZipFile(p) as z:
        assert len(z.namelist()) == 2 and z.read("b")  # both are there to read
    with pytest.raises(
        CorruptArchiveError,
        match=r"entries '\w+' and 'b' overlap.*no entry "
        "was dropped",
    ):
        MmapZipStore(p, "r+")
    assert p.read_bytes() == before
    res = subprocess.run(
        [sys.executable, "-m", "dafzarr", "zip", "repair", str(p)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode != 0 and "overlap" in res.stderr, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert p.read_bytes() == before


def test_an_overlap_hidden_from_the_directory_keeps_both_entries(tmp_path: Path) -> None:
    """Entry A's local extra field hides from the directory that A's data holds B's record:
    a writable open keeps both listed (A is refused when read, B is served), and a commit
    keeps both for ``zipfile``."""
    p = tmp_path / "overlap.zip"
    p.write_bytes(CASES["overlap-hidden-by-local-extra"]().data)
    with MmapZipStore(p, "r+") as store:
        assert bytes(store["b"]) == b"entry B " * 8
        store["c"] = b"new"
    with zipfile.ZipFile(p) as z:
        assert sorted(z.namelist()) == ["a", "b", "c"]
        assert z.read("b") == b"entry B " * 8 and len(z.read("a")) > 30


def test_an_outer_entry_listed_last_is_not_rolled_back(tmp_path: Path) -> None:
    """The entry whose data holds another entry's record, listed last, with a local extra
    field that hides the overlap from the directory: it checks out up to the directory, so
    it is no interrupted append to roll back; the writable open refuses and names both."""
    b_data = b"entry B " * 8
    inner = zb.build([zb.Member("b", b_data)])
    b_record = inner.data[: inner.cd_offset]
    a = zb.Member("a", b_record, lfh_extra=struct.pack("<HH", 0xCAFE, 196) + bytes(196))
    first = zb.build([a])
    b = zb.Member("b", b_data, write_local=False, cd_lfh_offset=first.data_offsets[0])
    p = tmp_path / "overlap.zip"
    p.write_bytes(zb.build([b, a]).data)
    before = p.read_bytes()
    with zipfile.ZipFile(p) as z:
        assert z.read("a") == b_record and z.read("b") == b_data
    with pytest.raises(
        CorruptArchiveError,
        match=r"entries 'a' and 'b' overlap.*no entry "
        r"was dropped",
    ):
        MmapZipStore(p, "r+")
    assert p.read_bytes() == before
