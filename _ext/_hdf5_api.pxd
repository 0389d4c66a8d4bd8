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

# Attribute, datatype, dataspace and property-list functions used to read attributes without
# h5py's per-object wrappers (h5py's error-translating wrappers: a Python exception is set on
# failure, hence `except *`). Enumerations are passed and returned as C ints.
ctypedef int (*int_of_hid_fn)(hid_t) except *
ctypedef hid_t (*hid_of_hid_fn)(hid_t) except *
ctypedef herr_t (*herr_of_hid_fn)(hid_t) except *
ctypedef size_t (*size_of_hid_fn)(hid_t) except *
ctypedef herr_t (*H5Pget_attr_creation_order_fn)(hid_t, unsigned int *) except *
ctypedef hid_t (*H5Aopen_by_idx_fn)(hid_t, char *, int, int, hsize_t, hid_t, hid_t) except *
ctypedef Py_ssize_t (*H5Aget_name_fn)(hid_t, size_t, char *) except *
ctypedef int (*H5Sget_simple_extent_dims_fn)(hid_t, hsize_t *, hsize_t *) except *
ctypedef int (*htri_of_hid_hid_fn)(hid_t, hid_t) except *
ctypedef herr_t (*H5Aread_fn)(hid_t, hid_t, void *) except *
ctypedef hid_t (*H5Aopen_fn)(hid_t, char *, hid_t) except *
ctypedef Py_ssize_t (*H5Rget_name_fn)(hid_t, int, void *, char *, size_t) except *
ctypedef herr_t (*H5Dvlen_reclaim_fn)(hid_t, hid_t, hid_t, void *) except *
ctypedef hsize_t (*hsize_of_hid_fn)(hid_t) except *
ctypedef herr_t (*H5Tget_fields_fn)(hid_t, size_t *, size_t *, size_t *, size_t *,
                                    size_t *) except *
ctypedef hid_t (*H5Tget_member_type_fn)(hid_t, unsigned int) except *
