"""Import each named module first in its own process: ``python import_alone.py [--bare]
MODULE...``.

An import that works only after another module of the package was imported (an
order-dependent cycle) fails here. Each module is imported in a child forked from this
interpreter, which has loaded the package's third-party dependencies (numpy, zarr, ...)
but nothing of ``dafzarr``: the children start as a fresh interpreter would as far as the
package is concerned, without each paying a second for numpy, scipy and zarr again.

With ``--bare``, the packages above each module are set up without running their
``__init__`` (``dafzarr``'s imports every subpackage in its own order, which would hide an
order-dependent cycle inside one): only the module and what it imports are loaded.

Prints a JSON object: each module that failed, with what its import printed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import traceback
import types

#: Loaded before forking: what the package imports from outside (those installed).
DEPENDENCIES = (
    "numpy",
    "scipy.sparse",
    "zarr",
    "zarr.storage",
    "numcodecs",
    "fsspec",
    "tqdm",
    "lz4.frame",
    "zstandard",
    "msgpack",
    "yaml",
    "obstore",
)


def _bare_parents(module: str, root: str) -> None:
    """Register the packages above ``module`` as empty packages of their folders."""
    parts = module.split(".")
    for i in range(1, len(parts)):
        package = types.ModuleType(".".join(parts[:i]))
        package.__path__ = [os.path.join(root, *parts[:i])]
        sys.modules[package.__name__] = package


def _child(module: str, out: int, bare: bool) -> None:
    os.dup2(out, 1)
    os.dup2(out, 2)
    try:
        if bare:
            _bare_parents(module, os.getcwd())
        importlib.import_module(module)
    except BaseException:  # noqa: BLE001 (reported to the parent)
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)


def main(modules: list[str], bare: bool = False) -> dict[str, str]:
    for name in DEPENDENCIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m == "dafzarr" or m.startswith("dafzarr."))
    assert not loaded, f"a dependency imported the package under test: {loaded}"
    failed: dict[str, str] = {}
    running: dict[int, tuple[str, tempfile._TemporaryFileWrapper[bytes]]] = {}
    todo = list(modules)
    most = max(1, os.cpu_count() or 1)
    while todo or running:
        while todo and len(running) < most:
            module = todo.pop(0)
            out = tempfile.NamedTemporaryFile()  # noqa: SIM115 (closed when reaped)
            pid = os.fork()
            if pid == 0:
                _child(module, out.fileno(), bare)
            running[pid] = (module, out)
        pid, status = os.wait()
        module, out = running.pop(pid)
        with out:
            if os.waitstatus_to_exitcode(status) != 0:
                out.seek(0)
                failed[module] = out.read().decode(errors="replace") or f"status {status}"
    return failed


if __name__ == "__main__":
    args = sys.argv[1:]
    bare = args[:1] == ["--bare"]
    print(json.dumps(main(args[1:] if bare else args, bare)))
