"""The one progress bar of dafzarr's long runs (tqdm: rate, ETA, redrawn in place)."""

from __future__ import annotations

import sys
from typing import Never, Self, TextIO

from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """A progress bar on stderr (or ``stream``), drawn by tqdm at most 5 times a second.

    Use it in a ``with`` block, which ends the bar's line even when the work fails.
    ``unit`` names what is counted (``"files"``, ``"entries"``). Disabled, or with at most one
    item to count, it writes nothing. The command line enables it only when stderr is a
    terminal; an API call with ``progress=True`` asked for it, so it is drawn wherever
    ``stream`` goes.
    """

    def __init__(
        self,
        total: int,
        label: str,
        enabled: bool,
        stream: TextIO | None = None,
        unit: str = "files",
    ) -> None:
        self.total, self.done = total, 0
        self._bar: tqdm[Never] | None = None
        if enabled and total > 1:
            self._bar = tqdm(
                total=total,
                desc=label,
                unit=f" {unit}",
                file=stream or sys.stderr,
                mininterval=0.2,
                dynamic_ncols=True,
                leave=True,
            )

    def step(self, n: int = 1, what: str | None = None) -> None:
        """Count ``n`` more items done; ``what`` names the item just done."""
        self.done += n
        bar = self._bar
        if bar is None:
            return
        if what is not None:
            bar.set_postfix_str(what, refresh=False)
        bar.update(n)
        if self.done >= self.total:
            self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the bar's line (done or not); further steps are only counted."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
