"""The description of a ZarrDaf: every property with its type and layout, as data or text."""

from __future__ import annotations

from typing import Any

from .axes import Axes
from .matrices import Matrices
from .names import join_path
from .scalars import Scalars
from .storage import DafStorage
from .values import plain
from .vectors import Vectors


class Description:
    """``summary`` (plain data) and ``description`` (text)."""

    def __init__(
        self,
        storage: DafStorage,
        scalars: Scalars,
        axes: Axes,
        vectors: Vectors,
        matrices: Matrices,
    ) -> None:
        self._storage = storage
        self._scalars = scalars
        self._axes = axes
        self._vectors = vectors
        self._matrices = matrices

    def summary(self) -> dict[str, Any]:
        """``ZarrDaf.summary``: the name, type, path, mode, format and every property, as data."""
        axes = sorted(self._axes.axes_set())
        return {
            "name": self._storage.name,
            "type": "ZarrDaf",
            "path": self._storage.path,
            "mode": self._storage.mode,
            "format": self._storage.layout.zarr_format,
            "scalars": {
                s: plain(self._scalars.get_scalar(s)) for s in sorted(self._scalars.scalars_set())
            },
            "axes": {a: self._axes.axis_length(a) for a in axes},
            "vectors": {
                f"{a}/{v}": self.property_info(join_path("vectors", a, v))
                for a in axes
                for v in sorted(self._vectors.vectors_set(a))
            },
            "matrices": {
                f"{r},{c}/{m}": self.property_info(join_path("matrices", r, c, m))
                for r in axes
                for c in axes
                for m in sorted(self._matrices.matrices_set(r, c, relayout=False))
            },
        }

    def description(self) -> str:
        """``ZarrDaf.description``: :meth:`summary` as lines of text."""
        info = self.summary()
        lines = [
            f"name: {info['name']}",
            "type: ZarrDaf",
            f"path: {info['path']}",
            f"mode: {info['mode']}",
            f"format: zarr v{info['format']}",
        ]
        for title, items, show in (
            ("scalars", info["scalars"], repr),
            ("axes", info["axes"], lambda n: f"{n} entries"),
            ("vectors", info["vectors"], describe_property),
            ("matrices", info["matrices"], describe_property),
        ):
            if items:
                lines.append(f"{title}:")
                lines += [f"  {k}: {show(v)}" for k, v in items.items()]
        return "\n".join(lines) + "\n"

    def property_info(self, path: str) -> dict[str, Any]:
        """dtype, layout and (sparse) number of nonzeros of the property at ``path``."""
        if self._storage.node_kind(path) == "array":
            return {"dtype": str(self._storage.array_info(path).dtype), "layout": "dense"}
        part = "nzval" if self._storage.node_kind(join_path(path, "nzval")) else "nzind"
        if self._storage.node_kind(join_path(path, "rowval")):
            part = "nzval" if self._storage.node_kind(join_path(path, "nzval")) else "rowval"
        info = self._storage.array_info(join_path(path, part))
        dt = "bool" if part in ("nzind", "rowval") else str(info.dtype)
        return {"dtype": dt, "layout": "sparse", "nonzeros": int(info.shape[0])}


def describe_property(prop: dict[str, Any]) -> str:
    """``"float32 dense"`` or ``"bool sparse (12 nonzeros)"``, from :meth:`ZarrDaf.summary`.

    Parameters
    ----------
    prop
        One vector's or matrix's entry of a summary (``dtype``, ``layout`` and, for a
        sparse property, ``nonzeros``).

    Returns
    -------
    str
        The element type and layout, and the number of non-zero values of a sparse one.

    Raises
    ------
    KeyError
        ``prop`` lacks one of those keys (it is not a summary's entry).

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> dafzarr.daf.describe_property(base.summary()["vectors"]["cell/age"])
    'float64 dense'
    >>> dafzarr.daf.describe_property({"dtype": "bool", "layout": "sparse", "nonzeros": 12})
    'bool sparse (12 nonzeros)'
    """
    if prop["layout"] == "dense":
        return f"{prop['dtype']} dense"
    return f"{prop['dtype']} sparse ({prop['nonzeros']} nonzeros)"
