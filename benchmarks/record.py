"""Recorded benchmark results: one JSON document per benchmark script.

``python -m benchmarks.bench_NAME --record`` writes ``benchmarks/results/bench_NAME.json``
(``--record DIR``: ``DIR/bench_NAME.json``) beside the Markdown report it prints, and
``python -m benchmarks.plots`` draws the recorded files. The document (``"schema": 1``)::

    {"schema": 1, "benchmark": "bench_query", "title": "...", "mode": "full" | "quick",
     "source": "run" | "<where hand-entered figures come from>",
     "date": "2026-11-29T09:00:00+00:00", "machine": "...", "load": "...",
     "environment": ["* ...", ...], "notes": "...",
     "rows": [{"suite": "group", "op": "...", "peer": "...", "size": "...",
               "unit": "MB/s" | "entries/s" | "us/call" | "s" | ..., "n": 5,
               "median_s": 0.1, "best_s": 0.09, "median": 4577.0, "best": 5000.0,
               "ratios": {"scanpy.get.aggregate": 3.8}, "target": "..." | null,
               "target_met": true | false | null}],
     "tables": [{"title": "...", "header": ["..."], "rows": [["..."]]}]}

``median``/``best`` are the figures in ``unit`` (a rate, or a time per call);
``median_s``/``best_s`` the sample durations in seconds (null where only the figure is
known); ``ratios`` how many times faster the row is than each named peer, by medians.
"""

from __future__ import annotations

import json
import os
import platform
import time
from typing import Any

SCHEMA = 1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results")
ROW_KEYS = (
    "suite",
    "op",
    "peer",
    "size",
    "unit",
    "n",
    "median_s",
    "best_s",
    "median",
    "best",
    "ratios",
    "target",
    "target_met",
)

_current: dict[str, Any] | None = None
_path: str | None = None


def start(directory: str, benchmark: str, mode: str) -> str:
    """Record this run's results into ``directory/benchmark.json``; return that path."""
    global _current, _path
    os.makedirs(directory, exist_ok=True)
    _path = os.path.join(directory, f"{benchmark}.json")
    _current = {
        "schema": SCHEMA,
        "benchmark": benchmark,
        "title": benchmark,
        "mode": mode,
        "source": "run",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "load": "",
        "environment": [],
        "notes": "",
        "rows": [],
        "tables": [],
    }
    return _path


def recording() -> bool:
    """True when this run records its results."""
    return _current is not None


def update(**fields: Any) -> None:
    """Set top-level fields (title, load, environment, notes, ...) and save."""
    if _current is None:
        return
    _current.update(fields)
    _save()


def add_rows(rows: list[dict[str, Any]]) -> None:
    """Append result rows (dicts with :data:`ROW_KEYS`; missing keys become null) and save."""
    if _current is None:
        return
    for r in rows:
        _current["rows"].append({k: r.get(k) for k in ROW_KEYS})
    _save()


def add_table(title: str, markdown: str) -> None:
    """Append a Markdown table the script printed (cells kept as text) and save."""
    if _current is None:
        return
    _current["tables"].append({"title": title, **parse_markdown_table(markdown)})
    _save()


def parse_markdown_table(markdown: str) -> dict[str, Any]:
    """``{"header": [...], "rows": [[...], ...]}`` of the first pipe table in ``markdown``."""
    lines = [ln.strip() for ln in markdown.splitlines() if ln.strip().startswith("|")]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    body = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    return {"header": cells[0] if cells else [], "rows": body}


def _save() -> None:
    if _current is None or _path is None:
        return
    tmp = f"{_path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_current, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, _path)


def load(path: str) -> dict[str, Any]:
    """Read a recorded document, checking its schema (ValueError naming the file if not)."""
    with open(path, encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA}")
    for i, r in enumerate(doc.get("rows", [])):
        missing = [k for k in ROW_KEYS if k not in r]
        if missing:
            raise ValueError(f"{path}: row {i} lacks {', '.join(missing)}")
    return doc
