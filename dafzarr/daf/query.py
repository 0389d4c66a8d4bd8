"""Daf queries: the query language of DataAxesFormats.jl (0.2/0.3 syntax), dafr and dafpy.

The implementation lives in ``dafzarr._core.daf.query``.
"""

from __future__ import annotations

from .._core.daf import query as _query
from .._core.daf.query import *  # exactly the names of its ``__all__``

__all__ = list(_query.__all__)
