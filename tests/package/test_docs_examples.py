"""The examples of the user guide and the tutorial run as written.

Every ``.. code-block:: python`` of ``docs/guide/*.rst`` and ``docs/tutorial.rst`` is an
example. Each page's examples run in order, in one fresh interpreter whose working directory
is an empty temporary directory, sharing one namespace (a later example uses what an earlier
one made). A block whose first line is ``# not run: <reason>`` (it needs a server, a bucket,
credentials) is shown but skipped. A failure names the page, the block's number and its
line. The examples reach ``dafzarr`` through public names only (the table of
``test_public_api``). Skipped outside a clone, where ``docs/`` is absent.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

from .test_public_api import PUBLIC

DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("guide/*.rst")), DOCS / "tutorial.rst"]
SKIP_MARK = "# not run:"

pytestmark = pytest.mark.skipif(
    not (DOCS / "conf.py").is_file(), reason="needs the project's source tree"
)

_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*python\s*$")

# Runs one page's examples in order in one namespace; reports the failing block by number.
_RUNNER = """
import json, sys, traceback
page, blocks = json.load(open(sys.argv[1], encoding="utf-8"))
ns = {"__name__": "__main__"}
for number, line, source in blocks:
    try:
        exec(compile(source, f"{page}, example {number} (line {line})", "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print(f"{page}: example {number} (line {line}) failed", file=sys.stderr)
        sys.exit(1)
"""


def examples(page: Path) -> list[tuple[int, int, str]]:
    """``(number, line, source)`` of each Python example of ``page``, in order (numbered
    from 1, skipped ones included)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        i += 1
        if m is None:
            continue
        outer = len(m.group(1))
        while i < len(lines) and lines[i].strip().startswith(":"):  # directive options
            i += 1
        body: list[str] = []
        start = i
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > outer
        ):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        indent = min(len(b) - len(b.lstrip()) for b in body if b.strip())
        source = "\n".join(b[indent:] for b in body).strip("\n") + "\n"
        first = next(n for n in range(start, i) if lines[n].strip()) + 1
        found.append((len(found) + 1, first, source))
    return found


def private_names(source: str) -> list[str]:
    """The ``dafzarr`` names ``source`` imports or reaches by attribute that the public API
    table does not list (a class's own attributes, such as methods, are not checked)."""
    modules: dict[str, str] = {}  # local name -> public module it stands for
    bad: list[str] = []

    def reach(module: str, attrs: list[str]) -> None:
        for attr in attrs:
            if f"{module}.{attr}" in PUBLIC:
                module = f"{module}.{attr}"
                continue
            if attr not in PUBLIC.get(module, set()):
                bad.append(f"{module}.{attr}")
            return

    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dafzarr":
                    if alias.name not in PUBLIC:
                        bad.append(alias.name)
                    modules[alias.asname or "dafzarr"] = alias.name if alias.asname else "dafzarr"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dafzarr":
            module = node.module or ""
            if module not in PUBLIC:
                bad.append(module)
                continue
            for alias in node.names:
                reach(module, [alias.name])
                if f"{module}.{alias.name}" in PUBLIC:
                    modules[alias.asname or alias.name] = f"{module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):  # inner parts of a chain check its prefixes
            chain: list[str] = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in modules:
                reach(modules[inner.id], chain[::-1])
    return sorted(set(bad))


def test_examples_use_only_public_names() -> None:
    found = {
        f"{p.relative_to(DOCS).as_posix()}, example {n} (line {line})": private_names(src)
        for p in PAGES
        if p.is_file()
        for n, line, src in examples(p)
        if not src.startswith(SKIP_MARK)
    }
    assert not {k: v for k, v in found.items() if v}
    assert (
        private_names(
            "import dafzarr\nfrom dafzarr.refs import scan\n"
            "from dafzarr import refs\nrefs.write_parquet\n"
            "dafzarr.MmapZipStore.pack\n"
        )
        == []
    )
    assert private_names(
        "from dafzarr._core.crc import crc32\nimport dafzarr\n"
        "dafzarr._core.refs.scan\nfrom dafzarr import refs\nrefs.hidden\n"
    ) == ["dafzarr._core", "dafzarr._core.crc", "dafzarr.refs.hidden"]


def test_the_guide_and_tutorial_hold_enough_examples() -> None:
    runnable = [
        e for p in PAGES if p.is_file() for e in examples(p) if not e[2].startswith(SKIP_MARK)
    ]
    assert len(runnable) >= 20, f"only {len(runnable)} runnable examples"
    assert all(p.is_file() for p in PAGES), [str(p) for p in PAGES if not p.is_file()]


@pytest.mark.slow  # a page's examples take 3-20 s (their imports, child processes)
@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    name = page.relative_to(DOCS).as_posix()
    blocks = [e for e in examples(page) if not e[2].startswith(SKIP_MARK)]
    assert blocks, f"{name} has no runnable example"
    work = tmp_path / "work"
    work.mkdir()
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([name, blocks]), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(spec)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{name}:\n{proc.stdout}\n{proc.stderr}"


def test_a_failing_example_is_named_by_page_and_number(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(
        "Title\n=====\n\n.. code-block:: python\n\n   x = 1\n\n"
        "Text.\n\n.. code-block:: python\n\n   # not run: needs a server\n"
        "   connect()\n\n.. code-block:: python\n\n   assert x == 2\n",
        encoding="utf-8",
    )
    found = examples(page)
    assert [(n, line) for n, line, _ in found] == [(1, 6), (2, 12), (3, 17)]
    blocks = [e for e in found if not e[2].startswith(SKIP_MARK)]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(["page.rst", blocks]), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(spec)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "page.rst: example 3 (line 17) failed" in proc.stderr
