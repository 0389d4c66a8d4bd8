"""Each binary layout is defined once, for the compiled modules and for Python alike.

The ZIP records' constants, padding rule and key check live in ``_ext/_zipformat.pxd`` and
reach Python through :mod:`dafzarr._zipdir`; the ArrayFile footer's tag tables and record
sizes live in :mod:`dafzarr._affooter`; the little-endian byte helpers in ``_ext/_bytes.pxd``;
the CRC-32 kernel is compiled into :mod:`dafzarr._posix` only. These tests check that the
Python and compiled views agree, and (on a source tree) that no copy came back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafzarr import _affooter, _posix, _zipdir
from dafzarr._core.arrayfile import format as af
from dafzarr._core.zipstore import ziprecords as zf
from dafzarr._core.zipstore.input import encode_key
from dafzarr.errors import InvalidArgumentError
from tests.helpers import ROOT

EXT = ROOT / "_ext"
needs_tree = pytest.mark.skipif(not EXT.is_dir(), reason="needs the source tree (_ext/)")


def _pyx() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(EXT.glob("*.pyx"))}


# --- Source tree: one definition of each ------------------------------------------------------


@needs_tree
def test_every_extension_has_the_same_directive_line() -> None:
    firsts = {name: text.splitlines()[0] for name, text in _pyx().items()}
    assert len(set(firsts.values())) == 1, firsts
    line = next(iter(firsts.values()))
    for directive in (
        "language_level=3",
        "boundscheck=False",
        "wraparound=False",
        "cdivision=True",
    ):
        assert directive in line


@needs_tree
def test_byte_helpers_are_defined_only_in_bytes_pxd() -> None:
    shift = re.compile(r"<<\s*(8|16|24|32)\b")  # bytes assembled by hand
    local = re.compile(r"cdef inline \w+ _(u16|u32|u64|i64|f64|put16|put32|put64)\(")
    for name, text in _pyx().items():
        code = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
        assert not [
            ln
            for ln in code
            if shift.search(ln)
            and "<<" in ln.split("=")[-1]
            and "1 <<" not in ln
            and "0o" not in ln
        ], name
        assert not local.search(text), name
    assert "cdef inline uint32_t le_u32(" in (EXT / "_bytes.pxd").read_text(encoding="utf-8")


@needs_tree
def test_the_crc_kernel_is_compiled_once() -> None:
    including = sorted(
        name for name, text in _pyx().items() if re.search(r'"_crc32_(kernel|parallel)\.h"', text)
    )
    assert including == ["_posix.pyx"]
    assert "from dafzarr._posix cimport crc32_copy" in _pyx()["_zipdir.pyx"]


@needs_tree
def test_zip_constants_are_not_restated_in_python() -> None:
    text = Path(zf.__file__).read_text(encoding="utf-8")
    assigned = re.findall(r"^([A-Z][A-Z0-9_]*)(?:: int)? = (.*)$", text, re.MULTILINE)
    shared = [(name, value) for name, value in assigned if hasattr(_zipdir, name)]
    assert len(shared) >= 30
    for name, value in shared:
        assert value.split("  #")[0] == f"_zipdir.{name}", name


# --- The running modules: Python and C agree --------------------------------------------------


def test_crc_kernel_is_exported_by_posix() -> None:
    assert "crc32_copy" in _posix.__pyx_capi__  # type: ignore[attr-defined]


def test_zip_format_takes_the_compiled_values() -> None:
    names = (
        "LFH_SIG",
        "DEAD_LFH_SIG",
        "CD_SIG",
        "EOCD_SIG",
        "ZIP64_EOCD_SIG",
        "ZIP64_LOCATOR_SIG",
        "LFH_SIZE",
        "CD_SIZE",
        "EOCD_SIZE",
        "ZIP64_EOCD_SIZE",
        "ZIP64_LOCATOR_SIZE",
        "TRAILER_SIZE",
        "FLAG_UTF8",
        "FLAG_ENCRYPTED",
        "EXTERNAL_ATTR",
        "PAD_EXTRA_ID",
        "U32_MAX",
        "MAX_NAME",
        "LFH_CRC_OFFSET",
    )
    for name in names:
        assert getattr(zf, name) == getattr(_zipdir, name), name
    # the values the ZIP specification and this store's layout fix
    assert zf.TRAILER_SIZE == zf.ZIP64_EOCD_SIZE + zf.ZIP64_LOCATOR_SIZE + zf.EOCD_SIZE == 98
    assert zf.DEAD_LFH_SIG.to_bytes(4, "little") == b"DZ\xde\xad"
    assert zf.EXTERNAL_ATTR == 0o100644 << 16
    assert zf.FLAG_ENCRYPTED == 0x0001 | 0x0040 | 0x2000
    assert len(zf.EMPTY_ARCHIVE) == zf.TRAILER_SIZE


@given(st.integers(-(1 << 40), 1 << 40), st.integers(0, 0xFFFF))
def test_padding_rule_is_python_arithmetic(offset: int, name_length: int) -> None:
    pad = zf.alignment_padding(offset, name_length)
    assert pad in (0, 4, 5, 6, 7, 9, 10, 11)
    assert (offset + zf.LFH_SIZE + name_length + zf.LFH_ZIP64_EXTRA + pad) % 8 == 0


KEYS = [
    "a",
    "a/b",
    "a/b/c.json",
    ".zattrs",
    "a/.zarray",
    "a..",
    "...",
    "a/...",
    "é/ü",
    "",
    "/",
    "/a",
    "a/",
    "a//b",
    ".",
    "..",
    "./a",
    "a/.",
    "a/./b",
    "a/../b",
    "..a/b",
    "a\\b",
    "a\x00b",
    "\udcff",
    "a" * 0xFFFF,
    "a" * 0x10000,
    "é" * 0x8000,
]


def _python_refuses(key: str) -> bool:
    """The refusals stated in Python (the messages' reasons), as they stood alone."""
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return (
        not key
        or key.endswith("/")
        or "//" in key
        or zf.unsafe_name_reason(key) is not None
        or len(raw) > zf.MAX_NAME
    )


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_key_check_agrees_with_its_messages(key: str) -> None:
    refused = _python_refuses(key)
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        raw = None
    assert (raw is None or not zf.plain_key(raw)) == refused
    if refused:
        with pytest.raises(InvalidArgumentError, match=r"store\.zip: (?!invalid key '.*'$)"):
            encode_key(key, "store.zip")
    else:
        assert encode_key(key, "store.zip") == raw


@given(st.text(alphabet=st.sampled_from("ab./\\\x00é"), max_size=12))
def test_key_check_agrees_on_any_key(key: str) -> None:
    assert zf.plain_key(key.encode("utf-8")) == (not _python_refuses(key))


def test_arrayfile_schema_takes_the_compiled_tables() -> None:
    dtype_names = {tag: v[0] for tag, v in af._DTYPE.variants.items()}
    assert {t: n for t, n in dtype_names.items() if t not in (13, 14)} == _affooter.UNIT_DTYPES
    assert tuple(v[0] for _, v in sorted(af._FILL.variants.items())) == _affooter.FILL_KINDS
    assert tuple(v[0] for _, v in sorted(af._STAT.variants.items())) == _affooter.STAT_KINDS
    assert tuple(v[0] for _, v in sorted(af._ATTRS.variants.items())) == _affooter.ATTR_WIDTHS
    assert af._ARRAY.size == _affooter.ARRAY_SIZE == 168
    assert af._ARRAY_STATS.size == _affooter.STATS_SIZE == 96
