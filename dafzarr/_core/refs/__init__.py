"""Virtual reference stores (the implementation behind :mod:`dafzarr.refs`).

The public module loads each name from its module here on first use, so that importing
``dafzarr`` does not load h5py and pyarrow; this package's ``__init__`` imports nothing.
"""
