# HDF5 types and the function-pointer types of h5py's exported C API (declarations only).
#
# No HDF5 header is needed: the few types used are declared here as HDF5 >= 1.14 defines them
# (hid_t is 64-bit since 1.10). The functions themselves are taken at run time from h5py's
# ``h5py.defs.__pyx_capi__`` capsules, i.e. h5py's error-translating wrappers, which return -1
# with a Python exception set on failure.
from libc.stdint cimport int64_t, uint64_t

ctypedef int64_t hid_t
ctypedef int herr_t
ctypedef uint64_t haddr_t
ctypedef unsigned long long hsize_t

# Called once per allocated chunk; `offset` is in dataset elements (HDF5 >= 1.14.0, 1.12.3,
# 1.10.10). A return value < 0 stops the walk with an error, > 0 stops it successfully.
ctypedef int (*H5D_chunk_iter_op_t)(const hsize_t *offset, unsigned filter_mask, haddr_t addr,
                                    hsize_t size, void *op_data) noexcept nogil

# h5py's wrapper of H5Dchunk_iter: raises and returns -1 on failure.
ctypedef herr_t (*H5Dchunk_iter_fn)(hid_t dset_id, hid_t dxpl_id, H5D_chunk_iter_op_t op,
                                    void *op_data) except -1
