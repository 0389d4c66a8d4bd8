"""CF time coordinates whose units differ only in their epoch, re-expressed in one unit.

Daily files of instrument archives (ARM and many others) count "seconds since <that day>":
each file's time values start near 0, so the files neither order nor concatenate by their
raw values. :func:`rebase_time_coordinates` re-expresses every file's values of such a
coordinate in the units of the file with the earliest epoch, exactly (or refuses), so that
placement and composing see one time axis; the composed coordinate is then written inline
with those units. Times are shown as dates in messages by :func:`describe_time`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import IncompatibleSourcesError
from .model import ScanResult

__all__ = ["describe_time", "effective_units", "rebase_time_coordinates"]

_SINCE = re.compile(r"^\s*([A-Za-z_]+)\s+since\s+(\S.*?)\s*$")
_DEFAULT_CALENDAR = "standard"


def _cftime() -> Any:
    """cftime (netCDF4's and xarray's calendar arithmetic), imported when first needed."""
    return importlib.import_module("cftime")


def effective_units(scan: ScanResult, name: str) -> tuple[str | None, str]:
    """``(units, calendar)`` of a coordinate as composed (rebased units if it was rebased)."""
    v = scan.variables.get(name)
    attrs = v.attrs if v is not None else {}
    units = scan.rebased.get(name, attrs.get("units"))
    calendar = attrs.get("calendar", _DEFAULT_CALENDAR)
    return (units if isinstance(units, str) else None), str(calendar)


def describe_time(value: Any, units: str | None, calendar: str) -> str:
    """A coordinate value as a plain number, with its date when ``units`` are CF time units."""
    number = value.item() if isinstance(value, np.generic) else value
    if units is None or not _SINCE.match(units):
        return f"{number}"
    try:
        date = _cftime().num2date(number, units, calendar)
    except (ImportError, ValueError, TypeError, OverflowError):
        return f"{number} ({units})"
    return f"{date.isoformat(sep=' ')} ({number} {units})"


def _epoch_offset(units: str, ref: str, calendar: str) -> Any:
    """The epoch of ``units`` expressed as a number in ``ref`` (same unit word, same calendar)."""
    cftime = _cftime()
    epoch = cftime.num2date(0, units, calendar)
    return cftime.date2num(epoch, ref, calendar)


def _rebased(
    values: npt.NDArray[Any], offset: Any, where: str
) -> npt.NDArray[Any]:  # fmt: skip
    """``values + offset`` in the values' own dtype, or refused when not exact."""
    dtype = values.dtype
    if dtype.kind in "iu":
        off = float(offset)
        if off != round(off):
            raise IncompatibleSourcesError(
                f"{where}: its epoch is {off} units from the first file's, not a whole number "
                f"of units, which integer times ({dtype}) cannot hold"
            )
        wide = values.astype(np.int64) + round(off)
        info = np.iinfo(dtype)
        if wide.size and (wide.min() < info.min or wide.max() > info.max):
            raise IncompatibleSourcesError(
                f"{where}: its times re-expressed from the first file's epoch overflow {dtype}"
            )
        return wide.astype(dtype)
    out = (values.astype(np.float64) + float(offset)).astype(dtype)
    if not np.array_equal(out.astype(np.float64) - float(offset), values.astype(np.float64)):
        raise IncompatibleSourcesError(
            f"{where}: its times re-expressed from the first file's epoch lose precision in {dtype}"
        )
    return out


def rebase_time_coordinates(scans: Sequence[ScanResult]) -> None:
    """Re-express coordinates whose CF time units differ only in their epoch (in place).

    For each coordinate (1-D, named after its dimension, values read by the scan) whose
    ``units`` are ``"<unit> since <epoch>"`` in every file, with one unit word and one
    calendar but several epochs, every file's values become values in the units of the
    file with the earliest epoch, recorded in :attr:`ScanResult.rebased`. Anything else is
    left as it is (composing then refuses differing units). Calling it again changes nothing.
    """
    if len(scans) < 2:
        return
    names = set.intersection(*(set(s.coords) for s in scans))
    for name in sorted(names):
        if any(name in s.rebased for s in scans):
            continue  # rebased already
        found = []
        for s in scans:
            v = s.variables.get(name)
            units = v.attrs.get("units") if v is not None else None
            match = _SINCE.match(units) if isinstance(units, str) else None
            if v is None or match is None:
                break
            calendar = str(v.attrs.get("calendar", _DEFAULT_CALENDAR))
            found.append((s, str(units), match.group(1).lower(), calendar))
        else:
            if len({u for _, u, _, _ in found}) < 2:
                continue  # one unit: nothing to do
            if len({w for _, _, w, _ in found}) > 1 or len({c for _, _, _, c in found}) > 1:
                continue  # another unit or calendar: composing refuses, naming both
            _rebase_one(name, found)


def _rebase_one(name: str, found: list[tuple[ScanResult, str, str, str]]) -> None:
    """Rebase coordinate ``name`` of every file onto the earliest epoch among them."""
    calendar = found[0][3]
    try:
        epochs = [_cftime().num2date(0, u, calendar) for _, u, _, _ in found]
    except (ImportError, ValueError, TypeError) as exc:
        raise IncompatibleSourcesError(
            f"coordinate {name!r}: units {found[0][1]!r} and others differ in their epoch, and "
            f"the epochs cannot be compared ({exc})"
        ) from exc
    ref = found[min(range(len(found)), key=lambda i: epochs[i])][1]
    new = {}
    for s, units, _, _ in found:
        where = f"{s.path}: coordinate {name!r} ({units!r})"
        offset = _epoch_offset(units, ref, calendar) if units != ref else 0
        new[id(s)] = _rebased(s.coords[name], offset, where)
    for s, _, _, _ in found:  # all or nothing
        s.coords[name] = new[id(s)]
        s.rebased[name] = ref
