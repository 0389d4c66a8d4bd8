"""Benchmarks of ZarrDaf read over HTTP from a server on 127.0.0.1.

Run from the project root::

    python -m benchmarks.bench_http [--quick] [--only read]

The server is a child process (a threaded ``http.server`` with ``Range`` and keep-alive), so
the client's threads do not share its interpreter lock. The data: one float64 vector of 64 MiB
(quick: 16 MiB), fetched as 4 MiB ``Range`` stripes, and 100 small vectors (8 KiB each), one
GET each.

Peers (alternating within each round, same server, same data):

* **ZarrDaf**: ``open_daf(url)`` then ``get_np_vector`` (obstore's client, checked answers).
* **urllib3**: the same GETs sent by a bare ``urllib3.PoolManager`` (4 threads for the stripes,
  as dafzarr's former client did), with no checks: the transport alone.

Speed is never asserted: the script prints figures and ratios.
"""

from __future__ import annotations

import functools
import http.server
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import dafzarr

from . import common as c

urllib3: Any
try:
    import urllib3
except ImportError:  # pragma: no cover - installed alongside most HTTP stacks
    urllib3 = None

STRIPE = 4 << 20
SMALL = 100
SMALL_N = 1024


def big_n() -> int:
    return (2 << 20) if c.quick() else (8 << 20)


class _Ranged(http.server.SimpleHTTPRequestHandler):
    """Files with single ``Range: bytes=a-b`` requests and HTTP/1.1 keep-alive."""

    protocol_version = "HTTP/1.1"
    #: Seconds each answer waits before it starts (a remote server's latency).
    delay = 0.0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in separate writes: without this, each answer waits for
        # the client's delayed ACK (40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_HEAD(self) -> None:
        time.sleep(self.delay)
        super().do_HEAD()

    def do_GET(self) -> None:
        time.sleep(self.delay)
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return
        size = os.path.getsize(path)
        header = self.headers.get("Range")
        if header is None:
            start, stop, status = 0, size, 200
        else:
            first, _, last = header.removeprefix("bytes=").partition("-")
            start, stop, status = int(first), min(int(last) + 1, size), 206
        with open(path, "rb") as f:  # only the bytes asked for
            data = os.pread(f.fileno(), stop - start, start)
        self.send_response(status)
        self.send_header("Content-Length", str(stop - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.end_headers()
        self.wfile.write(data)


def serve(directory: str, delay: float = 0.0) -> None:
    """The child process: serve ``directory`` (each answer ``delay`` seconds late) and print
    the port."""
    handler = type("Delayed", (_Ranged,), {"delay": delay})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=directory)
    )
    print(server.server_address[1], flush=True)
    server.serve_forever()


class Read(c.TempDirSuite):
    """Reads of a served data set (a fresh open per sample)."""

    label = "read over HTTP"
    baseline = ("urllib3",)

    def setup(self) -> None:
        self._mktemp()
        rng = np.random.default_rng(0)
        self.big = rng.random(big_n())
        self.small = [rng.random(SMALL_N) for _ in range(SMALL)]
        d = dafzarr.open_daf(self.p("x.daf.zarr"), "w", zarr_format=3)
        d.add_axis("cell", [f"c{i}" for i in range(big_n())])
        d.add_axis("gene", [f"g{i}" for i in range(SMALL_N)])
        d.set_vector("cell", "v", self.big)
        for i, values in enumerate(self.small):
            d.set_vector("gene", f"s{i}", values)
        d.close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_http", "--serve", self.dir],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{port}/x.daf.zarr"
        self.pool = urllib3.PoolManager(maxsize=8) if urllib3 is not None else None
        if not np.array_equal(self.read_big_daf(), self.big):
            raise RuntimeError("the big vector does not round-trip over HTTP")
        if not np.array_equal(self.read_big_urllib3(), self.big):
            raise RuntimeError("the urllib3 peer reads other bytes")

    def teardown(self) -> None:
        self.proc.kill()
        self.proc.wait()
        super().teardown()

    # --- the work ----------------------------------------------------------------------------

    def read_big_daf(self) -> Any:
        return dafzarr.open_daf(self.url).get_np_vector("cell", "v")

    def read_big_urllib3(self) -> Any:
        nbytes = self.big.nbytes
        out = np.empty(nbytes, np.uint8)
        key = f"{self.url}/vectors/cell/v/c/0"

        def one(a: int) -> None:
            b = min(a + STRIPE, nbytes)
            r = self.pool.request("GET", key, headers={"Range": f"bytes={a}-{b - 1}"})
            out[a:b] = np.frombuffer(r.data, np.uint8)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, range(0, nbytes, STRIPE)))
        return out.view(np.float64)

    @c.bench(
        "read 1 vector (4 MiB ranges)",
        "ZarrDaf",
        c.MB,
        lambda s: s.big.nbytes,
        size=lambda s: c.human_bytes(s.big.nbytes),
    )
    def time_big_daf(self) -> None:
        self.read_big_daf()

    @c.bench(
        "read 1 vector (4 MiB ranges)",
        "urllib3",
        c.MB,
        lambda s: s.big.nbytes,
        size=lambda s: c.human_bytes(s.big.nbytes),
    )
    def time_big_urllib3(self) -> None:
        self.read_big_urllib3()

    @c.bench(
        "read 100 small vectors (1 GET each)",
        "ZarrDaf",
        c.ENTRIES,
        lambda s: SMALL,
        size=lambda s: f"{SMALL} x {c.human_bytes(SMALL_N * 8)}",
    )
    def time_small_daf(self) -> None:
        d = dafzarr.open_daf(self.url)
        for i in range(SMALL):
            d.get_np_vector("gene", f"s{i}")

    @c.bench(
        "read 100 small vectors (1 GET each)",
        "urllib3",
        c.ENTRIES,
        lambda s: SMALL,
        size=lambda s: f"{SMALL} x {c.human_bytes(SMALL_N * 8)}",
    )
    def time_small_urllib3(self) -> None:
        self.pool.request("GET", f"{self.url}/zarr.json")
        for i in range(SMALL):
            self.pool.request("GET", f"{self.url}/vectors/gene/s{i}/c/0")


SUITES: dict[str, list[type]] = {"read": [Read]}


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--serve"]:
        serve(argv[1], float(argv[2]) if len(argv) > 2 else 0.0)
        return 0
    ap = c.argument_parser("python -m benchmarks.bench_http", __doc__, SUITES)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    if urllib3 is None:
        ap.error("the urllib3 peer is missing: pip install urllib3")
    rounds = args.rounds or 5
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    c.report(
        "ZarrDaf over HTTP",
        [
            f"* dafzarr {dafzarr.__version__} from {os.path.dirname(dafzarr.__file__)}",
            *clock.lines(rounds),
        ],
        results,
        (
            "Rates use MB = 10^6 bytes; small reads in entries (vectors) per second, with the "
            "open (one metadata GET) included. ratio = how many times faster than urllib3."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
