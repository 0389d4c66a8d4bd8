"""AnnData names that are no valid Daf names, stored under a reversible escape.

AnnData allows any string as a key: scanpy's ``rank_genes_groups`` fields are cluster names
such as ``'CD4+/CD25 T Reg'``, obs columns may be called ``name`` or ``index``. A Daf name is
one path component of the Zarr layout (no ``/`` or NUL, not ``.``, ``..`` or a Zarr metadata
name) and a vector may not be called ``name`` or ``index``. :func:`daf_name` keeps every valid
name without ``%`` as it is and percent-encodes the others (``%``, ``/`` and NUL inside; the
first character of a name that is still a reserved one): one stored name per AnnData name, and
two AnnData names never share one. The manifest keeps the AnnData names, so reading back only
applies the same function (:class:`EscapedNames`); nothing is ever decoded from a stored name.
"""

from __future__ import annotations

from typing import Any

from ..daf.names import METADATA_NAMES, RESERVED_VECTORS

__all__ = ["EscapedNames", "daf_name"]

_RESERVED = frozenset({"", ".", "..", *METADATA_NAMES, *RESERVED_VECTORS})


def daf_name(name: str) -> str:
    """The Daf name an AnnData name is stored under (see the module doc)."""
    if name not in _RESERVED and "%" not in name and "/" not in name and "\0" not in name:
        return name
    text = name.replace("%", "%25").replace("/", "%2F").replace("\0", "%00")
    if text in _RESERVED:
        text = f"%{ord(text[0]):02X}{text[1:]}" if text else "%"
    return text


class EscapedNames:
    """A data set read by AnnData names: each name passes through :func:`daf_name`."""

    def __init__(self, daf: Any) -> None:
        self._daf = daf
        self.path = getattr(daf, "path", daf.name)

    def axis_length(self, axis: str) -> int:
        """The length of the axis stored for ``axis``."""
        return int(self._daf.axis_length(daf_name(axis)))

    def axis_np_entries(self, axis: str) -> Any:
        """The entries of the axis stored for ``axis``."""
        return self._daf.axis_np_entries(daf_name(axis))

    def get_scalar(self, name: str, **kw: Any) -> Any:
        """The scalar stored for ``name``."""
        return self._daf.get_scalar(daf_name(name), **kw)

    def get_np_vector(self, axis: str, name: str, **kw: Any) -> Any:
        """The vector stored for ``name`` on the axis stored for ``axis``."""
        return self._daf.get_np_vector(daf_name(axis), daf_name(name), **kw)

    def get_np_matrix(self, rows: str, cols: str, name: str, **kw: Any) -> Any:
        """The matrix stored for ``name`` on the axes stored for ``rows`` and ``cols``."""
        return self._daf.get_np_matrix(daf_name(rows), daf_name(cols), daf_name(name), **kw)
