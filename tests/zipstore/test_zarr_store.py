"""zarr-python's own store test-suite, and zarr round trips through MmapZipStore."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.core.buffer import Buffer, cpu, default_buffer_prototype
from zarr.testing.store import StoreTests

from dafzarr import AppendOnlyError, ArchiveLockedError, MmapZipStore
from tests.helpers.common import check_zip_tools_accept


class TestMmapZipStore(StoreTests[MmapZipStore, cpu.Buffer]):
    store_cls = MmapZipStore
    buffer_cls = cpu.Buffer

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        path = tmp_path / "store.zip"
        # Create the archive up front, so that read-only opens of the same kwargs find it
        # (the harness opens `read_only=True` with the writer's kwargs).
        MmapZipStore(path, "w+").close()
        return {"path": str(path), "mode": "w+"}

    async def set(self, store: MmapZipStore, key: str, value: Buffer) -> None:
        # Bypasses the Store API: the mapping-style append.
        store[key] = value.as_numpy_array()

    async def get(self, store: MmapZipStore, key: str) -> Buffer:
        return self.buffer_cls.from_bytes(bytes(store[key]))

    @pytest.fixture
    async def store_not_open(self, store_kwargs: dict[str, Any]) -> MmapZipStore:
        # The constructor opens the archive; a closed store reopens at its next use.
        store = self.store_cls(**store_kwargs)
        assert store._is_open
        store.close()
        return store

    def test_store_eq(self, store: MmapZipStore, store_kwargs: dict[str, Any]) -> None:
        # The harness's version builds a second writer on the open archive; the constructor
        # takes the writer's lock, so that one is refused at once. Equal stores come from
        # with_read_only (opened at first use) and from pickling.
        assert store == store  # noqa: PLR0124 - the harness checks self-equality too
        with pytest.raises(ArchiveLockedError, match="one writer at a time"):
            self.store_cls(**store_kwargs)
        twin = store.with_read_only(read_only=False)
        assert twin == store and not twin._is_open
        assert self.store_cls(**{**store_kwargs, "read_only": True}) != store

    def test_store_repr(self, store: MmapZipStore) -> None:
        assert repr(store) == f"MmapZipStore({store.path!r}, mode='w+')"
        assert str(store) == f"zip://{store.path}"

    def test_store_supports_writes(self, store: MmapZipStore) -> None:
        assert store.supports_writes

    def test_store_supports_listing(self, store: MmapZipStore) -> None:
        assert store.supports_listing

    def test_store_supports_deletes(self, store: MmapZipStore) -> None:
        assert store.supports_deletes

    async def test_with_read_only_store_append_only(self, open_kwargs: dict[str, Any]) -> None:
        # The harness's test of with_read_only, on a write-once store: the delete of an
        # existing key is refused, and the handles made by with_read_only stay write-once.
        store = await self.store_cls.open(**{**open_kwargs, "read_only": True, "append_only": True})
        writer = store.with_read_only(read_only=False)
        assert writer.append_only and not writer.supports_deletes
        assert not writer._is_open and not writer.read_only
        await writer.set("foo", self.buffer_cls.from_bytes(b"bar"))
        with pytest.raises(AppendOnlyError, match="foo"):
            await writer.delete("foo")
        await writer.delete("absent")  # zarr deletes fill-value chunks that never existed
        reader = writer.with_read_only(read_only=True)
        assert reader.read_only
        observed = await reader.get("foo", default_buffer_prototype())
        assert observed is not None and observed.to_bytes() == b"bar"
        del observed  # a zero-copy view: the mapping cannot close under it
        with pytest.raises(ValueError, match="read-only"):
            await reader.set("foo", self.buffer_cls.from_bytes(b"x"))
        with pytest.raises(ValueError, match="read-only"):
            await reader.delete("foo")
        writer.close()
        reader.close()
        store.close()

    async def test_get_returns_zero_copy_view(self, store: MmapZipStore) -> None:
        await store.set("c/0", self.buffer_cls.from_bytes(b"\x01" * 4096))
        buf = await store.get("c/0", default_buffer_prototype())
        assert buf is not None
        array = buf.as_numpy_array()
        assert not array.flags.owndata and not array.flags.writeable
        assert store._handle.fm is not None
        address = array.__array_interface__["data"][0]
        assert (
            store._handle.fm.address <= address < store._handle.fm.address + store._handle.fm.size
        )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_group_round_trip(tmp_path: Path, zarr_format: int) -> None:
    p = tmp_path / f"g{zarr_format}.zip"
    data = np.random.default_rng(0).normal(size=(300, 200))
    with MmapZipStore(p, "w") as store:
        g = zarr.open_group(
            store=store, mode="w", zarr_format=zarr_format, attributes={"title": "t"}
        )
        a = g.create_array(
            "x/y/a", shape=data.shape, chunks=(100, 100), dtype="f8", compressors=None
        )
        a[:] = data
        b = g.create_array("b", shape=(1000,), chunks=(100,), dtype="i4")  # default codecs
        b[:] = np.arange(1000)
        z = g.create_array("zeros", shape=(10,), chunks=(5,), dtype="i4")
        z[:] = 0  # fill-value chunks: zarr skips (and deletes) them
    with MmapZipStore(p) as store:
        g = zarr.open_group(store=store, mode="r")
        assert g.attrs["title"] == "t"
        np.testing.assert_array_equal(g["x/y/a"][:], data)
        np.testing.assert_array_equal(g["b"][:], np.arange(1000))
        np.testing.assert_array_equal(g["zeros"][:], 0)
    # The peer and the standard library read the same archive.
    peer = zarr.open_group(store=zarr.storage.ZipStore(p, mode="r"), mode="r")
    np.testing.assert_array_equal(peer["x/y/a"][:], data)
    check_zip_tools_accept(p)
    with zipfile.ZipFile(p) as zf:
        assert len(zf.namelist()) == len(set(zf.namelist()))  # no duplicate entries


def test_zarr_attribute_rewrite_is_refused_when_append_only(tmp_path: Path) -> None:
    p = tmp_path / "attrs.zip"
    with MmapZipStore(p, "w", append_only=True) as store:
        g = zarr.open_group(store=store, mode="w", zarr_format=2)
        g.create_array("a", shape=(4,), dtype="i4")
        with pytest.raises(AppendOnlyError, match=r"\.zattrs"):
            g.attrs["changed"] = 1
        zarr.consolidate_metadata(store)  # writes .zmetadata; rewrites identical .zgroup
    with MmapZipStore(p) as store:
        g = zarr.open_consolidated(store=store, mode="r", zarr_format=2)
        assert list(g.array_keys()) == ["a"]


def test_open_with_zarr_mode_r_on_writable_store(tmp_path: Path) -> None:
    p = tmp_path / "w.zip"
    with MmapZipStore(p, "w") as store:
        g = zarr.open_group(store=store, mode="w", zarr_format=3)
        g.create_array("a", shape=(3,), dtype="u1")[:] = [1, 2, 3]
        # mode="r" on a writable store goes through with_read_only().
        ro = zarr.open_group(store=store, mode="r")
        np.testing.assert_array_equal(ro["a"][:], [1, 2, 3])
