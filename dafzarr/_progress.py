"""The one progress bar of dafzarr's long runs: a plain line on stderr, redrawn in place."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A plain one-line progress bar on stderr (redrawn at most 5 times a second).

    ``unit`` names what is counted (``"files"``, ``"entries"``). Disabled, or with at most one
    item to count, it writes nothing.
    """

    def __init__(
        self,
        total: int,
        label: str,
        enabled: bool,
        stream: TextIO | None = None,
        unit: str = "files",
    ) -> None:
        self.total, self.label, self.unit, self.done = total, label, unit, 0
        self.enabled = enabled and total > 1
        self.stream = stream or sys.stderr
        self.start = self.last = time.monotonic()

    def step(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.2 or self.done == self.total):
            self.last = now
            width = 30
            filled = width * self.done // max(1, self.total)
            self.stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                f"{self.done}/{self.total} {self.unit}, {now - self.start:.1f} s"
            )
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()
