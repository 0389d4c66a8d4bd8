"""README.md stays a short front page (at most 150 lines: the details live in docs/) and its
examples run as written: every ```python block, each in a fresh interpreter in an empty
directory. A block that needs the network is marked by a line ``<!-- needs network -->``
right before it and skipped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

README = ROOT / "README.md"
NETWORK_MARK = "<!-- needs network -->"

pytestmark = pytest.mark.skipif(not README.is_file(), reason="needs the project's source tree")


def _blocks() -> list[tuple[int, str, bool]]:
    """(line number, code, needs network) of each ```python block."""
    text = README.read_text(encoding="utf-8") if README.is_file() else ""
    out = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, re.DOTALL | re.MULTILINE):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip().splitlines()
        out.append((line, m.group(1), bool(before) and before[-1].strip() == NETWORK_MARK))
    return out


def test_readme_is_at_most_150_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move details to docs/"


def test_readme_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert (
        'python3 -m venv .venv && .venv/bin/pip install ".[demo]" && .venv/bin/dafzarr demo' in text
    )
    assert "\nbash .ci/run\n" in text


@pytest.mark.skipif(not (ROOT / "docs" / "conf.py").is_file(), reason="needs a clone")
def test_readme_links_point_to_files() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/benchmarks.rst" in targets
    # The guide pages may be written after this page; the files the project already has
    # must exist.
    for target in targets:
        if not target.startswith(("http", "docs/guide/", "docs/tutorial", "docs/formats")):
            assert (ROOT / target).exists(), target


@pytest.mark.parametrize(
    ("line", "code", "network"), _blocks(), ids=[f"line{b[0]}" for b in _blocks()]
)
def test_readme_example_runs(tmp_path: Path, line: int, code: str, network: bool) -> None:
    if network:
        pytest.skip("the example needs the network")
    # the package of this tree, whichever one the interpreter has installed
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert res.returncode == 0, f"README.md line {line}:\n{res.stdout}{res.stderr}"


def test_readme_has_an_example_per_capability() -> None:
    code = "\n".join(c for _line, c, _net in _blocks())
    for name in ("MmapZipStore", "open_daf", "get_np_query", "refs.virtualize", "ArrayFile"):
        assert name in code, name
