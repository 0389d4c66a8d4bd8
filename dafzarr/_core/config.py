"""Build and runtime configuration, for bug reports and packaging checks."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any

from .. import _posix

__all__ = ["BUILD_INFO", "show_config"]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


BUILD_INFO: dict[str, Any] = {
    "compiled_modules": [
        "dafzarr._posix",
        "dafzarr._h5chunks",
        "dafzarr._lz4seg",
        "dafzarr._zipdir",
        "dafzarr._transpose",
        "dafzarr._affooter",
        "dafzarr._indices",
        "dafzarr._groupby",
        "dafzarr._vlen",
    ],
    # CRC-32 of buffers: ISA-L; the own kernel copies entries into archives with their CRC
    "crc32": "isal",
    "crc32_copy_kernel": _posix.CRC32_KERNEL,
    "page_size": _posix.PAGE_SIZE,
    "free_threading": False,
}
BUILD_INFO["h5chunks_capsule"] = "h5py.defs.__pyx_capi__['H5Dchunk_iter']"


def show_config(file: Any = None) -> dict[str, Any]:
    """Print (and return) dafzarr's build configuration and the versions it runs with.

    Parameters
    ----------
    file : file-like, optional
        Where to print, one ``name : value`` line each; default ``sys.stdout``.

    Returns
    -------
    dict
        The same information: dafzarr's version, Python, the platform, the compiled
        modules and kernels, the copy threads, and the version of each dependency (None
        when it is not installed).

    Raises
    ------
    None
        Nothing of dafzarr's own; only what writing to ``file`` raises.

    Examples
    --------
    >>> import io
    >>> info = dafzarr.show_config(io.StringIO())
    >>> info["crc32"], info["numpy"] == np.__version__
    ('isal', True)
    """
    info: dict[str, Any] = {
        "dafzarr": _version("dafzarr"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **BUILD_INFO,
        "copy_threads": _posix.get_threads(),
        "numpy": _version("numpy"),
        "zarr": _version("zarr"),
        "numcodecs": _version("numcodecs"),
        "h5py": _version("h5py"),
        "pyarrow": _version("pyarrow"),
        "scipy": _version("scipy"),
        "obstore": _version("obstore"),
        "isal": _version("isal"),
        "zstandard": _version("zstandard"),
        "lz4": _version("lz4"),
        "tqdm": _version("tqdm"),
        "inflate64 (optional)": _version("inflate64"),
    }
    width = max(map(len, info))
    for key, value in info.items():
        print(f"{key:<{width}} : {value}", file=file or sys.stdout)
    return info
