"""A real S3-compatible server on 127.0.0.1 (moto's server mode) for the ArrayFile, I/O and
Icechunk publishing tests."""

from __future__ import annotations

import logging
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


class RequestLog(logging.Handler):
    """Collects the server's access-log lines ("GET /bucket/key HTTP/1.1" ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            self.lines.append(record.getMessage())

    def take(self) -> list[str]:
        with self._lock:
            out, self.lines = self.lines, []
        return out


class S3Server:
    def __init__(self, port: int, log: RequestLog) -> None:
        self.endpoint = f"http://127.0.0.1:{port}"
        self.log = log

    def new_bucket(self) -> str:
        """A fresh bucket's name."""
        bucket = f"af-{uuid.uuid4().hex[:12]}"
        req = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        with urllib.request.urlopen(req) as resp:
            resp.read()
        return bucket

    def new_store(self) -> Any:
        """A fresh bucket, as an obstore S3Store."""
        from obstore.store import S3Store

        bucket = self.new_bucket()
        return S3Store(
            bucket,
            endpoint=self.endpoint,
            access_key_id="testing",
            secret_access_key="testing",
            region="us-east-1",
            client_options={"allow_http": True},
            virtual_hosted_style_request=False,
        )


@contextmanager
def moto_s3() -> Iterator[S3Server]:
    server_mod = pytest.importorskip("moto.server")
    pytest.importorskip("obstore")
    log = RequestLog()
    wlog = logging.getLogger("werkzeug")
    wlog.addHandler(log)
    wlog.propagate = False
    wlog.setLevel(logging.INFO)
    srv = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    try:
        yield S3Server(srv._server.server_port, log)
    finally:
        srv.stop()
        wlog.removeHandler(log)
        wlog.propagate = True
