"""xarray's ``engine="daf"``: the entry point ``pyproject.toml`` registers names this path.

Installed metadata keeps naming it, so it stays here while the backend itself lives in
``dafzarr._core.daf.xarray_backend``.
"""

from __future__ import annotations

from .._core.daf.xarray_backend import DafBackendEntrypoint

__all__ = ["DafBackendEntrypoint"]
