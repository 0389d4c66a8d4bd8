"""What every ``dafzarr`` subcommand shares: options, output in text or JSON, progress."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_output_options", "emit_json", "human", "progress_wanted", "say"]


def human(n: float) -> str:
    """``n`` bytes in binary units (``"1.5 MiB"``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def add_output_options(parser: argparse.ArgumentParser, *, json_output: bool = False) -> None:
    """``-q/--quiet`` on every command; ``--json`` on the listing and inspecting ones."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar and no summary lines (errors still go to stderr)",
    )
    if json_output:
        parser.add_argument(
            "--json", action="store_true", help="print one JSON document on stdout instead of text"
        )


def progress_wanted(args: argparse.Namespace) -> bool:
    """A progress bar unless ``--quiet``, and only on a terminal (never ``\\r`` in a log)."""
    return not args.quiet and sys.stderr.isatty()


def say(args: argparse.Namespace, text: str) -> None:
    """A summary line on stdout, which ``--quiet`` (and ``--json``) leave out."""
    if not args.quiet and not getattr(args, "json", False):
        print(text)


def emit_json(document: Any) -> None:
    """One JSON document on stdout (keys in a stable order, one per line)."""
    json.dump(document, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")
