# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Walk an HDF5 dataset's chunk index with ``H5Dchunk_iter`` into dense numpy columns.

Private: the public API is :mod:`dafzarr.refs`. The HDF5 function is h5py's own wrapper,
taken from h5py's exported C API (``h5py.defs.__pyx_capi__``), so it runs on the same HDF5
library instance as h5py's identifiers and needs no HDF5 headers at build time.
"""
# --- C imports -----------------------------------------------------------------
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t, uint32_t

from _hdf5_api cimport (
    H5Aget_name_fn,
    H5Aopen_fn,
    H5Dvlen_reclaim_fn,
    H5Rget_name_fn,
    H5Aopen_by_idx_fn,
    H5Aread_fn,
    H5Dchunk_iter_fn,
    H5Pget_attr_creation_order_fn,
    H5Sget_simple_extent_dims_fn,
    H5Tget_fields_fn,
    H5Tget_member_type_fn,
    haddr_t,
    herr_of_hid_fn,
    hid_of_hid_fn,
    hid_t,
    hsize_of_hid_fn,
    hsize_t,
    htri_of_hid_hid_fn,
    int_of_hid_fn,
    size_of_hid_fn,
)

# --- Python imports ------------------------------------------------------------
import h5py
import h5py.defs
import numpy as np
from h5py._objects import phil as _phil

# --- The capsule ----------------------------------------------------------------
# The capsule's name is the C signature of the exported function; refuse anything else, since
# calling through a pointer of the wrong type would corrupt the stack rather than fail.
CHUNK_ITER_SIGNATURE = "herr_t (hid_t, hid_t, H5D_chunk_iter_op_t, void *)"
cdef enum:
    _MAX_RANK = 32  # H5S_MAX_RANK

MAX_RANK = _MAX_RANK

cdef H5Dchunk_iter_fn _chunk_iter = NULL


cdef int _load_capsule() except -1:
    global _chunk_iter
    capi = getattr(h5py.defs, "__pyx_capi__", {})
    capsule = capi.get("H5Dchunk_iter")
    if capsule is None or not PyCapsule_IsValid(capsule, PyCapsule_GetName(capsule)):
        raise ImportError(
            f"h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}) does not export "
            "H5Dchunk_iter; dafzarr.refs needs h5py >= 3.8 built against HDF5 >= 1.14"
        )
    name = (<bytes>PyCapsule_GetName(capsule)).decode("ascii")
    if name != CHUNK_ITER_SIGNATURE:
        raise ImportError(
            f"h5py {h5py.version.version} exports H5Dchunk_iter with the signature {name!r}, "
            f"expected {CHUNK_ITER_SIGNATURE!r}"
        )
    _chunk_iter = <H5Dchunk_iter_fn>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    return 0


_load_capsule()

# --- The visitor ----------------------------------------------------------------
# The callback is pure C: it touches no Python object, so it is correct whether or not the
# wrapper releases the GIL. Failures are recorded in the struct and reported after the walk.
ctypedef struct _Visitor:
    int ndim
    hsize_t chunk[_MAX_RANK]
    hsize_t grid[_MAX_RANK]
    int64_t stride[_MAX_RANK]
    int64_t n
    int64_t *offsets
    int64_t *sizes
    uint32_t *masks
    int64_t count
    int error           # 1: chunk outside the grid, 2: chunk reported twice
    hsize_t bad[_MAX_RANK]


cdef int _visit(const hsize_t *offset, unsigned filter_mask, haddr_t addr, hsize_t size,
                void *op_data) noexcept nogil:
    cdef _Visitor *v = <_Visitor *>op_data
    cdef int k, j
    cdef hsize_t idx
    cdef int64_t fi = 0
    for k in range(v.ndim):
        idx = offset[k] // v.chunk[k]
        if idx >= v.grid[k]:
            for j in range(v.ndim):
                v.bad[j] = offset[j]
            v.error = 1
            return -1
        fi += <int64_t>idx * v.stride[k]
    if v.offsets[fi] != -1:
        for j in range(v.ndim):
            v.bad[j] = offset[j]
        v.error = 2
        return -1
    v.offsets[fi] = <int64_t>addr
    v.sizes[fi] = <int64_t>size
    v.masks[fi] = filter_mask
    v.count += 1
    return 0


# --- Public (private-module) functions --------------------------------------------
def chunk_index(dsid, tuple chunks, tuple grid, int64_t[::1] offsets not None,
                int64_t[::1] sizes not None, uint32_t[::1] masks not None):
    """Fill ``offsets``/``sizes``/``masks`` (flat C order over ``grid``) for every allocated chunk.

    ``offsets`` must hold -1 on entry; entries of unallocated chunks stay -1. Returns the number
    of allocated chunks. ``dsid`` is a live ``h5py.h5d.DatasetID`` of a chunked dataset.
    """
    cdef _Visitor v
    cdef int k
    cdef int64_t n = 1
    cdef hid_t c_id
    if not isinstance(dsid, h5py.h5d.DatasetID):
        raise TypeError(f"expected an h5py.h5d.DatasetID, got {type(dsid).__name__}")
    if len(chunks) != len(grid) or not 0 < len(grid) <= _MAX_RANK:
        raise ValueError(f"chunks {chunks} and grid {grid} must have the same rank in 1..32")
    if len(grid) != dsid.rank:  # the walk reads one chunk offset per dimension of the data
        raise ValueError(f"chunk grid {grid} has rank {len(grid)}; the dataset has rank "
                         f"{dsid.rank}")
    v.ndim = len(grid)
    for k in range(v.ndim - 1, -1, -1):
        v.chunk[k] = chunks[k]
        v.grid[k] = grid[k]
        if v.chunk[k] == 0:
            raise ValueError(f"chunk shape {chunks} has a zero extent")
        v.stride[k] = n
        n *= <int64_t>v.grid[k]
    if offsets.shape[0] != n or sizes.shape[0] != n or masks.shape[0] != n:
        raise ValueError(f"output columns must have {n} entries (the chunk grid {grid})")
    v.n = n
    v.offsets = &offsets[0] if n else NULL
    v.sizes = &sizes[0] if n else NULL
    v.masks = &masks[0] if n else NULL
    v.count = 0
    v.error = 0
    if n == 0:
        return 0
    with _phil:
        c_id = dsid.id  # `dsid` stays referenced by this frame for the whole walk
        try:
            _chunk_iter(c_id, 0, _visit, &v)
        except Exception:
            if v.error == 0:
                raise
    if v.error:
        where = tuple(v.bad[k] for k in range(v.ndim))
        if v.error == 1:
            raise ValueError(f"chunk at element offset {where} lies outside the chunk grid {grid}")
        raise ValueError(f"chunk at element offset {where} was reported twice")
    return v.count


# --- Attributes ---------------------------------------------------------------------------
# Reading an attribute through h5py's AttributeManager creates half a dozen identifier objects
# (attribute, type, space, memory type), each registered with h5py; on small files that is most
# of the scan. `read_attrs` reads the common kinds (standard integers and IEEE floats, fixed-
# length strings; scalar or simple dataspaces) with plain HDF5 calls into exactly the values
# AttributeManager returns, and leaves every other attribute to it (the value SLOW).
SLOW = object()

cdef dict _SIGNATURES = {
    "H5Aget_num_attrs": "int (hid_t)",
    "H5Dget_create_plist": "hid_t (hid_t)",
    "H5Gget_create_plist": "hid_t (hid_t)",
    "H5Pget_attr_creation_order": "herr_t (hid_t, unsigned int *)",
    "H5Pclose": "herr_t (hid_t)",
    "H5Aopen_by_idx": "hid_t (hid_t, char *, H5_index_t, H5_iter_order_t, hsize_t, hid_t, hid_t)",
    "H5Aget_name": "Py_ssize_t (hid_t, size_t, char *)",
    "H5Aclose": "herr_t (hid_t)",
    "H5Aget_space": "hid_t (hid_t)",
    "H5Aget_type": "hid_t (hid_t)",
    "H5Sget_simple_extent_type": "H5S_class_t (hid_t)",
    "H5Sget_simple_extent_dims": "int (hid_t, hsize_t *, hsize_t *)",
    "H5Sclose": "herr_t (hid_t)",
    "H5Tget_class": "enum H5T_class_t (hid_t)",
    "H5Tequal": "htri_t (hid_t, hid_t)",
    "H5Tis_variable_str": "htri_t (hid_t)",
    "H5Tget_size": "size_t (hid_t)",
    "H5Tget_cset": "H5T_cset_t (hid_t)",
    "H5Tclose": "herr_t (hid_t)",
    "H5Aread": "herr_t (hid_t, hid_t, void *)",
    "H5Aopen": "hid_t (hid_t, char *, hid_t)",
    "H5Tget_super": "hid_t (hid_t)",
    "H5Rget_name": "Py_ssize_t (hid_t, H5R_type_t, void *, char *, size_t)",
    "H5Dvlen_reclaim": "herr_t (hid_t, hid_t, hid_t, void *)",
    "H5Dget_type": "hid_t (hid_t)",
    "H5Pget_fill_value": "herr_t (hid_t, hid_t, void *)",
    "H5Tget_order": "H5T_order_t (hid_t)",
    "H5Tget_precision": "hsize_t (hid_t)",
    "H5Tget_offset": "int (hid_t)",
    "H5Tget_fields": "herr_t (hid_t, size_t *, size_t *, size_t *, size_t *, size_t *)",
    "H5Tget_ebias": "size_t (hid_t)",
    "H5Tget_norm": "H5T_norm_t (hid_t)",
    "H5Tget_strpad": "H5T_str_t (hid_t)",
    "H5Tget_nmembers": "int (hid_t)",
    "H5Tget_member_type": "hid_t (hid_t, unsigned int)",
}


cdef void *_capi(str name) except NULL:
    capsule = getattr(h5py.defs, "__pyx_capi__", {}).get(name)
    if capsule is None or not PyCapsule_IsValid(capsule, PyCapsule_GetName(capsule)):
        raise ImportError(f"h5py {h5py.version.version} does not export {name}")
    got = (<bytes>PyCapsule_GetName(capsule)).decode("ascii")
    if got != _SIGNATURES[name]:
        raise ImportError(
            f"h5py {h5py.version.version} exports {name} with the signature {got!r}, "
            f"expected {_SIGNATURES[name]!r}"
        )
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


cdef int_of_hid_fn _Aget_num_attrs = <int_of_hid_fn>_capi("H5Aget_num_attrs")
cdef hid_of_hid_fn _Dget_create_plist = <hid_of_hid_fn>_capi("H5Dget_create_plist")
cdef hid_of_hid_fn _Gget_create_plist = <hid_of_hid_fn>_capi("H5Gget_create_plist")
cdef H5Pget_attr_creation_order_fn _Pget_attr_creation_order = (
    <H5Pget_attr_creation_order_fn>_capi("H5Pget_attr_creation_order"))
cdef herr_of_hid_fn _Pclose = <herr_of_hid_fn>_capi("H5Pclose")
cdef H5Aopen_by_idx_fn _Aopen_by_idx = <H5Aopen_by_idx_fn>_capi("H5Aopen_by_idx")
cdef H5Aget_name_fn _Aget_name = <H5Aget_name_fn>_capi("H5Aget_name")
cdef herr_of_hid_fn _Aclose = <herr_of_hid_fn>_capi("H5Aclose")
cdef hid_of_hid_fn _Aget_space = <hid_of_hid_fn>_capi("H5Aget_space")
cdef hid_of_hid_fn _Aget_type = <hid_of_hid_fn>_capi("H5Aget_type")
cdef int_of_hid_fn _Sget_simple_extent_type = <int_of_hid_fn>_capi("H5Sget_simple_extent_type")
cdef H5Sget_simple_extent_dims_fn _Sget_simple_extent_dims = (
    <H5Sget_simple_extent_dims_fn>_capi("H5Sget_simple_extent_dims"))
cdef herr_of_hid_fn _Sclose = <herr_of_hid_fn>_capi("H5Sclose")
cdef int_of_hid_fn _Tget_class = <int_of_hid_fn>_capi("H5Tget_class")
cdef htri_of_hid_hid_fn _Tequal = <htri_of_hid_hid_fn>_capi("H5Tequal")
cdef int_of_hid_fn _Tis_variable_str = <int_of_hid_fn>_capi("H5Tis_variable_str")
cdef size_of_hid_fn _Tget_size = <size_of_hid_fn>_capi("H5Tget_size")
cdef int_of_hid_fn _Tget_cset = <int_of_hid_fn>_capi("H5Tget_cset")
cdef herr_of_hid_fn _Tclose = <herr_of_hid_fn>_capi("H5Tclose")
cdef H5Aread_fn _Aread = <H5Aread_fn>_capi("H5Aread")
cdef H5Aopen_fn _Aopen = <H5Aopen_fn>_capi("H5Aopen")
cdef hid_of_hid_fn _Tget_super = <hid_of_hid_fn>_capi("H5Tget_super")
cdef H5Rget_name_fn _Rget_name = <H5Rget_name_fn>_capi("H5Rget_name")
cdef H5Dvlen_reclaim_fn _Dvlen_reclaim = <H5Dvlen_reclaim_fn>_capi("H5Dvlen_reclaim")
cdef hid_of_hid_fn _Dget_type = <hid_of_hid_fn>_capi("H5Dget_type")
cdef H5Aread_fn _Pget_fill_value = <H5Aread_fn>_capi("H5Pget_fill_value")
cdef int_of_hid_fn _Tget_order = <int_of_hid_fn>_capi("H5Tget_order")
cdef hsize_of_hid_fn _Tget_precision = <hsize_of_hid_fn>_capi("H5Tget_precision")
cdef int_of_hid_fn _Tget_offset = <int_of_hid_fn>_capi("H5Tget_offset")
cdef H5Tget_fields_fn _Tget_fields = <H5Tget_fields_fn>_capi("H5Tget_fields")
cdef size_of_hid_fn _Tget_ebias = <size_of_hid_fn>_capi("H5Tget_ebias")
cdef int_of_hid_fn _Tget_norm = <int_of_hid_fn>_capi("H5Tget_norm")
cdef int_of_hid_fn _Tget_strpad = <int_of_hid_fn>_capi("H5Tget_strpad")
cdef int_of_hid_fn _Tget_nmembers = <int_of_hid_fn>_capi("H5Tget_nmembers")
cdef H5Tget_member_type_fn _Tget_member_type = <H5Tget_member_type_fn>_capi("H5Tget_member_type")

cdef int _INDEX_NAME = h5py.h5.INDEX_NAME
cdef int _INDEX_CRT_ORDER = h5py.h5.INDEX_CRT_ORDER
cdef int _ITER_INC = h5py.h5.ITER_INC
cdef unsigned _CRT_ORDER_TRACKED = h5py.h5p.CRT_ORDER_TRACKED
cdef int _S_SCALAR = h5py.h5s.SCALAR
cdef int _S_SIMPLE = h5py.h5s.SIMPLE
cdef int _T_INTEGER = h5py.h5t.INTEGER
cdef int _T_FLOAT = h5py.h5t.FLOAT
cdef int _T_STRING = h5py.h5t.STRING
cdef int _T_VLEN = h5py.h5t.VLEN
cdef int _R_OBJECT = h5py.h5r.OBJECT
cdef int _CSET_ASCII = h5py.h5t.CSET_ASCII
cdef int _CSET_UTF8 = h5py.h5t.CSET_UTF8

# Standard numeric file types and the numpy dtype h5py gives them; an attribute of a type
# equal to one of these is read with that type as memory type (no conversion), as h5py does.
_NUMERIC = []
for _order, _tag in (("<", "LE"), (">", "BE")):
    for _bits in (8, 16, 32, 64):
        for _kind, _prefix in (("i", "STD_I"), ("u", "STD_U")):
            _NUMERIC.append((getattr(h5py.h5t, f"{_prefix}{_bits}{_tag}"),
                             np.dtype(f"{_order}{_kind}{_bits // 8}")))
    for _bits in (32, 64):
        _NUMERIC.append((getattr(h5py.h5t, f"IEEE_F{_bits}{_tag}"),
                         np.dtype(f"{_order}f{_bits // 8}")))
# Most common first: little-endian doubles, floats, ints, shorts.
_NUMERIC.sort(key=lambda t: (t[1].byteorder == ">", t[1].kind == "u",
                             {"f": 0, "i": 1, "u": 1}[t[1].kind], -t[1].itemsize))
cdef list _NUMERIC_IDS = [t.id for t, _ in _NUMERIC]
cdef list _NUMERIC_DTYPES = [d for _, d in _NUMERIC]

# Fixed-length strings: h5py's own memory type and dtype for (size, cset), made on first use.
cdef dict _STRINGS = {}


cdef tuple _string_type(size_t size, int cset):
    key = (size, cset)
    got = _STRINGS.get(key)
    if got is None:
        dt = h5py.h5t.string_dtype("utf-8" if cset == _CSET_UTF8 else "ascii", <Py_ssize_t>size)
        mtype = h5py.h5t.py_create(dt)
        got = _STRINGS[key] = (mtype, mtype.id, dt)
    return <tuple>got


cdef object _read_one(hid_t aid):
    """The value AttributeManager would return, or SLOW for kinds left to it."""
    cdef hid_t sid = -1
    cdef hid_t tid = -1
    cdef int sclass, tclass, ndim, k
    cdef hsize_t dims[_MAX_RANK]
    cdef hid_t mid
    cdef object arr, dtype
    try:
        sid = _Aget_space(aid)
        sclass = _Sget_simple_extent_type(sid)
        if sclass == _S_SCALAR:
            ndim = 0
        elif sclass == _S_SIMPLE:
            ndim = _Sget_simple_extent_dims(sid, NULL, NULL)
            if not 0 < ndim <= _MAX_RANK:
                return SLOW
            _Sget_simple_extent_dims(sid, dims, NULL)
            for k in range(ndim):
                if dims[k] == 0:
                    return SLOW
        else:
            return SLOW  # null dataspace: h5py.Empty
        shape = tuple([dims[k] for k in range(ndim)])
        tid = _Aget_type(aid)
        tclass = _Tget_class(tid)
        if tclass == _T_INTEGER or tclass == _T_FLOAT:
            dtype = _numeric_dtype(tid)
            if dtype is None:
                return SLOW
            mid = tid
        elif tclass == _T_STRING:
            if _Tis_variable_str(tid) != 0:
                return SLOW
            k = _Tget_cset(tid)
            if k != _CSET_ASCII and k != _CSET_UTF8:
                return SLOW
            _mtype, mid_obj, dtype = _string_type(_Tget_size(tid), k)  # cached: stays alive
            mid = <hid_t>mid_obj
        else:
            return SLOW
        arr = np.zeros(shape, dtype=dtype)
        _read_into(aid, mid, arr)
        if ndim == 0:
            return arr[()]
        return arr
    except Exception:
        return SLOW  # AttributeManager reproduces the failure, or reads it after all
    finally:
        if tid >= 0:
            _Tclose(tid)
        if sid >= 0:
            _Sclose(sid)


cdef object _numeric_dtype(hid_t tid):
    """The numpy dtype of a standard integer or IEEE float type, or None."""
    cdef Py_ssize_t i
    for i in range(len(_NUMERIC_IDS)):
        if _Tequal(tid, <hid_t>_NUMERIC_IDS[i]) > 0:
            return _NUMERIC_DTYPES[i]
    return None


cdef int _read_into(hid_t aid, hid_t mid, object arr) except -1:
    cdef char[::1] buf = arr.reshape(-1).view(np.uint8).view("b")
    if buf.shape[0]:
        _Aread(aid, mid, &buf[0])
    return 0


def read_attrs(objid, bint dataset, skip):
    """``[(name, value), ...]`` of an object's attributes in h5py's iteration order.

    ``objid`` is an open ``DatasetID`` (``dataset`` true) or ``GroupID``; names (bytes) in
    ``skip`` are listed with value None and not read; other values are what h5py's
    ``AttributeManager`` returns, or :data:`SLOW` where it has to be asked. Returns None when
    the attributes cannot be listed this way (then ask h5py for everything).
    """
    cdef hid_t loc, pid, aid
    cdef unsigned order = 0
    cdef int n, i, idx_type
    cdef Py_ssize_t length
    cdef char namebuf[256]
    cdef bytes name
    out = []
    with _phil:
        loc = objid.id  # `objid` stays referenced by this frame
        try:
            n = _Aget_num_attrs(loc)
            pid = _Dget_create_plist(loc) if dataset else _Gget_create_plist(loc)
            try:
                _Pget_attr_creation_order(pid, &order)
            finally:
                _Pclose(pid)
        except Exception:
            return None
        idx_type = _INDEX_CRT_ORDER if order & _CRT_ORDER_TRACKED else _INDEX_NAME
        for i in range(n):
            try:
                aid = _Aopen_by_idx(loc, b".", idx_type, _ITER_INC, <hsize_t>i, 0, 0)
            except Exception:
                return None
            try:
                length = _Aget_name(aid, sizeof(namebuf), namebuf)
                if length < <Py_ssize_t>sizeof(namebuf):
                    name = namebuf[:length]
                else:
                    big = bytearray(length + 1)
                    _Aget_name(aid, length + 1, <char *>big)
                    name = bytes(big[:length])
                out.append((name, None if name in skip else _read_one(aid)))
            except Exception:
                return None
            finally:
                _Aclose(aid)
    return out


# --- Dimension scales ------------------------------------------------------------------------
ctypedef struct _hvl_t:
    size_t len
    void *p

# Memory type of DIMENSION_LIST: variable-length sequences of object references.
_VLEN_REF = h5py.h5t.py_create(h5py.vlen_dtype(h5py.ref_dtype), logical=True)
cdef hid_t _VLEN_REF_ID = _VLEN_REF.id
cdef hid_t _REF_OBJ_ID = h5py.h5t.STD_REF_OBJ.id


def scale_names(dsid, fid):
    """The paths (bytes) of the first dimension scale attached to each axis of ``dsid``.

    Reads ``DIMENSION_LIST`` (a 1-D attribute of variable-length object references) and
    names each axis' first reference relative to the file ``fid``, as ``h5py.h5r.get_name``
    does. None when an axis has no scale; :data:`SLOW` for anything else (another layout of
    the attribute, a reference without a name, an HDF5 error): ask h5py then.
    """
    cdef hid_t loc, floc, aid = -1, sid = -1, tid = -1, sup = -1
    cdef int ndim, k
    cdef hsize_t n = 0
    cdef _hvl_t *buf = NULL
    cdef bint have = False
    cdef Py_ssize_t length
    cdef char namebuf[256]
    with _phil:
        loc = dsid.id
        floc = fid.id
        try:
            aid = _Aopen(loc, b"DIMENSION_LIST", 0)
            sid = _Aget_space(aid)
            if _Sget_simple_extent_type(sid) != _S_SIMPLE:
                return SLOW
            ndim = _Sget_simple_extent_dims(sid, NULL, NULL)
            if ndim != 1:
                return SLOW
            _Sget_simple_extent_dims(sid, &n, NULL)
            tid = _Aget_type(aid)
            if _Tget_class(tid) != _T_VLEN:
                return SLOW
            sup = _Tget_super(tid)
            if _Tequal(sup, _REF_OBJ_ID) <= 0:
                return SLOW
            if n == 0:
                return []
            buf = <_hvl_t *>PyMem_Calloc(n, sizeof(_hvl_t))
            if buf == NULL:
                raise MemoryError()
            _Aread(aid, _VLEN_REF_ID, buf)
            have = True
            out = []
            for k in range(<int>n):
                if buf[k].len == 0:
                    return None
                length = _Rget_name(floc, _R_OBJECT, buf[k].p, NULL, 0)
                if length <= 0:
                    return SLOW
                if length < <Py_ssize_t>sizeof(namebuf):
                    _Rget_name(floc, _R_OBJECT, buf[k].p, namebuf, sizeof(namebuf))
                    out.append(namebuf[:length])
                else:
                    big = bytearray(length + 1)
                    _Rget_name(floc, _R_OBJECT, buf[k].p, <char *>big, length + 1)
                    out.append(bytes(big[:length]))
            return out
        except Exception:
            return SLOW
        finally:
            if have:
                _Dvlen_reclaim(_VLEN_REF_ID, sid, 0, buf)
            PyMem_Free(buf)
            if sup >= 0:
                _Tclose(sup)
            if tid >= 0:
                _Tclose(tid)
            if sid >= 0:
                _Sclose(sid)
            if aid >= 0:
                _Aclose(aid)


# --- Datasets of plain numbers -------------------------------------------------------------
cdef bytes _fill_bytes(hid_t loc, hid_t tid, size_t size):
    """The dataset's fill value read with ``tid`` (``size`` bytes) as the memory type."""
    cdef hid_t pid = _Dget_create_plist(loc)
    cdef char[::1] buf
    out = np.zeros(size, dtype=np.uint8)
    buf = out.view("b")
    try:
        _Pget_fill_value(pid, tid, &buf[0])
    finally:
        _Pclose(pid)
    return out.tobytes()


def numeric_info(dsid):
    """``(dtype, fill value)`` of a dataset of a standard integer or IEEE float type.

    The dtype is the one h5py gives ``dsid.dtype`` for such a type, the fill value what
    h5py's ``Dataset.fillvalue`` returns (a numpy scalar of that dtype). None for any other
    type or on an HDF5 error: ask h5py then.
    """
    cdef hid_t loc, tid = -1
    with _phil:
        loc = dsid.id
        try:
            tid = _Dget_type(loc)
            dtype = _numeric_dtype(tid)
            if dtype is None:
                return None
            return dtype, np.frombuffer(_fill_bytes(loc, tid, dtype.itemsize), dtype)[0]
        except Exception:
            return None
        finally:
            if tid >= 0:
                _Tclose(tid)


def stored_fill_bytes(dsid):
    """The bytes of a dataset's fill value in its own stored type (no conversion: HDF5
    reads it with the file's type as the memory type), or None on an HDF5 error.

    For types whose stored bytes are numpy's (see :func:`storage_problem`), such as an
    array type whose elements h5py cannot convert (``Dataset.fillvalue`` fails on them).
    """
    cdef hid_t loc, tid = -1
    cdef size_t size
    with _phil:
        loc = dsid.id
        try:
            tid = _Dget_type(loc)
            size = _Tget_size(tid)
            return _fill_bytes(loc, tid, size) if 0 < size <= (1 << 20) else None
        except Exception:
            return None
        finally:
            if tid >= 0:
                _Tclose(tid)


# --- Types whose stored bytes are not numpy's -------------------------------------------------
# HDF5 converts values on every read (h5py's included) from the file's type to the memory type;
# a reference hands readers the stored bytes unconverted. `storage_problem` names what in a
# dataset's type makes those bytes differ from numpy's encoding of the dtype h5py reports.
cdef int _T_BITFIELD = h5py.h5t.BITFIELD
cdef int _T_ENUM = h5py.h5t.ENUM
cdef int _T_ARRAY = h5py.h5t.ARRAY
cdef int _T_COMPOUND = h5py.h5t.COMPOUND
cdef int _T_COMPLEX = getattr(h5py.h5t, "COMPLEX", -1)  # HDF5 >= 2.0
cdef int _ORDER_LE = h5py.h5t.ORDER_LE
cdef int _ORDER_BE = h5py.h5t.ORDER_BE
cdef int _ORDER_NONE = h5py.h5t.ORDER_NONE
cdef int _ORDER_VAX = h5py.h5t.ORDER_VAX
cdef int _NORM_IMPLIED = h5py.h5t.NORM_IMPLIED
cdef int _STR_SPACEPAD = h5py.h5t.STR_SPACEPAD

# IEEE 754 binary16/32/64 by size: (sign bit, exponent position, exponent bits, mantissa
# position, mantissa bits, exponent bias).
cdef dict _IEEE = {
    2: (15, 10, 5, 0, 10, 15),
    4: (31, 23, 8, 0, 23, 127),
    8: (63, 52, 11, 0, 52, 1023),
}


cdef object _type_problem(hid_t tid, int depth):
    """The reason stored values of ``tid`` are not numpy's bytes, or None."""
    cdef int tclass = _Tget_class(tid)
    cdef size_t size, spos, epos, esize, mpos, msize
    cdef hsize_t precision
    cdef int offset, order, k, n
    cdef hid_t sub = -1
    if depth > 32:
        return "a data type nested more than 32 levels deep"
    if tclass == _T_INTEGER or tclass == _T_BITFIELD or tclass == _T_FLOAT:
        kind = {_T_INTEGER: "integer", _T_BITFIELD: "bitfield"}.get(tclass, "floating-point")
        size = _Tget_size(tid)
        order = _Tget_order(tid)
        if order == _ORDER_VAX:
            return f"{kind} type in VAX byte order"
        if order != _ORDER_LE and order != _ORDER_BE and not (order == _ORDER_NONE and size == 1):
            return f"{kind} type of byte order {order} (neither little- nor big-endian)"
        precision = _Tget_precision(tid)
        offset = _Tget_offset(tid)
        if tclass != _T_FLOAT:
            if precision != 8 * size or offset != 0:
                return (
                    f"{precision}-bit {kind} at bit offset {offset} in {size} byte(s) (HDF5 "
                    f"precision/offset; readers would see the whole {8 * size}-bit words)"
                )
            return None
        _Tget_fields(tid, &spos, &epos, &esize, &mpos, &msize)
        got = (spos, epos, esize, mpos, msize, _Tget_ebias(tid))
        if (
            _IEEE.get(size) != got
            or precision != 8 * size
            or offset != 0
            or _Tget_norm(tid) != _NORM_IMPLIED
        ):
            return (
                f"non-IEEE {size}-byte floating-point format (precision {precision} at bit "
                f"offset {offset}, sign bit {spos}, {esize}-bit exponent at bit {epos} with bias "
                f"{got[5]}, {msize}-bit mantissa at bit {mpos})"
            )
        return None
    if tclass == _T_STRING:
        if _Tis_variable_str(tid) == 0 and _Tget_strpad(tid) == _STR_SPACEPAD:
            return (
                "fixed-length strings padded with spaces (H5T_STR_SPACEPAD), whose padding "
                "HDF5 removes on reads"
            )
        return None
    if tclass == _T_ENUM or tclass == _T_ARRAY or tclass == _T_COMPLEX:
        sub = _Tget_super(tid)
        try:
            return _type_problem(sub, depth + 1)
        finally:
            _Tclose(sub)
    if tclass == _T_COMPOUND:
        n = _Tget_nmembers(tid)
        for k in range(n):
            sub = _Tget_member_type(tid, <unsigned int>k)
            try:
                got = _type_problem(sub, depth + 1)
            finally:
                _Tclose(sub)
            if got is not None:
                return f"compound member {k}: {got}"
        return None
    return None


def type_problem(typeid):
    """:func:`storage_problem` for an ``h5py.h5t.TypeID`` (a file's type, or one being built)."""
    if not isinstance(typeid, h5py.h5t.TypeID):
        raise TypeError(f"expected an h5py.h5t.TypeID, got {type(typeid).__name__}")
    with _phil:
        return _type_problem(<hid_t>typeid.id, 0)


def storage_problem(dsid):
    """Why the stored bytes of a dataset's values differ from what HDF5 reads, or None.

    Integers and bitfields must use every bit of their size; floats must be IEEE 754
    binary16/32/64; both little- or big-endian (VAX order is refused); fixed-length strings
    must not be space-padded; enum, array, complex and compound types are checked through
    their base and member types. ``dsid`` is an open ``h5py.h5d.DatasetID``.
    """
    cdef hid_t loc, tid = -1
    with _phil:
        loc = dsid.id  # `dsid` stays referenced by this frame
        tid = _Dget_type(loc)
        try:
            return _type_problem(tid, 0)
        finally:
            _Tclose(tid)
