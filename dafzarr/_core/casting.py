"""The one rule for putting a user's values into a stored element type (never a silent cast).

Every writer of the package (ArrayFile arrays and fill values, ZarrDaf in-place fills) passes
the user's data through :func:`cast_for_storage` before it meets the stored type:

* a cast numpy calls ``"safe"`` (``np.can_cast(src, dst, "safe")``) always passes;
* into an integer type, bool and integer data pass when **every value** fits the stored type;
  floating-point data never pass (not even ``1.0``, not NaN): convert explicitly;
* into a float type, bool, integer and float data pass, rounded to the stored precision
  (``float64`` 0.1 becomes the nearest ``float32``); a finite value that would become
  infinite is refused;
* into ``datetime64[ns]``, datetimes of another unit pass when every value converts exactly
  (NaT stays NaT), integers (nanoseconds) when they fit 64 bits;
* into bool, only bool data pass; anything else (complex, strings, objects) is refused.

A refusal is a :class:`~dafzarr.errors.UnsafeCastError` naming where the data was going and
both types. The check reads the data's extremes without copying them (a converted copy only
for datetimes of another unit, or for floats beyond the stored type's largest finite value).

A numpy masked array that masks values is refused before any cast (:func:`unmasked`, an
:class:`~dafzarr.errors.InvalidArgumentTypeError`): the values under its mask would be stored
as data, and its mask lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy import ma  # loaded with the package, not lazily during a write

from ..errors import InvalidArgumentTypeError, UnsafeCastError

__all__ = [
    "CheckedArray",
    "cast_for_storage",
    "check_fits",
    "check_value_fits",
    "checked_view",
    "unmasked",
]


def unmasked(value: Any, where: str) -> Any:
    """``value`` as it is, or the data of a numpy masked array that masks nothing.

    A masked array that masks values is refused (:class:`InvalidArgumentTypeError` naming
    ``where``): no stored layout keeps a mask, so the values under it would be stored as
    data. Every writer of user values passes them through here before ``np.asarray`` (which
    drops the mask).
    """
    if not isinstance(value, ma.MaskedArray):
        return value
    if ma.is_masked(value):
        count = int(np.count_nonzero(ma.getmaskarray(value)))
        raise InvalidArgumentTypeError(
            f"{where}: a masked array (numpy.ma) with {count} masked value(s) cannot be "
            "stored: the values under its mask would be stored as data; store "
            "value.filled(fill_value) instead, or the mask as data of its own"
        )
    return ma.getdata(value)


def _refuse(where: str, src: np.dtype[Any], dst: np.dtype[Any], why: str) -> UnsafeCastError:
    return UnsafeCastError(f"{where}: {src} data cannot be stored as {dst}: {why}")


def _first(mask: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> str:
    """``value V at index I`` for the first True position of ``mask``."""
    pos = np.unravel_index(int(np.argmax(mask)), mask.shape) if mask.ndim else ()
    index = pos[0] if len(pos) == 1 else pos
    return f"value {values[pos]} at index {index}" if mask.ndim else f"value {values[()]}"


def _check_integers(data: np.ndarray[Any, Any], dst: np.dtype[Any], where: str) -> None:
    """Every value within ``dst``'s range (its minimum and maximum, no copy)."""
    if data.dtype.kind == "b" or not data.size:
        return
    info = np.iinfo(dst)
    lo, hi = int(data.min()), int(data.max())
    if lo < info.min or hi > info.max:
        bad = (data < info.min) if lo < info.min else (data > info.max)
        raise _refuse(
            where, data.dtype, dst, f"{_first(bad, data)} is outside {info.min}..{info.max}"
        )


def _check_floats(data: np.ndarray[Any, Any], dst: np.dtype[Any], where: str) -> None:
    """No finite value of a wider float type overflows ``dst`` (NaN-ignoring extremes; a
    converted copy only when some value lies beyond ``dst``'s largest finite value)."""
    if not (data.dtype.kind == "f" and data.dtype.itemsize > dst.itemsize and data.size):
        return
    top = float(np.finfo(dst).max)
    lo, hi = np.fmin.reduce(data, axis=None), np.fmax.reduce(data, axis=None)
    if -top <= lo and hi <= top:
        return
    with np.errstate(over="ignore"):
        grown = np.isinf(data.astype(dst))
    grown &= ~np.isinf(data)
    if grown.any():
        raise _refuse(where, data.dtype, dst, f"{_first(grown, data)} overflows to infinity")


def _datetimes(data: np.ndarray[Any, Any], dst: np.dtype[Any], where: str) -> np.ndarray[Any, Any]:
    """``data`` converted to ``datetime64[ns]`` when every value converts exactly."""
    if data.dtype.kind not in "Miu":
        raise _refuse(where, data.dtype, dst, "only datetimes or integer nanoseconds fit")
    if data.dtype.kind in "iu":
        _check_integers(data, np.dtype(np.int64), where)
        return data.astype(np.int64).view(dst)
    with np.errstate(over="ignore"):
        out = data.astype(dst)
        back = out.astype(data.dtype)
    wrong = (back != data) & ~np.isnat(data)
    if wrong.any():
        raise _refuse(where, data.dtype, dst, f"{_first(wrong, data)} does not fit")
    return out


def check_fits(arr: np.ndarray[Any, Any], dst: np.dtype[Any], where: str) -> None:
    """Refuse (:class:`UnsafeCastError`) ``arr`` unless numpy's cast to ``dst`` keeps every
    value under the module's rule; never copies the data on success (not for datetimes)."""
    src = arr.dtype
    if src == dst or np.can_cast(src, dst, "safe"):
        return
    if dst.kind == "M":
        _datetimes(arr, dst, where)
    elif dst.kind in "iu":
        if src.kind not in "biu":
            what = (
                "floating-point values never become integers silently"
                if src.kind == "f"
                else "not integer data"
            )
            raise _refuse(where, src, dst, f"{what}; convert explicitly (e.g. astype)")
        _check_integers(arr, dst, where)
    elif dst.kind == "f" and src.kind in "biuf":
        _check_floats(arr, dst, where)
    else:
        raise _refuse(where, src, dst, "the kinds differ")


def cast_for_storage(data: Any, dst: Any, where: str) -> np.ndarray[Any, Any]:
    """``data`` as an array of the stored type ``dst``, or :class:`UnsafeCastError`.

    ``where`` names the destination (file, array or property) in the message. An array
    already of type ``dst`` is returned as it is (no copy).
    """
    arr = np.asarray(unmasked(data, where))
    dt = np.dtype(dst)
    if arr.dtype == dt:
        return arr
    if dt.kind == "M":
        return _datetimes(arr, dt, where)
    check_fits(arr, dt, where)
    with np.errstate(over="ignore"):
        return arr.astype(dt)


def check_value_fits(value: Any, dst: Any, where: str) -> None:
    """Refuse (:class:`UnsafeCastError`) a scalar, such as a fill value, ``dst`` cannot hold.

    ``bool``, ``int`` and ``float`` become ``bool``, the 64-bit integer type that holds them,
    and ``float64``, then follow :func:`cast_for_storage`.
    """
    try:
        arr = np.asarray(value)
    except OverflowError:
        arr = np.asarray(value, dtype=object)
    if arr.dtype.kind == "O" and isinstance(value, int):
        raise _refuse(where, arr.dtype, np.dtype(dst), f"value {value} does not fit 64 bits")
    cast_for_storage(arr, dst, where)


class CheckedArray(np.ndarray):
    """A view of stored memory whose writes follow :func:`cast_for_storage`.

    Item assignment (``v[:] = x``, ``v[i] = x``), ``v.fill``, ``v.put``, in-place operators
    (``v += x``), ufuncs with ``out=v`` and ``np.copyto(v, x)`` refuse values the element
    type cannot hold. An
    explicit ``casting=`` argument is honoured as given; ``v.view(np.ndarray)`` is a plain
    view without checks.
    """

    _where: str = "array"

    def __array_finalize__(self, obj: Any) -> None:
        self._where = getattr(obj, "_where", "array")

    def _source(self, value: Any) -> np.ndarray[Any, Any]:
        """The values written into this array as an array (a checked array as a plain
        view); a masked array that masks values is refused (:func:`unmasked`)."""
        value = unmasked(value, self._where)
        return _plain(value) if isinstance(value, np.ndarray) else np.asarray(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        arr = self._source(value)
        if arr.dtype != self.dtype:  # checked, then cast by numpy into place (no copy)
            check_fits(arr, self.dtype, self._where)
        with np.errstate(over="ignore"):
            self.view(np.ndarray)[key] = arr

    def fill(self, value: Any) -> None:
        """``ndarray.fill``, refusing a value the element type cannot hold."""
        arr = self._source(value)
        check_fits(arr, self.dtype, self._where)
        self.view(np.ndarray)[...] = arr

    def put(self, indices: Any, values: Any, mode: Any = "raise") -> None:
        """``ndarray.put``, refusing values the element type cannot hold."""
        arr = self._source(values)
        check_fits(arr, self.dtype, self._where)
        self.view(np.ndarray).put(indices, arr.astype(self.dtype), mode=mode)

    def __array_ufunc__(
        self, ufunc: np.ufunc, method: str, *inputs: Any, out: Any = None, **kwargs: Any
    ) -> Any:
        plain = [_plain(x) for x in inputs]
        if method == "at" and isinstance(inputs[0], CheckedArray) and len(inputs) > 2:
            plain[2] = cast_for_storage(inputs[2], inputs[0].dtype, inputs[0]._where)
        if out is None:
            return getattr(ufunc, method)(*plain, **kwargs)
        outs = tuple(out)
        plain_outs = tuple(_plain(o) for o in outs)
        result = outs[0] if len(outs) == 1 else outs
        if "casting" in kwargs or not any(isinstance(o, CheckedArray) for o in outs):
            getattr(ufunc, method)(*plain, out=plain_outs, **kwargs)
            return result
        try:  # numpy's safe casts pass untouched, computed in place
            getattr(ufunc, method)(*plain, out=plain_outs, casting="safe", **kwargs)
        except TypeError:  # computed apart, then stored under the rule
            values = getattr(ufunc, method)(*plain, **kwargs)
            if not isinstance(values, tuple):
                values = (values,)
            for o, v in zip(outs, values, strict=True):
                o[...] = v
        return result

    def __array_function__(
        self, func: Any, types: Any, args: Any, kwargs: Mapping[str, Any]
    ) -> Any:
        if func is np.copyto:
            params = dict(zip(("dst", "src", "casting", "where"), args, strict=False))
            params.update(kwargs)
            dst = params.get("dst")
            if "casting" not in params and isinstance(dst, CheckedArray):
                src = dst._source(params.get("src"))
                check_fits(src, dst.dtype, dst._where)
                with np.errstate(over="ignore"):
                    np.copyto(
                        dst.view(np.ndarray), src, casting="unsafe", where=params.get("where", True)
                    )
                return None
        return super().__array_function__(func, types, args, kwargs)


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, CheckedArray) else x


def checked_view(arr: np.ndarray[Any, Any], where: str) -> CheckedArray:
    """``arr`` (sharing its memory) as a :class:`CheckedArray` naming ``where``."""
    view = arr.view(CheckedArray)
    view._where = where
    return view
