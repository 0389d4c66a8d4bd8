"""The registry of compression methods and its one bounded decode.

Every registered method round-trips (small data decoded at once, large claims proven first,
sizes the caller does not know), a claim the method cannot produce or the data does not decode
to is refused in bounded memory, and no module outside ``dafzarr._core.codecs`` decompresses.
"""

from __future__ import annotations

import bz2
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import lz4.block
import numpy as np
import pytest
from numcodecs import GZip, Zstd
from numcodecs.blosc import Blosc

from dafzarr._core import codecs
from dafzarr._core.codecs import METHODS, decode, lookup, zip_method
from dafzarr.errors import CorruptArchiveError, DafFormatError, DafzarrError
from tests.helpers import ROOT
from tests.helpers.common import peak_allocation
from tests.helpers.layout_checks import (
    check_modules_import_alone,
    check_no_import_cycle,
    module_problems,
)


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _deflate64(data: bytes) -> bytes:
    inflate64 = pytest.importorskip("inflate64")
    d = inflate64.Deflater()
    return bytes(d.deflate(data) + d.flush())


COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "stored": bytes,
    "deflate": _raw_deflate,
    "deflate64": _deflate64,
    "bzip2": bz2.compress,
    "zstd": lambda data: bytes(Zstd(level=3).encode(data)),
    "gzip": lambda data: bytes(GZip().encode(data)),
    "lz4": lambda data: bytes(lz4.block.compress(data, store_size=False)),
    "blosc": lambda data: bytes(Blosc().encode(data)),
}
"""A writer of every registered method (a method registered without one fails below)."""


def _sample(size: int, noise: int = 64) -> bytes:
    """Mostly zeros (highly compressible: large claims must be proven) with random bytes."""
    rng = np.random.default_rng(size)
    data = np.zeros(size, np.uint8)
    data[rng.integers(0, size, noise)] = rng.integers(1, 256, noise)
    return data.tobytes()


def _transient(name: str) -> int:
    """The memory a refusal may cost: a few pieces, or for DEFLATE64 (whose decoder has no
    output limit) what 256 bytes of input may emit, about 7 MiB."""
    return 16 << 20 if name == "deflate64" else 1 << 20


SMALL = _sample(100_000)
LARGE = _sample(4 << 20)  # decoded twice: first in pieces, then into one buffer


def test_every_registered_method_has_a_writer_here() -> None:
    assert set(COMPRESS) == set(METHODS)


@pytest.mark.parametrize("name", sorted(COMPRESS))
@pytest.mark.parametrize("plain", [SMALL, LARGE, b""], ids=["small", "large", "empty"])
def test_every_method_round_trips(name: str, plain: bytes) -> None:
    data = COMPRESS[name](plain)
    crc = zlib.crc32(plain)
    out = decode(name, data, len(plain), what="x", crc=crc)
    assert out.readonly and bytes(out) == plain
    unknown = decode(name, data, None, what="x", at_most=len(plain))
    assert bytes(unknown) == plain


@pytest.mark.parametrize("name", sorted(COMPRESS))
@pytest.mark.parametrize("plain", [SMALL, LARGE], ids=["small", "large"])
def test_a_wrong_crc_is_refused(name: str, plain: bytes) -> None:
    data = COMPRESS[name](plain)
    with pytest.raises(CorruptArchiveError, match=r"^k\.zip: entry 'e' fails its CRC-32 check$"):
        decode(name, data, len(plain), what="k.zip: entry 'e'", crc=zlib.crc32(plain) ^ 1)


@pytest.mark.parametrize("name", sorted(COMPRESS))
@pytest.mark.parametrize("delta", [-1, 1, 100_000])
def test_a_lying_size_is_refused_in_bounded_memory(name: str, delta: int) -> None:
    """A 4 MiB stream under a claim that is wrong by its length: refused without holding the
    claim (or the 4 MiB), by the caller's exception class, naming the caller's data."""
    data = COMPRESS[name](LARGE)
    claim = len(LARGE) + delta
    err, peak = peak_allocation(
        lambda: decode(name, data, claim, what="f.daf: chunk (3,)", error=DafFormatError)
    )
    assert isinstance(err, DafFormatError), err
    assert str(err).startswith("f.daf: chunk (3,)"), err
    assert peak < _transient(name), f"refusing a {len(data)}-byte {name} stream took {peak} bytes"


@pytest.mark.parametrize("name", sorted(COMPRESS))
def test_unknown_sizes_stop_at_the_callers_bound(name: str) -> None:
    data = COMPRESS[name](LARGE)
    err, peak = peak_allocation(
        lambda: decode(name, data, None, what="x", at_most=1 << 20, error=DafFormatError)
    )
    assert isinstance(err, DafFormatError), err
    assert re.search(r"more than 1048576", str(err)), err
    assert peak < (1 << 20) + _transient(name), f"a {name} stream bounded by 1 MiB took {peak}"


@pytest.mark.parametrize(
    "name", sorted(n for n, m in METHODS.items() if m.max_ratio is not None or m.bound)
)
def test_an_impossible_ratio_is_refused_before_decoding(name: str) -> None:
    m = METHODS[name]
    data = COMPRESS[name](SMALL)
    most = m.bound(data) if m.bound else 0
    if m.max_ratio is not None:
        most = m.max_ratio * len(data) + m.ratio_slack
    claim = most + 1
    err, peak = peak_allocation(lambda: decode(name, data, claim, what="a.zip: entry 'e'"))
    assert isinstance(err, CorruptArchiveError), err
    assert f"a.zip: entry 'e' claims {claim} bytes, but {len(data)} bytes of" in str(err)
    assert f"decode to at most {most}" in str(err)
    assert peak < 256 << 10, f"refusing an impossible claim allocated {peak} bytes"


def test_damaged_data_is_the_callers_error_naming_the_method() -> None:
    data = bytearray(COMPRESS["bzip2"](SMALL))
    data[20:30] = b"\xff" * 10
    with pytest.raises(DafFormatError, match=r"^w \(BZIP2\) does not decode: ") as info:
        decode("bzip2", bytes(data), len(SMALL), what="w", error=DafFormatError)
    assert isinstance(info.value, DafzarrError)


def test_unknown_method_names_every_registered_one() -> None:
    with pytest.raises(CorruptArchiveError) as info:
        decode("lzma", b"", 0, what="a.zip: entry 'e'")
    msg = str(info.value)
    assert msg.startswith("a.zip: entry 'e': unknown compression method 'lzma'")
    assert all(name in msg for name in METHODS)
    assert lookup("lzma") is None


def test_zip_ids_find_their_methods() -> None:
    ids = {m.zip_id: name for name, m in METHODS.items() if m.zip_id is not None}
    assert ids == {0: "stored", 8: "deflate", 9: "deflate64", 12: "bzip2", 93: "zstd"}
    for zip_id, name in ids.items():
        found = zip_method(zip_id)
        assert found is not None and found.name == name
    assert zip_method(14) is None


def test_a_method_registers_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        codecs.register(METHODS["zstd"])


# --- Layout ------------------------------------------------------------------------------

_DECOMPRESSING = re.compile(
    r"\bdecompress(obj)?\(|BZ2Decompressor|ZstdDecompressor|\bInflater\b|import inflate64|"
    r"import zstandard|import bz2|numcodecs\.zstd|from numcodecs import [\w, ]*\bzstd\b|"
    r"(Blosc|GZip|Zstd|LZ4|Zlib|BZ2)\([^)]*\)\.decode\(|lz4_decoded_size"
)


def decompressing_modules(package: Path) -> list[str]:
    """The modules under ``package`` (outside ``_core/codecs``) that decompress by themselves."""
    found = []
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.pyx")]):
        if "codecs" in path.relative_to(package).parts:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _DECOMPRESSING.search(line.split("#")[0]):
                found.append(f"{path.relative_to(package)}:{i}: {line.strip()}")
    return found


def test_no_module_outside_codecs_decompresses() -> None:
    """Compressed reads go through ``dafzarr._core.codecs`` (writers may compress where they are)."""
    assert decompressing_modules(ROOT / "dafzarr") == []


def test_the_layout_check_finds_a_decompressor(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import zlib\nout = zlib.decompressobj(-15)\n")
    (tmp_path / "codecs").mkdir()
    (tmp_path / "codecs" / "ok.py").write_text("import bz2\n")
    assert decompressing_modules(tmp_path) == ["m.py:2: out = zlib.decompressobj(-15)"]


def test_codecs_package_has_no_import_cycle() -> None:
    check_no_import_cycle(codecs, "__init__")


def test_codecs_modules_import_alone() -> None:
    check_modules_import_alone(codecs)


@pytest.mark.parametrize(
    "module", sorted(p.stem for p in (ROOT / "dafzarr" / "_core" / "codecs").glob("*.py"))
)
def test_codecs_module_is_small_and_documented(module: str) -> None:
    assert not module_problems(ROOT / "dafzarr" / "_core" / "codecs" / f"{module}.py")


def test_a_zstd_frame_of_unknown_size_inside_the_data_decodes_within_the_claim() -> None:
    """A first frame stating no size that decodes to 4 MiB (RLE blocks), then a small frame,
    under a small claim its headers allow: refused without holding the 4 MiB."""
    from tests.helpers import zipbuild as zb

    head = zb.zstd_rle_frame(7, 4 << 20)
    tail = COMPRESS["zstd"](SMALL)
    plain = b"\7" * (4 << 20) + SMALL
    assert bytes(decode("zstd", head + tail, len(plain), what="x")) == plain
    err, peak = peak_allocation(lambda: decode("zstd", head + tail, 1000 + len(SMALL), what="x"))
    assert isinstance(err, CorruptArchiveError), err
    assert peak < 1 << 20, f"refusing a {len(head)}-byte frame allocated {peak} bytes"
