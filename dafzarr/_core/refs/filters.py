"""HDF5 filters as numcodecs codec configurations: one table keyed by HDF5 filter id.

Each known filter has a name (for messages) and, when numcodecs can decode its chunks, a
small function from the filter's client data (``cd_values``) and the element size to a
numcodecs config. A filter without one, or whose client data do not describe a decodable
configuration, makes the variable unsupported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ...errors import UnsupportedHDF5Error

__all__ = ["FILTERS", "HDF5Filter", "codec", "filter_label"]

# (client data, element size in bytes) -> numcodecs config, or None if not decodable.
CodecFactory = Callable[[tuple[int, ...], int], dict[str, Any] | None]


class HDF5Filter(NamedTuple):
    """What dafzarr knows of one HDF5 filter id."""

    name: str
    to_codec: CodecFactory | None = None


def _deflate(cd: tuple[int, ...], itemsize: int) -> dict[str, Any]:
    return {"id": "zlib", "level": int(cd[0]) if cd else 1}


def _shuffle(cd: tuple[int, ...], itemsize: int) -> dict[str, Any]:
    return {"id": "shuffle", "elementsize": itemsize}


def _fletcher32(cd: tuple[int, ...], itemsize: int) -> dict[str, Any]:
    return {"id": "fletcher32"}


def _zstd(cd: tuple[int, ...], itemsize: int) -> dict[str, Any]:
    return {"id": "zstd", "level": int(cd[0]) if cd else 0}


_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")


def _blosc(cd: tuple[int, ...], itemsize: int) -> dict[str, Any] | None:
    """The blosc HDF5 plugin's client data, as its filter reads them.

    ``(filter version, blosc format version, type size, chunk size in bytes, clevel,
    shuffle, compressor code)``; the plugin's own defaults (clevel 5, byte shuffle, blosclz)
    stand for the optional last three when absent. Each chunk's blosc header names how it
    was compressed, so decoding does not depend on these values; they describe the data
    for readers and for re-encoding. An unknown compressor code or shuffle mode (a newer
    plugin's) is not guessed at.
    """
    if len(cd) < 4:
        return None
    clevel = int(cd[4]) if len(cd) > 4 else 5
    shuffle = int(cd[5]) if len(cd) > 5 else 1
    code = int(cd[6]) if len(cd) > 6 else 0
    if code >= len(_BLOSC_CNAMES) or shuffle not in (0, 1, 2) or not 0 <= clevel <= 9:
        return None
    return {
        "id": "blosc",
        "cname": _BLOSC_CNAMES[code],
        "clevel": clevel,
        "shuffle": shuffle,
        "blocksize": 0,
    }


FILTERS: dict[int, HDF5Filter] = {
    1: HDF5Filter("deflate", _deflate),
    2: HDF5Filter("shuffle", _shuffle),
    3: HDF5Filter("fletcher32", _fletcher32),
    4: HDF5Filter("szip"),
    5: HDF5Filter("nbit"),
    6: HDF5Filter("scaleoffset"),
    307: HDF5Filter("bzip2"),
    32000: HDF5Filter("lzf"),
    32001: HDF5Filter("blosc", _blosc),
    32004: HDF5Filter("lz4"),
    32008: HDF5Filter("bitshuffle"),
    32015: HDF5Filter("zstd", _zstd),
}


def filter_label(code: int) -> str:
    """``"<name> (HDF5 filter id <code>)"``, for messages."""
    known = FILTERS.get(code)
    return f"{known.name if known else 'unknown'} (HDF5 filter id {code})"


def codec(code: int, cd: tuple[int, ...], itemsize: int, where: str) -> dict[str, Any]:
    """One HDF5 filter as a numcodecs config, or :class:`UnsupportedHDF5Error`."""
    known = FILTERS.get(code)
    config = known.to_codec(cd, itemsize) if known and known.to_codec else None
    if config is None:
        raise UnsupportedHDF5Error(
            f"{where}: unsupported filter {filter_label(code)}; its chunks cannot be decoded "
            "by numcodecs"
        )
    return config
