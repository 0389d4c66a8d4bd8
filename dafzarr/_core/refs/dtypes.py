"""HDF5 data types and fill values as numpy gives them, or why a type cannot be referenced.

A reference serves a chunk's stored bytes as they are, so a variable is only referenced when
numpy's encoding of its values is exactly the bytes HDF5 stores.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from ... import _h5chunks
from ...errors import UnsupportedHDF5Error

__all__ = ["complex_layout_problem", "element_shape", "fillvalue", "numpy_dtype"]


def element_shape(ds: Any) -> tuple[int, ...]:
    """The shape of each element of an HDF5 array type (``('<i8', (3, 5))``, as PyTables,
    HDF5's own examples and R's rhdf5 write), else ``()``.

    Such an element is a C-ordered block of its base type, so a chunk of the dataset holds
    exactly the bytes of the same chunk with the element's dimensions added last: the
    scanner references it as an array of the base type with those trailing dimensions.
    """
    try:
        sub = ds.dtype.subdtype
    except (KeyError, TypeError, ValueError):
        return ()
    return () if sub is None else tuple(int(n) for n in sub[1])


def numpy_dtype(ds: Any, where: str, problem: str | None) -> tuple[np.dtype[Any], bool]:
    """The numpy dtype (the one h5py reads into; for an HDF5 array type, of its elements'
    base type, see :func:`element_shape`) and whether the data are vlen strings.

    ``problem`` is :func:`_h5chunks.storage_problem`'s finding, named when h5py has no
    dtype for the type at all.
    """
    try:
        dt = ds.dtype
    except (KeyError, TypeError, ValueError) as exc:  # h5py: no numpy equivalent
        raise UnsupportedHDF5Error(
            f"{where}: data type without a numpy equivalent ({problem or exc})"
        ) from exc
    if dt.subdtype is not None:
        base = dt.subdtype[0]
        if base.subdtype is not None or base.metadata is not None or base.kind not in "iufcb":
            raise UnsupportedHDF5Error(
                f"{where}: HDF5 array type {dt} of {base} is not supported (only arrays of "
                "numbers and booleans map onto trailing dimensions)"
            )
        dt = base
    if dt.metadata is None and (dt.kind in "iu" or (dt.kind == "f" and dt.itemsize <= 8)):
        return np.dtype(dt.str), False
    info = h5py.check_string_dtype(dt)
    if info is not None and info.length is None:
        return np.dtype(object), True
    if h5py.check_vlen_dtype(dt) is not None:
        raise UnsupportedHDF5Error(f"{where}: variable-length sequences are not supported")
    if h5py.check_ref_dtype(dt) is not None:
        raise UnsupportedHDF5Error(f"{where}: object or region references are not supported")
    if dt.fields is not None:
        raise UnsupportedHDF5Error(f"{where}: compound data type {dt} is not supported")
    if h5py.check_opaque_dtype(dt):
        raise UnsupportedHDF5Error(
            f"{where}: opaque HDF5 type (h5py's encoding of numpy {dt}) is not supported"
        )
    if dt.kind in "OV" or dt.hasobject:
        raise UnsupportedHDF5Error(f"{where}: data type {dt} (opaque) is not supported")
    if dt.kind in "fc" and dt.itemsize > (8 if dt.kind == "f" else 16):
        raise UnsupportedHDF5Error(
            f"{where}: extended-precision type {dt} (numpy's platform long double) has no "
            f"zarr data type{f' ({problem})' if problem else ''}"
        )
    return np.dtype(dt.str), False


def complex_layout_problem(tid: Any, dt: np.dtype[Any]) -> str | None:
    """Why a compound h5py reads as complex is not laid out as numpy's complex, or None."""
    if not isinstance(tid, h5py.h5t.TypeCompoundID):
        return None  # HDF5's own complex class: numpy's layout
    real = h5py.get_config().complex_names[0].encode()
    n = tid.get_nmembers()
    members = {tid.get_member_name(i): tid.get_member_offset(i) for i in range(n)}
    if (
        tid.get_size() == dt.itemsize
        and sorted(members.values()) == [0, dt.itemsize // 2]
        and members.get(real) == 0
    ):
        return None
    layout = ", ".join(f"{k.decode(errors='replace')} at byte {o}" for k, o in members.items())
    return (
        f"compound read as {dt} with its parts laid out otherwise ({layout} in "
        f"{tid.get_size()} bytes)"
    )


def fillvalue(dsid: Any, dcpl: Any, where: str = "") -> Any:
    """The HDF5 fill value as h5py's ``Dataset.fillvalue`` gives it; for an array type, the
    element's values as an array of its base type (read in the stored type, which h5py
    cannot convert)."""
    sub = dsid.dtype.subdtype
    if sub is not None:
        raw = _h5chunks.stored_fill_bytes(dsid)
        if raw is None:
            raise UnsupportedHDF5Error(
                f"{where}: HDF5 cannot read the fill value of its array type {dsid.dtype}"
            )
        return np.frombuffer(raw, dtype=sub[0]).reshape(sub[1])
    arr = np.zeros((1,), dtype=dsid.dtype)
    dcpl.get_fill_value(arr)
    return arr[0]
