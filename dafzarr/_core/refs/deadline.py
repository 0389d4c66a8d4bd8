"""Scans run in reused helper processes, each killed when its file's deadline passes.

A hostile or damaged HDF5 file can make the HDF5 library loop for ever inside one call while
it holds the GIL; no timer in the scanning process can then interrupt it. So a file's
metadata walk runs in a helper process (a plain ``python`` child, fed requests on its
standard input and answering on its standard output): the caller waits for the answer up
to the deadline, then kills the helper with SIGKILL and raises
:class:`~dafzarr.errors.ScanTimeoutError`. Helpers that answered in time are kept for the
next scan, so the common cost is one round trip of pickled requests and results, not a
process start. A helper dies with its parent (``PR_SET_PDEATHSIG`` on Linux, and the end of
its input everywhere).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

from ...errors import H5Error, ScanTimeoutError

__all__ = ["call_with_deadline", "map_with_deadline", "serve"]

_LENGTH = 8  # bytes of a frame's length prefix (little-endian)
_PIPE_BYTES = 1 << 20
# The helper's first frame is the caller's sys.path, so that it imports the same dafzarr.
_BOOT = (
    "import pickle, sys\n"
    "n = int.from_bytes(sys.stdin.buffer.read(8), 'little')\n"
    "sys.path[:] = pickle.loads(sys.stdin.buffer.read(n))\n"
    "from dafzarr._core.refs.deadline import serve\n"
    "serve()\n"
)


# --- The helper's side ----------------------------------------------------------------------------
def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent exits (even while HDF5 loops)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() == 1:  # the parent is gone already
        os._exit(0)


def _read_exact(stream: Any, n: int) -> bytes | None:
    data = stream.read(n)
    return data if len(data) == n else None


def serve() -> None:
    """The helper's loop: ``(cwd, function, args, kwargs)`` in, ``(ok, value, warnings)`` out.

    Each call runs in the caller's working directory of the moment (``cwd``), so that a
    relative path names the file the caller means, whatever directory the helper started in.
    """
    _die_with_parent()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the answer stream
    while True:
        head = _read_exact(stdin, _LENGTH)
        if head is None:
            return  # the caller closed our input: done
        body = _read_exact(stdin, int.from_bytes(head, "little"))
        if body is None:
            return
        cwd, fn, args, kwargs = pickle.loads(body)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if cwd is not None:
                    os.chdir(cwd)
                answer: tuple[bool, Any] = (True, fn(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 (sent back, raised in the caller)
                answer = (False, exc)
        shown = [(w.category, str(w.message)) for w in caught]
        try:
            out = pickle.dumps((*answer, shown), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 (an exception that does not pickle)
            fallback = H5Error(f"{type(answer[1]).__name__}: {answer[1]} ({exc})")
            out = pickle.dumps((False, fallback, []), protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(len(out).to_bytes(_LENGTH, "little") + out)
        stdout.flush()


# --- The caller's side ----------------------------------------------------------------------------
def _widen_pipe(pipe: Any) -> None:
    """Let the answer stream hold 1 MiB at once (Linux; 64 KiB by default; 1 MiB is the
    default pipe-max-size), so that a large scan result crosses in a few writes."""
    if pipe is None or not sys.platform.startswith("linux"):
        return
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), 1031, _PIPE_BYTES)  # F_SETPIPE_SZ


class _Helper:
    """One helper process and the pipes to it; owned by the process that started it."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        _widen_pipe(self.proc.stdout)
        self._send(pickle.dumps(list(sys.path)))

    def _send(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(len(body).to_bytes(_LENGTH, "little") + body)
        self.proc.stdin.flush()

    def _receive(self, deadline: float) -> bytearray | None:
        """One answer frame, or None if the deadline passed first (or the helper died)."""
        head = self._read(_LENGTH, deadline)
        if head is None:
            return None
        return self._read(int.from_bytes(head, "little"), deadline)

    def _read(self, n: int, deadline: float) -> bytearray | None:
        """Exactly ``n`` bytes of the answer stream, read into one buffer as they come."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = bytearray(n)
        view = memoryview(buf)
        pos = 0
        while pos < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            got = os.readv(fd, [view[pos:]])
            if not got:
                return None  # the helper ended
            pos += got
        view.release()
        return buf

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             deadline: float) -> tuple[bool, Any, list[tuple[type[Warning], str]]] | None:  # fmt: skip
        if not self.request(fn, args, kwargs):
            return None
        return self.answer(deadline)

    def request(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        """Queue one call, to run in this process's working directory; False if the helper
        has ended."""
        try:
            cwd: str | None = os.getcwd()
        except OSError:  # the working directory was removed: absolute paths still work
            cwd = None
        body = pickle.dumps((cwd, fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._send(body)
        except OSError:  # BrokenPipeError: the helper ended before reading it
            return False
        return True

    def answer(self, deadline: float) -> tuple[bool, Any, list[tuple[type[Warning], str]]] | None:
        """The answer to the oldest queued call, or None (deadline passed, or helper ended)."""
        frame = self._receive(deadline)
        return None if frame is None else pickle.loads(frame)

    def close_pipes(self) -> None:
        """Close this process' ends of the helper's pipes."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    def kill(self) -> None:
        """SIGKILL, and reap, the helper (which may be stuck in native code)."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.close_pipes()

    def close(self) -> None:
        """Let an idle helper end (its input closes), and reap it."""
        self.close_pipes()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


_IDLE: list[_Helper] = []
_LOCK = threading.Lock()

# Linux sends a helper its parent-death signal when the *thread* that started it ends, so
# helpers are started by one thread that lasts as long as the process (the threads of a
# ThreadPoolExecutor come and go).
_STARTS: queue.SimpleQueue[tuple[threading.Event, list[Any]]] = queue.SimpleQueue()
_STARTER_PID = 0


def _starter() -> None:
    while True:
        done, box = _STARTS.get()
        try:
            box.append(_Helper())
        except BaseException as exc:  # noqa: BLE001 (raised in the thread that asked)
            box.append(exc)
        done.set()


def _start_helper() -> _Helper:
    """A new helper, started by this process' starter thread."""
    global _STARTER_PID
    with _LOCK:
        if os.getpid() != _STARTER_PID:  # first use, or a child forked without the thread
            _STARTER_PID = os.getpid()
            threading.Thread(target=_starter, name="dafzarr-scan-helpers", daemon=True).start()
    done, box = threading.Event(), list[Any]()
    _STARTS.put((done, box))
    done.wait()
    if isinstance(box[0], BaseException):
        raise box[0]
    helper: _Helper = box[0]
    return helper


@contextlib.contextmanager
def _helper() -> Iterator[_Helper]:
    """An idle helper of this process (a new one if none), returned after a clean answer."""
    pid = os.getpid()
    with _LOCK:
        inherited = [h for h in _IDLE if h.owner != pid]  # through fork: the parent's
        if inherited:
            _IDLE[:] = [h for h in _IDLE if h.owner == pid]
        helper = _IDLE.pop() if _IDLE else None
    for h in inherited:
        h.close_pipes()  # this process' copies only; the parent keeps its helper
    if helper is not None and helper.proc.poll() is not None:  # ended while idle
        helper.kill()
        helper = None
    if helper is None:
        helper = _start_helper()
    ok = False
    try:
        yield helper
        ok = True
    finally:
        if ok:
            with _LOCK:
                _IDLE.append(helper)
        else:
            helper.kill()


def _raise_unanswered(helper: _Helper, what: str, timeout: float, deadline: float) -> NoReturn:
    """Kill the helper of a call without an answer, and raise why there is none."""
    ended = time.monotonic() < deadline  # the answer stream ended before the deadline
    helper.kill()
    if ended:
        raise H5Error(
            f"{what}: the scanning process ended without an answer (exit status "
            f"{helper.proc.returncode}; killed by a signal if negative)"
        )
    raise ScanTimeoutError(
        f"{what}: not done after {timeout:g} s (the HDF5 library may be looping on a "
        "damaged or hostile file); its scan was stopped"
    )


def _unpack(answer: tuple[bool, Any, list[tuple[type[Warning], str]]], stacklevel: int) -> Any:
    ok, value, shown = answer
    for category, message in shown:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    if not ok:
        raise value
    return value


# Calls queued ahead in a helper by map_with_deadline: the helper starts the next file while
# the caller unpickles the last answer, and no call waits for a round trip.
_AHEAD = 8


def map_with_deadline(
    fn: Callable[..., Any], calls: Iterable[tuple[tuple[Any, ...], dict[str, Any], str]], *,
    timeout: float, helpers: int = 1,
) -> Iterator[Any]:  # fmt: skip
    """``fn(*args, **kwargs)`` for each ``(args, kwargs, what)`` of ``calls``, answers in order.

    Calls are taken from ``calls`` as they are needed and queued a few ahead in each of
    ``helpers`` helper processes (call ``i`` in helper ``i % helpers``); each has ``timeout``
    seconds from the moment its answer is awaited. On a deadline, a helper that ends, or an
    exception, the helpers are killed (queued calls go with them) and the error raised.
    """
    with contextlib.ExitStack() as stack:
        pool = [stack.enter_context(_helper()) for _ in range(max(1, helpers))]
        source = iter(calls)
        queued: collections.deque[tuple[_Helper, str]] = collections.deque()
        sent = 0
        while True:
            while len(queued) < _AHEAD * len(pool):
                call = next(source, None)
                if call is None:
                    break
                args, kwargs, what = call
                helper = pool[sent % len(pool)]
                helper.request(fn, args, kwargs)  # if the helper ended, its answer says so
                queued.append((helper, what))
                sent += 1
            if not queued:
                return
            helper, what = queued.popleft()
            deadline = time.monotonic() + timeout
            answer = helper.answer(deadline)
            if answer is None:
                _raise_unanswered(helper, what, timeout, deadline)
            if not answer[0]:
                helper.kill()  # queued calls would run for nothing
            yield _unpack(answer, stacklevel=2)


def call_with_deadline(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
    timeout: float, what: str,
) -> Any:  # fmt: skip
    """``fn(*args, **kwargs)`` in a helper process, killed after ``timeout`` seconds.

    Its warnings are shown again here; its exception is raised here. ``what`` names the
    work in the :class:`~dafzarr.errors.ScanTimeoutError` raised at the deadline.
    Anything interrupting the wait (a signal, ``KeyboardInterrupt``) kills the helper too.
    """
    deadline = time.monotonic() + timeout
    with _helper() as helper:
        answer = helper.call(fn, args, kwargs, deadline)
        if answer is None:
            _raise_unanswered(helper, what, timeout, deadline)
    return _unpack(answer, stacklevel=3)


def _shutdown() -> None:
    with _LOCK:
        helpers, _IDLE[:] = list(_IDLE), []
    for h in helpers:
        if h.owner == os.getpid():
            h.close()


atexit.register(_shutdown)
