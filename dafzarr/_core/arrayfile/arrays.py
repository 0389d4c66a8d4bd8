"""The arrays of an :class:`~dafzarr.arrayfile.ArrayFile` and their attributes: listing,
describing, defining and deleting arrays, and setting and reading attributes (each function
is a method of ``ArrayFile``, bound there, written against the state it holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .records import ArrayInfo, Records, new_meta
from .types import attribute_to_python, python_to_attribute

__all__ = [
    "Held",
    "array_info",
    "attributes",
    "define_array",
    "delete",
    "get_attribute",
    "list_arrays",
    "set_attribute",
]


class Held(Protocol):
    """What the functions use of an ArrayFile: its lock, its records, its key."""

    @property
    def _lock(self) -> AbstractContextManager[Any]: ...

    @property
    def _records(self) -> Records: ...

    @property
    def _key(self) -> str: ...

    def _check_open(self) -> None: ...


def list_arrays(self: Held) -> list[str]:
    """Names of the visible arrays, oldest definition first.

    Returns
    -------
    list of str
        The names.

    Raises
    ------
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("b", "int8", ["x"], [2])
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     f.list_arrays()
    ['b', 'a']
    """
    with self._lock:
        self._check_open()
        return self._records.names()


def array_info(self: Held, name: str) -> ArrayInfo:
    """Shape, dtype, chunk shape, dimension names and fill value of ``name``.

    Parameters
    ----------
    name : str
        The array.

    Returns
    -------
    ArrayInfo
        Its description.

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int16", ["x"], [5], fill_value=-1)
    ...     f.array_info("a").fill_value
    -1
    """
    with self._lock:
        self._check_open()
        m = self._records.meta(name)
        info = m.require_info()
        dtype: Any = (str if info.tag == "String" else bytes) if info.vlen else info.np_dtype
        fill = None if m.fill is None else m.fill[1]
        return ArrayInfo(name, dtype, m.shape, m.chunk_shape, tuple(m.dim_names), fill)


def define_array(
    self: Held,
    name: str,
    dtype: Any,
    dim_names: Sequence[str],
    shape: Sequence[int],
    *,
    chunk_shape: Sequence[int] | None = None,
    fill_value: Any = None,
) -> None:
    """Declare a new array (nothing is written until data arrives).

    Shapes are fixed. Every axis must have a length of at least 1 and at most 2**32 - 1
    (the format stores u32 extents); one chunk of a fixed-width type must stay below
    4 GiB.

    Parameters
    ----------
    name : str
        The new array's name.
    dtype : numpy dtype-like, str or bytes
        Its element type (``str``, ``bytes``: variable-length strings or bytes).
    dim_names : sequence of str
        The names of its axes.
    shape : sequence of int
        Its extent along each axis.
    chunk_shape : sequence of int, optional
        The extent of one chunk; default the whole array as one chunk.
    fill_value : scalar, optional
        What unwritten elements read as; default the type's zero.

    Raises
    ------
    ArrayExistsError
        A visible array is named ``name``.
    InvalidArgumentError
        An empty name, mismatched axes, or an axis or chunk of length 0.
    FormatLimitError
        An extent or chunk the format cannot store.
    UnsupportedElementTypeError
        A ``dtype`` the format has no type for.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("m", "uint8", ["row", "col"], [4, 4], chunk_shape=[2, 4])
    ...     f.array_info("m").chunk_shape
    (2, 4)
    """
    with self._lock:
        self._check_open()
        meta = new_meta(self._key, name, dtype, dim_names, shape, chunk_shape, fill_value)
        self._records.define(meta)


def delete(self: Held, name: str) -> None:
    """Hide ``name`` at once; its bytes go away at the next :meth:`compact`.

    Parameters
    ----------
    name : str
        The array.

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     f.delete("a")
    ...     "a" in f
    False
    """
    with self._lock:
        self._check_open()
        self._records.delete(name)


def set_attribute(self: Held, name: str, key: str, value: Any) -> None:
    """Set attribute ``key`` of array ``name``.

    Parameters
    ----------
    name : str
        The array.
    key : str
        The attribute.
    value : bool, int, float, str or numpy scalar
        Its value.

    Raises
    ------
    InvalidArgumentTypeError
        ``value`` is of another type.
    ArrayNotFoundError
        No visible array is named ``name``.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     f.set_attribute("a", "units", "m")
    ...     f.get_attribute("a", "units")
    'm'
    """
    with self._lock:
        self._check_open()
        v = python_to_attribute(value)
        self._records.for_write(name).meta.attrs[str(key)] = v


def get_attribute(self: Held, name: str, key: str, default: Any = None) -> Any:
    """Attribute ``key`` of array ``name``, or ``default`` if it has none.

    Parameters
    ----------
    name : str
        The array.
    key : str
        The attribute.
    default : object, optional
        What to return when the array has no attribute ``key``.

    Returns
    -------
    object
        The attribute's value (a Python scalar), or ``default``.

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     f.get_attribute("a", "units", "none")
    'none'
    """
    with self._lock:
        self._check_open()
        v = self._records.meta(name).attrs.get(key)
        return default if v is None else attribute_to_python(v)


def attributes(self: Held, name: str) -> dict[str, Any]:
    """All attributes of array ``name``.

    Parameters
    ----------
    name : str
        The array.

    Returns
    -------
    dict
        Attribute names to values (Python scalars).

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     f.set_attribute("a", "scale", 2.5)
    ...     f.attributes("a")
    {'scale': 2.5}
    """
    with self._lock:
        self._check_open()
        return {k: attribute_to_python(v) for k, v in self._records.meta(name).attrs.items()}
