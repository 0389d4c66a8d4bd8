"""Element types of contracts: the stored types of Daf a contract entry admits
(:class:`ElementType`), and the element-type names of numpy dtypes and scalar values.

An element type is given as a numpy dtype or anything ``numpy.dtype`` accepts (``np.int32``,
``"float64"``; Python's ``int`` and ``float`` are ``int64`` and ``float64``), ``str``,
``bool``, an abstract kind - ``"integer"``, ``"signed"``, ``"unsigned"``, ``"float"``,
``"real"``, ``"number"``, ``"any"`` - or numpy's abstract classes, or a tuple of these (any of
them, like Julia's ``Union``); see :mod:`.contract`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import InvalidArgumentError

__all__ = ["ElementType", "dtype_name", "value_type_name"]

_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float32", "float64")
_ORDER = ("bool", *_SIGNED, *_UNSIGNED, *_FLOATS, "str")
_KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "str": ("str",),
    "signed": _SIGNED,
    "unsigned": _UNSIGNED,
    "integer": _SIGNED + _UNSIGNED,
    "float": _FLOATS,
    "real": _SIGNED + _UNSIGNED + _FLOATS,
    "number": _SIGNED + _UNSIGNED + _FLOATS,
    "any": _ORDER,
}
_ABSTRACT: dict[Any, str] = {
    np.signedinteger: "signed",
    np.unsignedinteger: "unsigned",
    np.integer: "integer",
    np.floating: "float",
    np.number: "number",
    np.generic: "any",
    np.bool_: "bool",
    bool: "bool",
    str: "str",
    np.str_: "str",
}


def dtype_name(dtype: Any) -> str:
    """The element-type name of a numpy dtype (``"str"`` for strings and objects)."""
    dt = np.dtype(dtype)
    return "str" if dt.kind in "OUS" else dt.name


def value_type_name(value: Any) -> str:
    """The element-type name of a scalar value (Python ``int`` is ``int64``)."""
    if isinstance(value, str):
        return "str"
    if isinstance(value, np.generic):
        return dtype_name(value.dtype)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return type(value).__name__


@dataclass(frozen=True)
class ElementType:
    """An element type of a contract: a ``name`` to show and the stored types it admits.

    Contracts make them from what they are given with :meth:`of`; making one directly is
    rarely needed.

    Parameters
    ----------
    name : str
        The name the messages and the documentation show (``"integer"``, ``"float32"``).
    dtypes : frozenset of str
        The stored element types it admits (``"int8"`` to ``"float64"``, ``"bool"``,
        ``"str"``).

    Raises
    ------
    InvalidArgumentError
        Never when made directly; :meth:`of` raises it for what is no element type.

    Examples
    --------
    >>> from dafzarr.daf.ops import ElementType
    >>> small = ElementType("small", frozenset({"int8", "uint8"}))
    >>> str(small), small.admits("int8"), small.admits("int64")
    ('small', True, False)
    """

    name: str
    dtypes: frozenset[str]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def of(cls, spec: Any) -> ElementType:
        """The element type a contract names (see the module's documentation).

        Parameters
        ----------
        spec : ElementType, numpy dtype, type, str or tuple
            A numpy dtype or anything ``numpy.dtype`` accepts (``np.int32``, ``"float64"``,
            ``int``), ``str``, ``bool``, an abstract kind (``"integer"``, ``"signed"``,
            ``"unsigned"``, ``"float"``, ``"real"``, ``"number"``, ``"any"``), numpy's
            abstract classes (``np.integer``, ``np.floating``, ``np.number``), or a tuple of
            these (any of them).

        Returns
        -------
        ElementType
            The element type, named as the contract's documentation shows it.

        Raises
        ------
        InvalidArgumentError
            ``spec`` is no element type of Daf (``invalid element type: ...``: e.g.
            ``complex``, ``object``, or an empty tuple).

        Examples
        --------
        >>> from dafzarr.daf.ops import ElementType
        >>> str(ElementType.of(int)), str(ElementType.of(("float32", np.int8)))
        ('int64', 'float32 | int8')
        >>> sorted(ElementType.of(np.floating).dtypes)
        ['float32', 'float64']
        """
        if isinstance(spec, ElementType):
            return spec
        if isinstance(spec, tuple | list | set | frozenset):
            parts = [cls.of(s) for s in spec]
            if not parts:
                raise InvalidArgumentError("invalid element type: an empty union")
            dtypes = frozenset().union(*(p.dtypes for p in parts))
            return cls(" | ".join(dict.fromkeys(p.name for p in parts)), dtypes)
        kind = _ABSTRACT.get(spec) if isinstance(spec, type) else None
        if kind is None and isinstance(spec, str) and spec in _KINDS:
            kind = spec
        if kind is not None:
            return cls(kind, frozenset(_KINDS[kind]))
        try:
            dt = np.dtype(spec)
            name = "" if dt.kind == "O" else dtype_name(dt)  # object: not one Daf type
        except TypeError:
            name = ""
        if name not in _ORDER:
            raise InvalidArgumentError(
                f"invalid element type: {spec!r} (a numpy dtype of a "
                f"Daf type, str, bool, or one of {sorted(_KINDS)})"
            )
        return cls(name, frozenset((name,)))

    def admits(self, name: str) -> bool:
        """Whether a stored element type is one of this type's.

        Parameters
        ----------
        name : str
            A stored element type: ``"bool"``, ``"int8"`` to ``"uint64"``, ``"float32"``,
            ``"float64"`` or ``"str"``.

        Returns
        -------
        bool
            Whether this type admits it.

        Raises
        ------
        DafzarrError
            Never: a name that is no element type is simply not admitted.

        Examples
        --------
        >>> from dafzarr.daf.ops import ElementType
        >>> ElementType.of("integer").admits("uint16"), ElementType.of("real").admits("bool")
        (True, False)
        """
        return name in self.dtypes
