"""``copy_all`` between ZarrDafs creates each axis from the chunk that stores its entries:
the chunk is checked as ``add_axis`` checks entries (valid UTF-8, the axis' count, no entry
twice) and written as it is, with no ``str`` made of each entry; a damaged one is refused
and leaves a ZIP destination as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr._core.daf.layout import encode_strings
from dafzarr.daf.ops import copy_all
from dafzarr.errors import DafFormatError

from .test_daf_copies import open_kind

NAMES = ["", "c1", "été", "細胞", "c4"]


def _source(tmp_path: Path, kind: str) -> dafzarr.ZarrDaf:
    s = open_kind(kind, tmp_path, "source!")
    s.add_axis("cell", NAMES)
    s.add_axis("gene", [f"g{i}" for i in range(3000)])
    s.set_vector("cell", "age", np.arange(5.0))
    return s


@pytest.mark.parametrize("source_kind", ["directory", "zip"])
@pytest.mark.parametrize("kind", ["memory", "directory", "zip"])
def test_axes_are_copied_as_their_stored_chunks(
    tmp_path: Path, source_kind: str, kind: str
) -> None:
    _source(tmp_path, source_kind).close()
    with dafzarr.open_daf(
        tmp_path / f"source.daf.zarr{'.zip' if source_kind == 'zip' else ''}", "r"
    ) as src:
        d = open_kind(kind, tmp_path, "destination!")
        copy_all(source=src, destination=d)
        assert src._axis_cache == {}  # no entry was decoded
        assert d.axis_np_entries("cell").tolist() == NAMES
        assert d.axis_np_entries("gene").tolist() == [f"g{i}" for i in range(3000)]
        assert d.axis_dict("gene")["g2999"] == 2999
        np.testing.assert_array_equal(d.get_np_vector("cell", "age"), np.arange(5.0))
        d.close()


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        (encode_strings(["a", "b", "c", "b", "e"]), "non-unique entries for new axis: cell"),
        (encode_strings(["a", "b", "c", "d"]), "vlen-utf8 chunk"),
        (encode_strings(["a", "b", "c", "d", "e"])[:-1] + b"\xff", "corrupt vlen-utf8 chunk"),
        (encode_strings(["a", "b", "c", "d", "e"])[:-2], "corrupt vlen-utf8 chunk"),
    ],
    ids=["repeated", "count", "utf-8", "cut"],
)
def test_a_damaged_axis_chunk_is_refused(tmp_path: Path, chunk: bytes, message: str) -> None:
    folder = tmp_path / "source.daf.zarr"
    _source(tmp_path, "directory").close()
    with dafzarr.open_daf(folder, "r") as src:
        key = src._array_info("axes/cell").chunk_key
    (folder / key).write_bytes(chunk)
    with dafzarr.open_daf(folder, "r") as src, \
            dafzarr.open_daf(tmp_path / "d.daf.zarr.zip", "w") as dst:  # fmt: skip
        dst.set_scalar("kept", 1)
        with pytest.raises(DafFormatError, match=message):
            copy_all(source=src, destination=dst)
        assert dst.axes_set() == set() and dst.scalars_set() == {"kept"}
