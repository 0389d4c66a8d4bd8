"""ArrayFile against hostile bytes: what a file claims is checked before it costs memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafzarr import DafzarrError
from dafzarr._core.arrayfile import format as fmt
from dafzarr.arrayfile import ArrayFile, CorruptArrayFileError
from tests.helpers.common import alias_strings, peak_allocation


def _aliased_footer(copies: int, length: int) -> bytes:
    """A footer whose ``copies`` attribute-key strings all point at one ``length``-byte string.

    It is about ``length + 16 * copies`` bytes and, decoded naively, ``copies * length``.
    """
    footer = fmt.empty_footer()
    footer["attr_keys"] = ["k" * length] + [f"{i:017d}" for i in range(copies)]
    data = bytearray(fmt.encode_footer(footer))
    payload_size = len(data) - 12
    return alias_strings(data, payload_size - 96 + 40, copies + 1)


def test_aliased_strings_are_refused_before_they_are_decoded(tmp_path: Path) -> None:
    """300 string records sharing one 100 kB string: 30 MB decoded from a 110 kB footer."""
    data = _aliased_footer(300, 100_000)
    assert len(data) < 120_000
    with pytest.raises(fmt.CorruptFooterError, match="alias"):
        fmt.decode_footer(memoryview(data)[:-12])
    p = tmp_path / "alias.af"
    p.write_bytes(data)
    err, peak = peak_allocation(lambda: ArrayFile.open(p))
    assert isinstance(err, CorruptArrayFileError), err
    assert isinstance(err, DafzarrError)
    assert "alias.af" in str(err)
    assert peak < 4 * len(data) + (1 << 20), f"refusing a {len(data)}-byte file took {peak}"


def test_unaliased_long_strings_still_decode() -> None:
    footer = fmt.empty_footer()
    footer["attr_keys"] = ["k" * 100_000] + [f"{i:017d}" for i in range(300)]
    payload = fmt.encode_footer(footer)[:-12]
    assert fmt.decode_footer(payload)["attr_keys"] == footer["attr_keys"]


def test_every_arrayfile_error_is_a_dafzarr_error_and_a_builtin() -> None:
    import dafzarr.arrayfile as af
    from dafzarr import errors
    from dafzarr._core.arrayfile import rkyv as rk

    for cls, builtin in [
        (af.CorruptArrayFileError, ValueError),
        (af.UnsupportedElementTypeError, TypeError),
        (af.ArrayNotFoundError, KeyError),
        (af.ArrayExistsError, ValueError),
        (fmt.CorruptFooterError, ValueError),
        (rk.RkyvError, ValueError),
    ]:
        assert issubclass(cls, errors.DafzarrError) and issubclass(cls, builtin), cls
        assert getattr(errors, cls.__name__) is cls and cls.__name__ in errors.__all__
    # a KeyError subclass that prints its message as written, not quoted
    assert str(af.ArrayNotFoundError("a.af: no array named 'x'")) == "a.af: no array named 'x'"
