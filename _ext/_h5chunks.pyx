# cython: boundscheck=True, wraparound=False
"""Walk an HDF5 dataset's chunk index with ``H5Dchunk_iter`` into dense numpy columns.

Private: the public API is :mod:`dafzarr.refs`. The HDF5 function is h5py's own wrapper,
taken from h5py's exported C API (``h5py.defs.__pyx_capi__``), so it runs on the same HDF5
library instance as h5py's identifiers and needs no HDF5 headers at build time.
"""
# --- C imports -----------------------------------------------------------------
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t, uint32_t

from _hdf5_api cimport H5D_chunk_iter_op_t, H5Dchunk_iter_fn, haddr_t, hid_t, hsize_t

# --- Python imports ------------------------------------------------------------
import h5py
import h5py.defs
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
    cdef int k
    cdef hsize_t idx
    cdef int64_t fi = 0
    for k in range(v.ndim):
        idx = offset[k] // v.chunk[k]
        if idx >= v.grid[k]:
            for k in range(v.ndim):
                v.bad[k] = offset[k]
            v.error = 1
            return -1
        fi += <int64_t>idx * v.stride[k]
    if v.offsets[fi] != -1:
        for k in range(v.ndim):
            v.bad[k] = offset[k]
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
