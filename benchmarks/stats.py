"""The figures of a benchmark run: the units of its rates, one row's samples (:class:`Stats`),
and the Markdown table and recorded rows made of them. :mod:`.common` re-exports the units
and :class:`Stats`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common import Meta

# Units: a rate in MB/s (amount in bytes, MB = 1e6 bytes), entries/s (amount in entries),
# or a duration per call in microseconds (amount = calls per sample).
MB = "MB/s"
ENTRIES = "entries/s"
PER_CALL = "us/call"


@dataclass
class Stats:
    suite: str
    op: str
    peer: str
    unit: str
    size: str
    amount: float
    samples: list[float] = field(default_factory=list)
    meta: Meta | None = None
    baseline: tuple[str, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    def rate(self, t: float) -> float:
        """The figure of merit for duration ``t``: higher is better except for PER_CALL."""
        if self.unit == MB:
            return self.amount / t / 1e6
        if self.unit == ENTRIES:
            return self.amount / t
        return t / self.amount * 1e6

    @property
    def median_rate(self) -> float:
        return self.rate(self.median)

    @property
    def best_rate(self) -> float:
        return self.rate(self.best)

    def speedup_over(self, other: Stats) -> float:
        """How many times faster this row is than ``other`` (by medians)."""
        return (other.median / other.amount) / (self.median / self.amount)


def _fmt_rate(v: float, unit: str) -> str:
    if unit == MB:
        return f"{v:,.0f} MB/s"
    if unit == ENTRIES:
        return f"{v:,.0f} entries/s"
    return f"{v:,.2f} µs/call"


def _fmt_time(t: float) -> str:
    if t >= 0.1:
        return f"{t:.3f}"
    if t >= 1e-3:
        return f"{t:.4f}"
    return f"{t:.2e}"


def markdown_table(results: Sequence[Stats]) -> tuple[str, list[tuple[str, bool]]]:
    """The Markdown table, and the (text, met) of every target in it."""
    by_op: dict[tuple[str, str], dict[str, Stats]] = {}
    for s in results:
        by_op.setdefault((s.suite, s.op), {})[s.peer] = s
    head = (
        "suite",
        "operation",
        "peer",
        "size / N",
        "n",
        "median s",
        "best s",
        "**median**",
        "best",
        "ratio",
        "target",
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    targets: list[tuple[str, bool]] = []
    for s in results:
        peers = by_op[(s.suite, s.op)]
        ratios = []
        for b in s.baseline:
            if b in peers and b != s.peer:
                ratios.append(f"{s.speedup_over(peers[b]):.2f}x {b}")
            elif b == s.peer:
                ratios.append("baseline")
        target = ""
        if s.meta is not None and s.meta.target is not None:
            text, ok = s.meta.target(s, peers)
            target = f"**{'PASS' if ok else 'MISS'}** {text}"
            targets.append((f"{s.op} / {s.peer}: {text}", ok))
        row = (
            s.suite,
            s.op,
            s.peer,
            s.size,
            str(len(s.samples)),
            _fmt_time(s.median),
            _fmt_time(s.best),
            f"**{_fmt_rate(s.median_rate, s.unit)}**",
            _fmt_rate(s.best_rate, s.unit),
            "; ".join(ratios) or "—",
            target,
        )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), targets


def stats_row(s: Stats, peers: dict[str, Stats]) -> dict[str, Any]:
    """One result row of the recorded JSON (see :mod:`benchmarks.record`); ``peers``: the
    rows of the same operation by peer."""
    ratios = {
        b: round(s.speedup_over(peers[b]), 4) for b in s.baseline if b in peers and b != s.peer
    }
    target, met = None, None
    if s.meta is not None and s.meta.target is not None:
        target, met = s.meta.target(s, peers)
    return {
        "suite": s.suite,
        "op": s.op,
        "peer": s.peer,
        "size": s.size,
        "unit": s.unit,
        "n": len(s.samples),
        "median_s": s.median,
        "best_s": s.best,
        "median": s.median_rate,
        "best": s.best_rate,
        "ratios": ratios,
        "target": target,
        "target_met": met,
    }
