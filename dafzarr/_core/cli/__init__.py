"""The ``dafzarr`` command line (also ``python -m dafzarr``).

Exit status: 0 on success, 1 when a command fails (bad input, damaged data, an entry that
does not verify), 2 on a usage error, 130 on Ctrl-C (no traceback) and 141 when standard
output is closed early (``dafzarr zip ls big.zip | head`` ends quietly).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from ... import __version__
from ...errors import DafzarrError
from ..config import show_config
from . import daf as _daf
from . import refs as _refs
from . import zip as _zip
from .common import add_output_options
from .demo import run_demo

__all__ = ["build_parser", "main"]

#: Exit statuses of the command line.
EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 128 + signal.SIGINT
EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dafzarr", description="Zero-copy array storage: ZIP stores, Daf, references."
    )
    parser.add_argument("--version", action="version", version=f"dafzarr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="build and read back an example archive")
    demo.add_argument("--dir", help="keep the example files in this directory")
    add_output_options(demo)
    demo.set_defaults(func=run_demo)

    config = sub.add_parser("config", help="print the build configuration")
    add_output_options(config)
    config.set_defaults(func=lambda args: 0 if show_config() else EXIT_FAILURE)

    _zip.add_parser(sub)
    _daf.add_parser(sub)
    _refs.add_parser(sub)
    return parser


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's final flush of a
    closed pipe does not print a second error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    What ``dafzarr ...`` (or ``python -m dafzarr ...``) runs: the output goes to standard
    output, a failure's message (``dafzarr: ...``, naming the file at fault) to standard
    error, without a traceback.

    Parameters
    ----------
    argv
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 when the command fails (bad input, damaged data, an entry that does
        not verify: any :class:`~dafzarr.errors.DafzarrError` or ``OSError``), 130 on
        Ctrl-C and 141 when standard output is closed early.

    Raises
    ------
    SystemExit
        From ``argparse``: status 2 on a usage error (an unknown command or option), 0 after
        ``--help`` or ``--version``.

    Examples
    --------
    >>> import zipfile
    >>> from dafzarr.cli import main
    >>> with zipfile.ZipFile("x.zip", "w") as z:
    ...     z.writestr("a/0", b"1234")
    >>> main(["zip", "ls", "x.zip"])
        size       stored method    crc32       offset  name
           4            4      0 9be3e0a3 ... a/0
    1 entries, 4 B of data in x.zip
    0
    >>> main(["zip", "ls", "missing.zip"])  # the message goes to standard error
    1
    """
    args = build_parser().parse_args(argv)
    try:
        status = int(args.func(args))
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("dafzarr: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    except (DafzarrError, OSError) as exc:
        print(f"dafzarr: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return status
