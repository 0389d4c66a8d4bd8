"""Publishing into Icechunk repositories on a real S3-compatible server (moto's server mode
on 127.0.0.1): the repository's storage in a bucket, and references whose files are objects
in a bucket read through an S3 virtual chunk container with the server's endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dafzarr import refs
from dafzarr.errors import InvalidArgumentError
from tests.helpers._moto_s3 import S3Server, moto_s3

from .test_refs_publish import _open, _same, _series

icechunk = pytest.importorskip("icechunk")

_KEYS = {"access_key_id": "testing", "secret_access_key": "testing"}


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


def _storage(s3: S3Server, bucket: str) -> Any:
    """The repository's storage: a prefix of ``bucket`` on the test server."""
    return icechunk.s3_storage(
        bucket=bucket,
        prefix="repo",
        region="us-east-1",
        endpoint_url=s3.endpoint,
        allow_http=True,
        force_path_style=True,
        **_KEYS,
    )


def _s3_container(s3: S3Server, prefix: str) -> Any:
    return icechunk.VirtualChunkContainer(
        prefix,
        icechunk.s3_store(
            region="us-east-1",
            endpoint_url=s3.endpoint,
            allow_http=True,
            s3_compatible=True,
            force_path_style=True,
        ),
    )


def test_a_repository_stored_on_s3(s3: S3Server, tmp_path: Path) -> None:
    """Local files referenced, the repository in a bucket: published, committed, opened
    again from the bucket and read back with xarray equal to the files (NaN for NaN)."""
    files = _series(tmp_path / "files", 3)
    store = tmp_path / "series.parq"
    refs.virtualize(files, store, progress=False)
    prefix = (tmp_path / "files").as_uri() + "/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(
            prefix, icechunk.local_filesystem_store(str(tmp_path / "files"))
        )
    )
    bucket = s3.new_bucket()
    repo = icechunk.Repository.create(_storage(s3, bucket), config)
    session = repo.writable_session("main")
    assert refs.to_icechunk(store, session.store) == 3 * 2 + 3
    snapshot = session.commit("on s3")
    again = icechunk.Repository.open(
        _storage(s3, bucket), authorize_virtual_chunk_access={prefix: None}
    )
    reader = again.readonly_session("main")
    assert reader.snapshot_id == snapshot
    _same(_open(reader), files)


def test_references_to_objects_on_s3(s3: S3Server, tmp_path: Path) -> None:
    """The files uploaded to a bucket, references naming their ``s3://`` URLs (scanned from
    the local copies), a container for the bucket with the server's endpoint: refused without
    the container, then published into a repository on the same server and read back
    through Icechunk from the objects."""
    from obstore.store import S3Store

    files = _series(tmp_path / "files", 3)
    bucket = s3.new_bucket()
    objects = S3Store(
        bucket,
        endpoint=s3.endpoint,
        region="us-east-1",
        client_options={"allow_http": True},
        virtual_hosted_style_request=False,
        **_KEYS,
    )
    for f in files:
        objects.put(f"data/{Path(f).name}", Path(f).read_bytes())
    urls = [f"s3://{bucket}/data/{Path(f).name}" for f in files]
    store = tmp_path / "series.parq"
    refs.virtualize(refs.mosaic_sources(files, urls), store, progress=False, inline_threshold=0)
    prefix = f"s3://{bucket}/"
    config = icechunk.RepositoryConfig.default()
    repo = icechunk.Repository.create(_storage(s3, bucket), config)
    session = repo.writable_session("main")
    with pytest.raises(
        InvalidArgumentError,
        match=rf"covers {prefix}data/day0.nc and 2 other "
        rf"locations .*icechunk.s3_store",
    ):
        refs.to_icechunk(store, session.store)
    assert not session.has_uncommitted_changes
    config.set_virtual_chunk_container(_s3_container(s3, prefix))
    repo = icechunk.Repository.open(_storage(s3, bucket), config=config)
    repo.save_config()
    session = repo.writable_session("main")
    # sst: 2 chunks a day, anom: 1; lat and lon from the first file
    assert refs.to_icechunk(store, session.store) == 3 * 3 + 2
    session.commit("objects on s3")
    assert sorted(set(session.all_virtual_chunk_locations())) == urls
    creds = icechunk.containers_credentials({prefix: icechunk.s3_credentials(**_KEYS)})
    reader = icechunk.Repository.open(_storage(s3, bucket), authorize_virtual_chunk_access=creds)
    got = _open(reader.readonly_session("main"))
    _same(got, files)
    assert np.isnan(got["sst"].values).sum() == 3 * 6
