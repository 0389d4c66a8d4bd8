"""Bytes before an archive: a self-extracting stub, or the file an archive was appended to.

A ZIP archive need not start at the file's first byte: ``zip -A`` and Python's ``zipfile`` in
mode ``"a"`` on a file that is not an archive put the archive after the file's bytes and make
its offsets count from the file's start. Those leading bytes belong to the user. The store
finds where its own records begin (:func:`leading_bytes`), never writes below that offset,
never marks or drops anything there, and compaction copies them as they are.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..._posix import FileMapping
from . import ziprecords as zf

__all__ = ["leading_bytes"]

_SIGNATURES = (struct.pack("<I", zf.LFH_SIG), struct.pack("<I", zf.DEAD_LFH_SIG))
# What this store's archives start with: a local record, a dead one, or (an archive whose
# first entry an interrupted commit was writing) the directory records of the empty archive.
_OWN_STARTS = (*_SIGNATURES, b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06")


def leading_bytes(fm: FileMapping, first_listed: int, cd_offset: int, path: str) -> int:
    """How many bytes at the start of the file are not the archive's own.

    The archive's own bytes start with a run of complete local records (listed, or dead
    copies this store marked) that leads to the first listed entry; with no entry listed, to
    the central directory. 0 when that run starts at the file's start (every archive this
    store writes). Otherwise the lowest offset from which such a run leads there; failing
    any, the first listed entry's offset (or the directory's): everything before it is kept.
    An archive with no entry that starts as this store's archives do holds an interrupted
    commit's leftovers before its directory, not leading bytes: 0.
    """
    target = first_listed if first_listed >= 0 else cd_offset
    pos = 0
    while pos < target:
        rec = zf.read_local_record(fm.read, pos, target, path)
        if rec is None:
            break
        pos = rec.data_offset + rec.csize
    if pos == target or (first_listed < 0 and fm.read(0, 4) in _OWN_STARTS):
        return 0
    return _run_start(fm, target, path)


def _run_start(fm: FileMapping, target: int, path: str) -> int:
    """The lowest offset from which complete local records lead to ``target`` (else
    ``target``).

    Candidates are the offsets of a record signature, visited from the highest down: every
    record of a run is such a candidate, so the record after a candidate's is already known
    to lead to ``target`` or not, and each candidate costs one header read.
    """
    leads = {target}
    lowest = target
    for pos in _signatures_below(fm, target):
        rec = zf.read_local_record(fm.read, pos, target, path)
        if rec is not None and rec.data_offset + rec.csize in leads:
            leads.add(pos)
            lowest = pos
    return lowest


def _signatures_below(fm: FileMapping, end: int) -> Iterator[int]:
    """Offsets below ``end`` where a local record's signature starts, highest first."""
    width = len(_SIGNATURES[0])
    found = {sig: fm.rfind(sig, 0, end + width - 1) for sig in _SIGNATURES}
    while True:
        sig = max(found, key=lambda s: found[s])
        pos = found[sig]
        if pos < 0:
            return
        yield pos
        found[sig] = fm.rfind(sig, 0, pos + width - 1)
