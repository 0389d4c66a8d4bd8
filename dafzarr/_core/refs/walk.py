"""The walk of one open NetCDF4/HDF5 file into per-variable metadata and chunk references.

:func:`scan_file` names every array's dimensions (netCDF's dimension scales, or phony
dimensions) and walks each chunk index once with HDF5's ``H5Dchunk_iter`` (from C, in
``dafzarr._h5chunks``) into numpy columns; objects are opened through h5py's low-level
identifiers. Opening the file, and where the walk runs, is :mod:`._scan`'s part.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from ... import _h5chunks
from ...errors import H5Error, UnsupportedHDF5Error, UnsupportedVariableWarning
from .attrs import cf_fill_attribute, decode_name, dimension_scales, is_dimension_only, read_attrs
from .dtypes import complex_layout_problem, element_shape, fillvalue, numpy_dtype
from .filters import codec, filter_label
from .model import OnUnsupported, ScanResult, Variable, chunk_grid, decode_fill, encode_fill

__all__ = ["open_local", "scan_file"]

try:  # how h5py.File encodes file names for HDF5
    from h5py._hl.compat import filename_encode as _filename_encode
except ImportError:
    _filename_encode = os.fsencode

_HDF5_VERSION = tuple(int(x) for x in h5py.version.hdf5_version.split(".")[:3])
# H5Dchunk_iter reports addresses without the user block before HDF5 1.14.4.
_CHUNK_ADDR_NEEDS_USERBLOCK = _HDF5_VERSION < (1, 14, 4)

_MAX_COORD = 10_000_000  # coordinate values read during a scan (elements)
# A variable's dense chunk references (20 bytes per chunk slot, stored or not) or padded inline
# data may take at most this many times the file's size, or _MEMORY_FLOOR: a small file that
# declares a huge grid of mostly unwritten chunks is refused before the columns are allocated.
_MEMORY_RATIO = 4
_MEMORY_FLOOR = 64 << 20
_SLOT_BYTES = 8 + 8 + 4  # offset, size, filter mask


# --- The file ------------------------------------------------------------------------------
def _collect(fid: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Datasets and groups reached through hard links: path -> open identifier.

    Links are listed first (no object is opened while visiting): object info (``H5Ovisit``'s)
    would also measure each dataset's chunk index, a walk of the whole index per dataset.
    """
    names: list[bytes] = []
    fid.links.visit(names.append)
    datasets: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for raw in names:
        # Soft links name objects reached through their hard link anyway; external links
        # point into other files, whose byte offsets must not be written against this one.
        if fid.links.get_info(raw).type != h5py.h5l.TYPE_HARD:
            continue
        try:
            obj = h5py.h5o.open(fid, raw)
        except (KeyError, OSError, ValueError):  # dangling soft or external link
            continue
        if isinstance(obj, h5py.h5d.DatasetID):
            datasets[raw.decode("utf-8")] = obj
        elif isinstance(obj, h5py.h5g.GroupID):
            groups[raw.decode("utf-8")] = obj
    return datasets, groups


def _user_block(fid: Any) -> int:
    return int(fid.get_create_plist().get_userblock())


_FAPL: Any = None


def _file_access() -> Any:
    """The file access properties ``h5py.File(path, "r")`` uses by default."""
    try:
        from h5py._hl.files import make_fapl

        return make_fapl(None)
    except (ImportError, TypeError):  # h5py reorganised its helpers: its defaults by hand
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
        return fapl


def open_local(p: str) -> Any:
    """``h5py.File(p, "r")``'s file identifier, without the high-level File around it."""
    global _FAPL
    if _FAPL is None:
        _FAPL = _file_access()
    return h5py.h5f.open(_filename_encode(p), h5py.h5f.ACC_RDONLY, fapl=_FAPL)


def _read_all(dsid: Any, shape: tuple[int, ...], dtype: Any) -> npt.NDArray[Any]:
    """All values of a dataset of a numeric type (``dtype``: h5py's), as ``Dataset[()]``."""
    arr = np.zeros(shape, dtype=dtype)
    if arr.size:
        dsid.read(h5py.h5s.ALL, h5py.h5s.ALL, arr)
    return arr


def scan_file(
    fid: Any,
    p: str,
    url: str,
    wanted: set[str] | None,
    on_unsupported: OnUnsupported,
    *,
    file_size: int,
) -> ScanResult:
    """Scan an open HDF5 file (``fid``: an ``h5py.h5f.FileID``, from a path or a file-like
    object); ``p`` names it in messages and in the result. Every object opened is closed."""
    opened: list[Any] = []
    try:
        return _scan_file(fid, opened, p, url, wanted, on_unsupported, file_size)
    except (UnsupportedHDF5Error, H5Error):
        raise
    except (RuntimeError, OSError, ValueError, KeyError, TypeError) as exc:
        raise H5Error(f"{p}: {exc}") from exc
    finally:
        # As h5py.File.close: every object of the file closed (the file itself by its opener).
        for oid in opened:
            if oid.valid:
                oid.close()


def _scan_file(
    fid: Any,
    opened: list[Any],
    p: str,
    url: str,
    wanted: set[str] | None,
    on_unsupported: OnUnsupported,
    file_size: int,
) -> ScanResult:
    root = h5py.h5g.open(fid, b"/")
    opened.append(root)
    datasets, group_ids = _collect(fid)
    opened.extend(datasets.values())
    opened.extend(group_ids.values())
    groups = {"": read_attrs(root, f"{p}: group '/'")[0]}
    for g, gid in group_ids.items():
        groups[g] = read_attrs(gid, f"{p}: group {g!r}")[0]
    user_block = _user_block(fid) if _CHUNK_ADDR_NEEDS_USERBLOCK else 0

    # Dimension lengths: a scale's length is the largest extent of any axis attached to
    # it (netCDF's length of an unlimited dimension).
    attrs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    scales: dict[str, list[str] | None] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    dim_len: dict[str, int] = {}
    dimension_only: set[str] = set()
    empty: set[str] = set()  # null dataspaces (h5py.Empty): no value at all
    elements: dict[str, tuple[int, ...]] = {}  # HDF5 array types: trailing dimensions
    for name, dsid in datasets.items():
        if dsid.shape is None:
            empty.add(name)
        shapes[name] = ds_shape = tuple(int(n) for n in dsid.shape or ())
        elements[name] = element_shape(dsid)
        attrs[name] = read_attrs(dsid, f"{p}: variable {name!r}")
        raw = attrs[name][1]
        if is_dimension_only(raw):
            dimension_only.add(name)
        sc = dimension_scales(fid, dsid, raw, len(ds_shape))
        if raw.get("CLASS") == b"DIMENSION_SCALE" and len(ds_shape) == 1:
            own: Any = decode_name(h5py.h5i.get_name(dsid))
            sc = [own]  # a dimension scale names its own dimension
        scales[name] = sc
        if sc is not None:
            for axis, key in enumerate(sc):
                dim_len[key] = max(dim_len.get(key, 0), ds_shape[axis])

    phony: dict[int, str] = {}  # arrays without dimension scales: one name per length
    for name in datasets:
        if scales[name] is None and name not in dimension_only:
            for n in shapes[name]:
                phony.setdefault(n, f"/phony_dim_{len(phony)}")
                dim_len[phony[n]] = n
            scales[name] = [phony[n] for n in shapes[name]]
    for name, element in elements.items():  # an array type's dimensions come last, unnamed
        own_scales = scales[name]
        if element and own_scales is not None:
            for n in element:
                phony.setdefault(n, f"/phony_dim_{len(phony)}")
                dim_len[phony[n]] = n
            scales[name] = own_scales + [phony[n] for n in element]
            shapes[name] = shapes[name] + element

    out: dict[str, Variable] = {}
    numeric: dict[str, tuple[np.dtype[Any], Any] | None] = {}
    for name, ds in datasets.items():
        if name in dimension_only or (wanted is not None and name not in wanted):
            continue
        where = f"{p}: variable {name!r}"
        sc = scales[name]
        assert sc is not None  # every remaining dataset got scales or phony dimensions
        try:
            if name in empty:
                raise UnsupportedHDF5Error(
                    f"{where}: a null dataspace (a dataset without any value, h5py.Empty) "
                    "has no zarr array"
                )
            numeric[name] = _h5chunks.numeric_info(ds)
            out[name] = _scan_dataset(
                ds,
                name,
                shapes[name],
                numeric[name],
                sc,
                dim_len,
                attrs[name],
                user_block,
                where,
                elements[name],
            )
        except UnsupportedHDF5Error as exc:
            if on_unsupported == "raise":
                raise
            warnings.warn(f"skipped: {exc}", UnsupportedVariableWarning, stacklevel=3)
        except (RuntimeError, OSError, ValueError, KeyError, TypeError) as exc:
            raise H5Error(f"{where}: {exc}") from exc
    dimensions = {k.lstrip("/"): v for k, v in dim_len.items()}
    # Values of coordinate variables (1-D, named after their dimension), for composing
    # files along a dimension; read here so that workers send back everything compose needs.
    coords = {}
    for name, v in out.items():
        if (
            len(v.dims) == 1
            and v.dims[0] == name.rpartition("/")[2]
            and v.dtype[1] in "iuf"
            and v.shape[0] <= _MAX_COORD
        ):
            dsid = datasets[name]
            info = numeric[name]
            file_dtype = dsid.dtype if info is None else info[0]
            data = np.asarray(_read_all(dsid, shapes[name], file_dtype), dtype=np.dtype(v.dtype))
            if data.shape != v.shape:  # a shorter coordinate on an unlimited dimension
                fill = decode_fill(v.fill_value, data.dtype)
                full = np.full(v.shape, fill, dtype=data.dtype)
                full[: data.shape[0]] = data
                data = full
            coords[name] = data
    return ScanResult(
        path=p,
        url=url,
        variables=out,
        groups=groups,
        dimensions=dimensions,
        file_size=file_size,
        coords=coords,
    )


def _vlen_utf8(ds: Any, shape: tuple[int, ...], own_shape: tuple[int, ...], where: str) -> bytes:
    """A variable-length string dataset (0-d or n-d) as one VLenUTF8-encoded chunk.

    Elements beyond the dataset's own extent (a shorter variable on an unlimited dimension)
    are empty strings. Strings that are not UTF-8 cannot be encoded: the variable is refused.
    """
    from numcodecs import VLenUTF8

    dset = h5py.Dataset(ds, readonly=True)
    try:
        data = np.asarray(dset.asstr()[()], dtype=object)
    except UnicodeDecodeError as exc:
        raise UnsupportedHDF5Error(
            f"{where}: variable-length strings that are not UTF-8 ({exc.reason} at byte "
            f"{exc.start}); zarr's vlen-utf8 codec cannot hold them"
        ) from exc
    full = np.full(shape, "", dtype=object)
    if data.ndim:
        full[tuple(slice(0, s) for s in own_shape)] = data
    else:
        full[()] = data[()]
    return bytes(VLenUTF8().encode(full))


def _one_fill(fill: Any, dtype: np.dtype[Any], where: str) -> Any:
    """The fill value of an array type's elements as one value of its base type: the same
    in every member, or the variable is refused (zarr has one fill value per array)."""
    values = np.asarray(fill, dtype=dtype).ravel()
    if values.size and not np.array_equal(values, np.full_like(values, values[0]), equal_nan=True):
        raise UnsupportedHDF5Error(
            f"{where}: its HDF5 fill value differs between the members of an element "
            f"({values.tolist()[:8]}); a zarr array has one fill value"
        )
    return values[0] if values.size else None


def _check_memory(nbytes: int, what: str, file_size: int, where: str) -> None:
    """Refuse a variable whose description would take ``nbytes`` of memory, more than the
    file's size can justify (see ``_MEMORY_RATIO``)."""
    limit = max(_MEMORY_FLOOR, _MEMORY_RATIO * file_size)
    if nbytes > limit:
        raise UnsupportedHDF5Error(
            f"{where}: {what} would take {nbytes} bytes of memory to reference, more than "
            f"{limit} ({_MEMORY_RATIO} times the file's {file_size} bytes, at least "
            f"{_MEMORY_FLOOR}); the file declares far more than it stores"
        )


def _check_not_external(dcpl: Any, where: str) -> None:
    """Refuse a contiguous dataset whose data live in external files (``H5Pset_external``)."""
    count = dcpl.get_external_count()
    if count:
        shown = range(min(count, 3))
        names = ", ".join(repr(os.fsdecode(dcpl.get_external(i)[0])) for i in shown)
        more = f" and {count - 3} more" if count > 3 else ""
        raise UnsupportedHDF5Error(
            f"{where}: its data are stored outside the file, in {names}{more} (HDF5 external "
            "storage); references can only point into the file itself"
        )


def _scan_dataset(
    ds: Any,
    name: str,
    own_shape: tuple[int, ...],
    numeric: tuple[np.dtype[Any], Any] | None,
    scales: list[str],
    dim_len: dict[str, int],
    ds_attrs: tuple[dict[str, Any], dict[str, Any]],
    user_block: int,
    where: str,
    element: tuple[int, ...] = (),
) -> Variable:
    """The variable of one dataset; ``element``: the shape of each element of an HDF5 array
    type, which becomes the trailing dimensions (``own_shape`` and ``scales`` include them)."""
    dcpl = ds.get_create_plist()
    layout_code = dcpl.get_layout()
    if layout_code == h5py.h5d.VIRTUAL:
        raise UnsupportedHDF5Error(f"{where}: HDF5 virtual datasets (VDS) are not supported")
    layout = {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous"}.get(
        layout_code, "chunked"
    )
    if layout == "contiguous":
        _check_not_external(dcpl, where)
    # Checked for every dataset, whichever path reads its dtype. Compact data are read
    # through HDF5 (which converts them) and inlined, so only references need numpy's bytes.
    problem = _h5chunks.storage_problem(ds)
    # Standard integers and floats: dtype and fill value from the extension, as h5py's.
    dtype, vlen = (numeric[0], False) if numeric is not None else numpy_dtype(ds, where, problem)
    if problem is None and dtype.kind == "c":
        problem = complex_layout_problem(ds.get_type(), dtype)
    if problem is not None and layout != "compact":
        raise UnsupportedHDF5Error(
            f"{where}: {problem}; its stored bytes are not the values HDF5 reads, so "
            "references to them would decode to wrong values"
        )
    pipeline = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
    # HDF5 filters (shuffle) work on the stored type's size: a whole array-type element.
    type_size = dtype.itemsize * math.prod(element)
    filters = [codec(int(c), tuple(cd), type_size, where) for c, _, cd, _ in pipeline]

    shape = tuple(dim_len[k] for k in scales)
    dims = tuple(k.rsplit("/", 1)[-1] for k in scales)
    if layout_code == h5py.h5d.CHUNKED:
        chunks = tuple(int(c) for c in dcpl.get_chunk()) + element
    else:
        chunks = tuple(max(1, s) for s in shape)

    # No fill value unless the writer set one: HDF5's is undefined (H5D_FILL_VALUE_UNDEFINED),
    # the library's zero (H5D_FILL_VALUE_DEFAULT, h5py's default), or never written
    # (H5D_FILL_TIME_NEVER, netCDF-4's "no fill" mode). Then zarr's fill value is null
    # (missing chunks read as zeros, as from HDF5), and readers do not mask real zeros.
    status = dcpl.fill_value_defined()
    undefined = status == h5py.h5d.FILL_VALUE_UNDEFINED
    no_fill = (
        status != h5py.h5d.FILL_VALUE_USER_DEFINED
        or dcpl.get_fill_time() == h5py.h5d.FILL_TIME_NEVER
    )
    if vlen or undefined:
        fill_raw = None
    else:
        fill_raw = numeric[1] if numeric is not None else fillvalue(ds, dcpl, where)
    if element and fill_raw is not None:
        fill_raw = _one_fill(fill_raw, dtype, where)
    # vlen strings: no fill (xarray would mask a "" fill, turning empty strings into NaN)
    fill_value = None if vlen or no_fill else encode_fill(fill_raw, dtype)
    attrs = dict(ds_attrs[0])
    if "_FillValue" in ds_attrs[1] and not vlen:
        declared = np.asarray(ds_attrs[1]["_FillValue"]).astype(dtype, copy=False).ravel()
        hdf5_fill = None if fill_raw is None else np.asarray(fill_raw, dtype=dtype).ravel()
        if declared.size != 1 or (
            hdf5_fill is not None and not np.array_equal(declared, hdf5_fill, equal_nan=True)
        ):
            raise UnsupportedHDF5Error(
                f"{where}: _FillValue attribute {attrs['_FillValue']!r} differs from the HDF5 "
                f"fill value {encode_fill(fill_raw, dtype)!r} that reads of unwritten chunks "
                "return"
            )
        fill_value = encode_fill(declared[0], dtype)
        # Also an attribute: Zarr v3 readers (VirtualiZarr into Icechunk) mask by it alone.
        attrs["_FillValue"] = cf_fill_attribute(declared[0], dtype)
    else:
        attrs.pop("_FillValue", None)

    grid = chunk_grid(shape, chunks)
    n = math.prod(grid)
    file_size = int(h5py.h5i.get_file_id(ds).get_filesize())
    _check_memory(n * _SLOT_BYTES, f"its chunk grid {grid} ({n} slots)", file_size, where)
    if vlen or layout == "compact":
        elements = math.prod(shape)
        _check_memory(elements * max(8, dtype.itemsize), f"its shape {shape}", file_size, where)
    offset = np.full(n, -1, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.uint32)
    raw: dict[int, bytes] = {}

    if vlen:
        if n:  # an empty array has no chunk to inline
            raw[0] = _vlen_utf8(ds, shape, own_shape, where)
        filters = [{"id": "vlen-utf8"}]
        chunks = tuple(max(1, s) for s in shape)
        if n != 1:
            offset, size, mask = offset[:1], size[:1], mask[:1]
    elif layout == "compact":
        if filters:
            raise UnsupportedHDF5Error(f"{where}: compact dataset with filters")
        data = np.asarray(h5py.Dataset(ds, readonly=True)[()], dtype=dtype)
        if own_shape != shape:
            pad = np.asarray(0 if fill_raw is None else fill_raw, dtype=dtype)
            full_arr = np.full(shape, pad, dtype=dtype)
            full_arr[tuple(slice(0, s) for s in own_shape)] = data
            data = full_arr
        if n:
            raw[0] = data.tobytes()
    elif layout == "contiguous":
        addr = ds.get_offset()
        nbytes = int(ds.get_storage_size())
        if addr is not None and nbytes > 0:
            offset[0] = int(addr)
            size[0] = nbytes
    else:
        rank = len(grid) - len(element)  # an array type's dimensions are whole in a chunk
        _h5chunks.chunk_index(ds, chunks[:rank], grid[:rank], offset, size, mask)
        if user_block:
            offset[offset >= 0] += user_block
        bad = np.flatnonzero(mask)
        if bad.size:
            m = int(mask[bad[0]])
            skipped = [
                filter_label(int(pipeline[i][0])) for i in range(len(pipeline)) if m >> i & 1
            ]
            key = ".".join(str(int(i)) for i in np.unravel_index(int(bad[0]), grid))
            raise UnsupportedHDF5Error(
                f"{where}: {bad.size} chunk(s) have a non-zero filter mask (first: chunk {key}, "
                f"mask {m:#x}, skipping filter {', '.join(skipped) or 'unknown'}); one zarr "
                "codec pipeline cannot decode them"
            )
    for b in raw.values():
        if b.startswith(b"base64:"):
            raise UnsupportedHDF5Error(
                f"{where}: its inline bytes start with 'base64:', which readers would decode"
            )
    return Variable(
        name=name,
        group=name.rpartition("/")[0],
        dtype="|O" if vlen else dtype.str,
        shape=shape,
        chunks=chunks,
        filters=filters,
        fill_value=fill_value,
        attrs=attrs,
        dims=dims,
        layout="vlen" if vlen else layout,
        offset=offset,
        size=size,
        filter_mask=mask,
        raw=raw,
    )
