"""What composing produces and writing consumes: virtual arrays over a list of file URLs.

:class:`VirtualArray` and :class:`VirtualDataset` hold zarr v2 metadata and dense chunk
references (file index, offset, size, inlined bytes); the composer and :func:`as_virtual`
build them from scans (:mod:`.model`), the writers consume them. Nothing here opens a file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .model import ScanResult

__all__ = ["VirtualArray", "VirtualDataset", "used_groups"]


@dataclass(eq=False)
class VirtualArray:
    """One array of a virtual dataset: zarr v2 metadata plus dense references.

    ``path_index`` indexes ``VirtualDataset.paths`` (-1: no file reference); a chunk is
    inlined when its flat index is a key of ``raw``, missing when neither applies.
    Composing (:func:`~dafzarr.refs.compose`) builds them; the fields are not checked on
    construction (the writers check them).

    Parameters
    ----------
    name
        The array's full path in the dataset.
    zarray
        Its zarr v2 ``.zarray`` document.
    zattrs
        Its zarr v2 ``.zattrs`` document (``_ARRAY_DIMENSIONS`` first).
    path_index
        For each chunk in C order of the chunk grid, the index of its file in
        ``VirtualDataset.paths`` (-1: none).
    offset
        Byte offset of each chunk in its file.
    size
        Byte size of each chunk.
    raw
        Inlined chunk bytes, by flat chunk index.

    Raises
    ------
    InvalidArgumentError
        Not on construction: a writer (:func:`~dafzarr.refs.write_parquet`) refuses columns
        whose lengths differ from the chunk grid's.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> a = dafzarr.refs.as_virtual(dafzarr.refs.scan("day0.nc")).arrays["sst"]
    >>> a.name, a.nchunks, a.path_index.tolist(), a.zarray["chunks"]
    ('sst', 4, [0, 0, 0, 0], [2, 4])
    """

    name: str
    zarray: dict[str, Any]
    zattrs: dict[str, Any]
    path_index: npt.NDArray[np.int32]
    offset: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]
    raw: dict[int, bytes] = field(default_factory=dict)

    @property
    def nchunks(self) -> int:
        """Number of chunk slots (referenced, inlined or missing)."""
        return int(self.offset.shape[0])


@dataclass(eq=False)
class VirtualDataset:
    """A hierarchy of virtual arrays over a list of file URLs.

    What :func:`~dafzarr.refs.compose`, :func:`~dafzarr.refs.virtualize` and
    :func:`~dafzarr.refs.as_virtual` return, and what the writers
    (:func:`~dafzarr.refs.write_parquet`, :func:`~dafzarr.refs.to_kerchunk_json`,
    :func:`~dafzarr.refs.to_icechunk`) take.

    Parameters
    ----------
    paths
        The URLs the references point into (``VirtualArray.path_index`` indexes them).
    arrays
        The arrays, by full path.
    groups
        The attributes of each group, by path (``""``: the root).
    placement
        The placement table the dataset was composed with (see :func:`~dafzarr.refs.place`;
        ``None``: one file, or not composed by :func:`~dafzarr.refs.virtualize`).

    Raises
    ------
    InvalidArgumentError
        Not on construction: a writer refuses an array whose references do not match its
        chunk grid.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> vds = dafzarr.refs.as_virtual(dafzarr.refs.scan("day0.nc"))
    >>> list(vds.arrays), list(vds.groups), vds.paths[0].endswith("/day0.nc")
    (['sst'], [''], True)
    """

    paths: list[str]
    arrays: dict[str, VirtualArray]
    groups: dict[str, dict[str, Any]]
    placement: pa.Table | None = None

    def metadata(self) -> dict[str, Any]:
        """The consolidated zarr v2 metadata (decoded JSON objects, as ``.zmetadata`` holds).

        Nodes come in hierarchy order (the root, then depth by depth, each group's children
        together, by name): zarr-python nests consolidated metadata by grouping consecutive
        keys of one parent, and loses the children of a parent listed twice.

        Returns
        -------
        dict
            ``.zgroup``/``.zarray`` and ``.zattrs`` documents by key (``"sst/.zarray"``).

        Raises
        ------
        KeyError
            Never: every document is the dataset's own.

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> vds = dafzarr.refs.as_virtual(dafzarr.refs.scan("day0.nc"))
        >>> list(vds.metadata())
        ['.zgroup', '.zattrs', 'sst/.zarray', 'sst/.zattrs']
        """
        nodes: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            (g, {"zarr_format": 2}, attrs) for g, attrs in self.groups.items()
        ]
        nodes += [(name, a.zarray, a.zattrs) for name, a in self.arrays.items()]
        meta: dict[str, Any] = {}
        for path, zmeta, zattrs in sorted(nodes, key=lambda n: _hierarchy_key(n[0])):
            prefix = f"{path}/" if path else ""
            meta[f"{prefix}{'.zarray' if 'shape' in zmeta else '.zgroup'}"] = zmeta
            meta[f"{prefix}.zattrs"] = zattrs
        return meta


def _hierarchy_key(path: str) -> tuple[int, list[str]]:
    """Sort key of a node path: depth first, then the parent's path, then the name."""
    parts = path.split("/") if path else []
    return len(parts), parts


def used_groups(dataset: ScanResult, arrays: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The root group and the groups that hold (or lead to) one of ``arrays``."""
    keep = {""}
    for name in arrays:
        parts = name.split("/")[:-1]
        keep.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return {g: a for g, a in dataset.groups.items() if g in keep}
