"""A path or URL as a byte source: local files, ``http(s)://`` and ``s3://`` objects.

Remote objects are read through obstore (:class:`~._object.ObjectSource`). Credentials and
endpoints come the way fsspec users already give them, as ``storage_options`` with s3fs's
names, or as an obstore store the caller made (then the URL's path is the key in it).
Options this module does not understand are refused, never ignored: a credential dropped
silently would read another bucket's object or fail far from the cause.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ...errors import InvalidArgumentError
from .local import FileSource
from .object import ObjectSource, http_store
from .options import HttpOptions
from .source import ByteSource

__all__ = ["is_remote", "open_source", "s3_store"]

# s3fs's names (top level and in ``client_kwargs``) -> obstore's S3 configuration keys.
_S3_NAMES = {
    "key": "access_key_id",
    "secret": "secret_access_key",
    "token": "session_token",
    "endpoint_url": "endpoint",
    "region_name": "region",
}
_HTTP_NAMES = ("headers",)


def is_remote(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a URL other than ``file://``: :func:`open_source` reads it over
    the network, or refuses a scheme it does not know."""
    scheme, sep, _ = str(os.fspath(path)).partition("://")
    return bool(sep) and scheme.lower() != "file"


def _refuse(url: str, unknown: set[str], known: tuple[str, ...]) -> None:
    if unknown:
        raise InvalidArgumentError(
            f"storage_options for {url}: {', '.join(sorted(unknown))} not understood "
            f"(understood: {', '.join(sorted(known))})"
        )


def _s3_config(url: str, storage_options: Mapping[str, Any]) -> dict[str, Any]:
    """obstore's S3 configuration for s3fs-style ``storage_options``."""
    opts = dict(storage_options)
    client = dict(opts.pop("client_kwargs", None) or {})
    config: dict[str, Any] = {}
    if opts.pop("anon", False):
        config["skip_signature"] = True
    for source in (opts, client):
        for name in list(source):
            if name in _S3_NAMES:
                value = source.pop(name)
                if value is not None:
                    config[_S3_NAMES[name]] = str(value)
    _refuse(
        url,
        set(opts) | {f"client_kwargs.{k}" for k in client},
        ("anon", "client_kwargs", *_S3_NAMES),
    )
    return config


@functools.lru_cache(maxsize=32)
def _cached_s3_store(bucket: str, config_json: str, options: HttpOptions) -> Any:
    from obstore.store import S3Store

    config = json.loads(config_json)
    client_options = options.client_options()
    endpoint = config.get("endpoint", "")
    return S3Store(
        bucket,
        config=config,
        client_options=client_options,  # type: ignore[arg-type]
        retry_config=options.retry_config(),  # type: ignore[arg-type]
        # A custom endpoint (MinIO, Ceph, moto) rarely resolves bucket subdomains.
        virtual_hosted_style_request=False if endpoint else None,
    )


def s3_store(url: str, storage_options: Mapping[str, Any] | None, options: HttpOptions) -> Any:
    """The shared obstore S3 store for the bucket of ``url`` (one connection pool per bucket
    and set of options)."""
    bucket = urlsplit(url).netloc
    if not bucket:
        raise InvalidArgumentError(f"no bucket in {url!r} (expected s3://bucket/key)")
    config = _s3_config(url, storage_options or {})
    return _cached_s3_store(bucket, json.dumps(config, sort_keys=True), options)


def open_source(
    path: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
    options: HttpOptions | None = None,
) -> ByteSource:
    """The object at ``path`` as a byte source.

    ``path`` is a local path or ``file://`` URL, an ``http(s)://`` URL or an ``s3://bucket/key``
    URL. ``storage_options`` (s3fs's names: ``key``, ``secret``, ``token``, ``anon``,
    ``endpoint_url``, ``client_kwargs={"endpoint_url", "region_name"}``; for HTTP,
    ``headers``) or an obstore ``store`` (``path`` is then the key in it, or a URL whose path
    is) say how to reach it; ``options`` how patient and trusting the reads are.
    """
    text = os.fspath(path)
    opts = options or HttpOptions()
    if store is not None:
        if storage_options:
            raise InvalidArgumentError(
                f"{text}: give storage_options or an obstore store, not both"
            )
        key = unquote(urlsplit(text).path).lstrip("/") if "://" in text else text.lstrip("/")
        return ObjectSource(store, key, options=opts, where=text)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("", "file"):
        if storage_options:
            raise InvalidArgumentError(f"{text}: storage_options apply to remote URLs only")
        local = unquote(urlsplit(text).path) if scheme == "file" else text
        return FileSource(local)
    if scheme in ("http", "https"):
        so = dict(storage_options or {})
        headers = so.pop("headers", None)
        _refuse(text, set(so), _HTTP_NAMES)
        base, _, name = text.rpartition("/")
        if not name:
            raise InvalidArgumentError(f"{text}: the URL names no object")
        if headers:
            from obstore.store import HTTPStore

            client = {**opts.client_options(), "default_headers": dict(headers)}
            http = HTTPStore.from_url(
                base,
                client_options=client,  # type: ignore[arg-type]
                retry_config=opts.retry_config(),  # type: ignore[arg-type]
            )
        else:
            http = http_store(base, opts)
        return ObjectSource(http, unquote(name), options=opts, where=text)
    if scheme == "s3":
        key = unquote(urlsplit(text).path).lstrip("/")
        if not key:
            raise InvalidArgumentError(f"{text}: the URL names no object (s3://bucket/key)")
        return ObjectSource(s3_store(text, storage_options, opts), key, options=opts, where=text)
    raise InvalidArgumentError(
        f"{text}: the scheme {scheme!r} is not supported (local paths, file://, http://, "
        "https:// and s3:// are)"
    )
