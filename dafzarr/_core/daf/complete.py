"""Complete chains: a data set that names the data set it extends, opened with its bases.

Daf users keep a tree of data sets: a cells data set, and beside it several data sets that
extend it (metacells computed with other parameters, say). Each extension holds the scalar
``base_daf_repository``, the path of its base relative to the extension's own folder (so the
tree can move as a whole), and optionally ``base_daf_view``, the JSON of the :func:`viewer`
arguments applied to the base. :func:`complete_chain` writes them and returns the chain;
:func:`complete_daf` opens an extension with all its bases, as DataAxesFormats.jl's
``complete_daf`` does, and reads the same scalars that DataAxesFormats.jl writes.

The view's JSON is DataAxesFormats.jl's: ``{"axes": [{"cell": "@ cell [ is_good ]"}],
"data": [{"(\\"cell\\", \\"age\\")": "="}]}``, a list of one-key objects in order, a vector or
matrix key written as the text of a tuple of strings, a hidden axis or property as ``null``.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Sequence
from typing import Any

from ...errors import CorruptDafError, InvalidArgumentError
from .chain import chain_reader, chain_writer
from .view import viewer
from .zarrdaf import ZarrDaf, open_daf

__all__ = ["complete_chain", "complete_daf"]

REPOSITORY = "base_daf_repository"
VIEW = "base_daf_view"


def complete_chain(
    *, base_daf: Any, new_daf: ZarrDaf, name: str | None = None,
    axes: Sequence[tuple[str, Any]] | None = None, data: Sequence[tuple[Any, Any]] | None = None,
    absolute: bool = False,
) -> Any:  # fmt: skip
    """Chain the new, empty data set ``new_daf`` on top of ``base_daf`` (or of a view of it,
    when ``axes`` or ``data`` are given, as for :func:`viewer`), and record the chain in
    ``new_daf`` so that :func:`complete_daf` opens it again later.

    ``new_daf`` gets the scalar ``base_daf_repository``: the path of ``base_daf`` relative to
    the folder holding ``new_daf`` (``absolute=True``: its absolute path; a URL stays as it
    is), and with a view, ``base_daf_view``. Both must be stored data sets (a directory, a
    ZIP, a data set in a multi-data-set ZIP or, for the base, a URL). Returns the writable
    chain.

    Parameters
    ----------
    base_daf
        The data set (or chain) the new one adds to, stored at a path or URL.
    new_daf
        The new, empty, writable data set that receives the writes.
    name
        The chain's name (default: made from the data sets' names).
    axes
        The view's axis rules, as for :func:`viewer` (default: no view).
    data
        The view's property rules, as for :func:`viewer` (default: no view).
    absolute
        Record the absolute path of ``base_daf`` rather than its path relative to
        ``new_daf``'s folder.

    Returns
    -------
    WriteChain
        The chain of ``base_daf`` (or its view) and ``new_daf``; writes go to ``new_daf``.

    Raises
    ------
    InvalidArgumentError
        ``base_daf`` or ``new_daf`` is not stored at a path (a view, a chain, a data set in
        memory).
    DafReadOnlyError
        ``new_daf`` was opened read-only.
    DafQueryError
        The view's rules are invalid (as for :func:`viewer`).

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> new = dafzarr.open_daf("new.daf.zarr", "w")
    >>> chain = dafzarr.daf.complete_chain(base_daf=base, new_daf=new)
    >>> _ = chain.set_vector("cell", "score", [0.5, 0.25, 0.75])
    >>> new.get_scalar("base_daf_repository"), chain.get_np_vector("cell", "age").tolist()
    ('base.daf.zarr', [1.0, 2.0, 3.0])
    """
    new_path = _stored_path(new_daf, "new_daf")
    base_path = _stored_path(base_daf, "base_daf")
    if not absolute and "://" not in base_path:
        base_path = os.path.relpath(base_path, os.path.dirname(new_path) or ".")
        base_path = base_path.replace(os.sep, "/")
    new_daf.set_scalar(REPOSITORY, base_path)
    if axes is not None or data is not None:
        new_daf.set_scalar(VIEW, view_json(axes, data))
        base_daf = viewer(base_daf, axes=axes, data=data)
    return chain_writer([base_daf, new_daf], name=name)


def complete_daf(path: str | os.PathLike[str], mode: str = "r", *, name: str | None = None
                 ) -> Any:  # fmt: skip
    """Open the data set at ``path`` with every base it names (``base_daf_repository``,
    followed from data set to data set, each through its ``base_daf_view`` if it has one),
    as one chain named ``<name>.complete`` (``name`` defaults to ``path``).

    ``mode`` ``"r"`` gives a read-only chain; ``"r+"`` a chain whose writes go to the data
    set at ``path`` (its bases are always opened read-only). ``close()`` the chain (or use it
    in a ``with`` block) to close the data sets it opened.

    Parameters
    ----------
    path
        The data set at the top of the chain.
    mode
        ``"r"`` (read-only) or ``"r+"`` (writes go to the data set at ``path``).
    name
        The chain's name is ``<name>.complete`` (default: ``path``).

    Returns
    -------
    ReadChain or WriteChain
        The data set at ``path`` over all its bases (a ``WriteChain`` with ``"r+"``).

    Raises
    ------
    InvalidArgumentError
        A ``mode`` other than ``"r"`` or ``"r+"``.
    DafNotFoundError
        No data set at ``path``, or at a base it names.
    DafFormatError
        The data sets name each other as their base (the message lists the cycle);
        ``base_daf_repository`` is not a path, or ``base_daf_view`` not the JSON of a view.

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> new = dafzarr.open_daf("new.daf.zarr", "w")
    >>> _ = dafzarr.daf.complete_chain(base_daf=base, new_daf=new)
    >>> with dafzarr.daf.complete_daf("new.daf.zarr") as chain:
    ...     chain.name, chain.get_np_vector("cell", "age").tolist()
    ('new.daf.zarr.complete', [1.0, 2.0, 3.0])
    """
    if mode not in ("r", "r+"):
        raise InvalidArgumentError(f"complete_daf mode must be 'r' or 'r+', not {mode!r}")
    leaf = os.fspath(path)
    name = leaf if name is None else name
    opened: list[ZarrDaf] = []
    try:
        dafs = _collect(name, leaf, mode, index=0, seen=(), opened=opened)
        dafs.reverse()
        make = chain_writer if mode == "r+" else chain_reader
        chain = make(dafs, name=f"{name}.complete")
    except BaseException:
        for daf in opened:
            daf.close()
        raise
    chain._owned = opened  # closed with the chain
    return chain


def _collect(name: str, path: str, mode: str, *, index: int, seen: tuple[str, ...],
             opened: list[ZarrDaf]) -> list[Any]:  # fmt: skip
    """The data sets from ``path`` down to its first base (leaf first); a base with a view
    ends the list with the view of the chain of that base's own bases."""
    dafs: list[Any] = []
    while True:
        if path in seen:
            raise CorruptDafError(
                f"the data sets name each other as their base: {' -> '.join((*seen, path))}"
            )
        seen = (*seen, path)
        daf = open_daf(path, mode)  # type: ignore[arg-type]
        opened.append(daf)
        dafs.append(daf)
        base = daf.get_scalar(REPOSITORY, default=None)
        if base is None:
            return dafs
        if not isinstance(base, str):
            raise CorruptDafError(
                f"the scalar {REPOSITORY} is not a path: {base}\nin the daf data: {daf.name}"
            )
        path = _joined(path, base)
        view = daf.get_scalar(VIEW, default=None)
        if view is not None:
            axes, data = parse_view_json(view, daf.name)
            bases = _collect(name, path, "r", index=index + 1, seen=seen, opened=opened)
            bases.reverse()
            chain = chain_reader(bases, name=f"{name}.chain_{index}")
            dafs.append(viewer(chain, name=f"{name}.view_{index}", axes=axes, data=data))
            return dafs
        mode = "r"


def _joined(child: str, base: str) -> str:
    """``base`` as named from the data set at ``child``: relative to ``child``'s folder."""
    if "://" in base or os.path.isabs(base):
        return base
    if "://" in child:
        return posixpath.normpath(posixpath.join(posixpath.dirname(child), base))
    return os.path.normpath(os.path.join(os.path.dirname(child), base))


def _stored_path(daf: Any, what: str) -> str:
    path = getattr(daf, "path", None)
    if not isinstance(path, str) or not (os.path.isabs(path) or "://" in path):
        raise InvalidArgumentError(
            f"{what} must be a data set stored in a directory, a ZIP or at a URL (it is "
            f"{getattr(daf, 'name', daf)!r}, which has no path): a complete chain records paths"
        )
    return path


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    return "(" + ", ".join(json.dumps(part) for part in key) + ")"


def view_json(axes: Sequence[tuple[str, Any]] | None,
              data: Sequence[tuple[Any, Any]] | None) -> str:  # fmt: skip
    """The ``base_daf_view`` text of these :func:`viewer` arguments."""
    doc: dict[str, Any] = {}
    if axes is not None:
        doc["axes"] = [{_key_text(k): q} for k, q in axes]
    if data is not None:
        doc["data"] = [{_key_text(k): q} for k, q in data]
    return json.dumps(doc)


def parse_view_json(text: Any, where: str) -> tuple[list[Any] | None, list[Any] | None]:
    """The :func:`viewer` ``axes`` and ``data`` of a ``base_daf_view`` text."""
    try:
        doc = json.loads(text)
        out: dict[str, list[Any]] = {}
        for part in ("axes", "data"):
            pairs = doc.get(part)
            if pairs is None:
                continue
            out[part] = []
            for item in pairs:
                for key, query in item.items():
                    if "(" in key:
                        key = tuple(json.loads(key.replace("(", "[").replace(")", "]")))
                    out[part].append((key, query))
    except (TypeError, ValueError, AttributeError) as exc:
        raise CorruptDafError(
            f"the scalar {VIEW} is not the JSON of a view: {text!r} "
            f"({exc})\nin the daf data: {where}"
        ) from None
    return out.get("axes"), out.get("data")
