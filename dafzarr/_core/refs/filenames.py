"""File names inside a kerchunk-Parquet reference store, shared by its writer and its readers.

Kept free of heavy imports: the command line reads these names without loading h5py or pyarrow.
"""

from __future__ import annotations

__all__ = ["METADATA_FILE", "PLACEMENT_FILE", "VALUES_FILE", "refs_file"]

# Consolidated zarr v2 metadata plus the store's ``record_size``.
METADATA_FILE = ".zmetadata"
# Where a composed store keeps its placement table (readers ignore files not in .zmetadata).
PLACEMENT_FILE = ".placement.parquet"
# Composed values (coordinates concatenated from many files) that a references-only store
# references here, as real bytes, instead of inlining them.
VALUES_FILE = "values.bin"


def refs_file(record: int) -> str:
    """The name of an array's ``record``-th reference file (``refs.<record>.parq``)."""
    return f"refs.{record}.parq"
