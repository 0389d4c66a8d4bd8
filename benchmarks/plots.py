"""Plots of the recorded benchmark results (``benchmarks/results/*.json``).

Run from the project root::

    python -m benchmarks.plots [--results benchmarks/results] [--out docs/_static/bench]

One PNG per recorded benchmark, ``<out>/<benchmark>.png``: a panel per operation (and unit),
a bar per peer at its median figure, with the best round as a tick where it differs. Rates
(MB/s, entries/s, ...) are better higher, times (s, us/call) better lower; each panel says
which. A panel whose bars span more than 30x uses a logarithmic axis. The date, the source
and the machine load of the figures go into the title: compare bars within a panel only.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import textwrap
from typing import Any

from . import record

HIGHER_IS_BETTER = ("/s",)  # units ending so are rates
MAX_PANELS = 40


def _better(unit: str) -> str:
    return "higher is better" if unit.endswith(HIGHER_IS_BETTER) else "lower is better"


def panels(doc: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(title, unit, rows) per operation and unit, in the document's order; rows without a
    numeric median are left out."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in doc["rows"]:
        if not isinstance(r.get("median"), (int, float)):
            continue
        key = (str(r.get("suite") or ""), str(r["op"]), str(r["unit"]))
        groups.setdefault(key, []).append(r)
    out = []
    for (suite, op, unit), rows in groups.items():
        title = f"{suite}: {op}" if suite and suite not in op else op
        out.append((title, unit, rows))
    return out[:MAX_PANELS]


def _label(r: dict[str, Any], sizes: int) -> str:
    text = str(r["peer"])
    if sizes > 1 and r.get("size"):
        text += f" ({r['size']})"
    return "\n".join(textwrap.wrap(text, 48)) or "?"


def plot(doc: dict[str, Any], path: str) -> str:
    """Draw one recorded document into ``path`` (PNG); return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = panels(doc)
    if not groups:
        raise ValueError(f"{doc['benchmark']}: no row with a numeric median to plot")
    head = f"{doc.get('title') or doc['benchmark']} ({doc.get('mode', '')})"
    sub = f"{str(doc.get('date', ''))[:10]}; source: {doc.get('source', '')}"
    if doc.get("load"):
        sub += f"; load average {doc['load']}"
    header = [head, *textwrap.wrap(sub, 110)]
    heights = [
        0.9 + 0.42 * sum(len(_label(r, 2).splitlines()) for r in rows) for _t, _u, rows in groups
    ]
    top = 0.05 + 0.15 * len(header)  # inches taken by the header
    total = sum(heights) + top
    fig, axes = plt.subplots(
        len(groups), 1, figsize=(9, total), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    for ax, (title, unit, rows) in zip(axes[:, 0], groups, strict=True):
        sizes = len({r.get("size") for r in rows})
        labels = [_label(r, sizes) for r in rows]
        medians = [float(r["median"]) for r in rows]
        ys = list(range(len(rows)))
        ax.barh(
            ys,
            medians,
            color=[
                "#1f77b4"
                if "dafzarr" in lb.lower()
                or "daf" in lb.lower()
                or "mmapzipstore" in lb.lower()
                or "arrayfile" in lb.lower()
                else "#a0a0a0"
                for lb in labels
            ],
        )
        for y, r in zip(ys, rows, strict=True):
            best = r.get("best")
            if isinstance(best, (int, float)) and best != r["median"]:
                ax.plot([best, best], [y - 0.35, y + 0.35], color="black", linewidth=1.2)
        ax.set_yticks(ys, labels, fontsize=7)
        ax.invert_yaxis()
        positive = [m for m in medians if m > 0]
        if positive and max(positive) / min(positive) > 30:
            ax.set_xscale("log")
        ax.set_title(
            "\n".join(textwrap.wrap(f"{title} — {unit}, {_better(unit)}", 90)),
            fontsize=8,
            loc="left",
        )
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle("\n".join(header), fontsize=9, y=1 - 0.1 / total, va="top")
    fig.tight_layout()  # leaves room for the header
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.plots",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--results", default=record.RESULTS_DIR, help="the recorded JSON files")
    ap.add_argument(
        "--out",
        default=os.path.join(record.ROOT, "docs", "_static", "bench"),
        help="where the PNG files go",
    )
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.results, "*.json")))
    if not files:
        print(f"no recorded results in {args.results}", file=sys.stderr)
        return 1
    for f in files:
        doc = record.load(f)
        print(plot(doc, os.path.join(args.out, f"{doc['benchmark']}.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
