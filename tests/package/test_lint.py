"""The linters the project follows, run on its source tree (skipped outside a clone).

ruff (Python style and bugs), mypy (strict types over ``dafzarr``), cython-lint (the ``.pyx``
and ``.pxd`` files ruff cannot see) and codespell, each with its configuration from
``pyproject.toml``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    not (ROOT / "_ext").is_dir() or not (ROOT / "pyproject.toml").is_file(),
    reason="needs the project's source tree",
)


_MODULES = {"cython-lint": "cython_lint", "codespell": "codespell_lib"}


def _run(tool: str, *args: str) -> None:
    # In a clone the linters are part of the job (`.ci/run` installs the `lint` group).
    assert importlib.util.find_spec(_MODULES.get(tool, tool)) is not None, (
        f"{tool} is not installed: install the `lint` dependency group (pip install --group lint)"
    )
    # cython-lint runs pycodestyle from PATH: put this interpreter's scripts first
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    exe = shutil.which(tool, path=env["PATH"])
    cmd = [exe, *args] if exe is not None else [sys.executable, "-m", tool, *args]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"


def test_ruff() -> None:
    _run("ruff", "check", "--no-cache", "dafzarr", "tests", "benchmarks", "setup.py")


def test_mypy(tmp_path: Path) -> None:
    _run("mypy", "--cache-dir", str(tmp_path / "mypy_cache"))


def test_cython_lint() -> None:
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "_ext").glob("**/*.px[di]"))
    sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "_ext").glob("*.pyx"))
    _run("cython-lint", *sources)


def test_codespell() -> None:
    _run(
        "codespell",
        "dafzarr",
        "tests",
        "benchmarks",
        "_ext",
        "docs",
        "README.md",
        "setup.py",
        "conda-recipe",
    )


def test_ruff_format() -> None:
    _run(
        "ruff",
        "format",
        "--check",
        "--no-cache",
        "dafzarr",
        "tests",
        "benchmarks",
        "docs",
        "setup.py",
    )


def _lint_pins() -> dict[str, str]:
    """The ``lint`` group's pinned tools: name to version."""
    import tomllib

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    return dict(p.split("==") for p in groups["lint"] if "==" in p)


def test_pre_commit_hooks_pin_the_lint_groups_versions() -> None:
    import yaml

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    pins = _lint_pins()
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert {h["id"] for h in hooks} >= {"ruff-format", "ruff", "cython-lint", "codespell"}
    for hook in hooks:
        for dep in hook.get("additional_dependencies", []):
            name, version = dep.split("==")
            assert pins.get(name) == version, (hook["id"], dep, pins)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "validate-config",
            str(ROOT / ".pre-commit-config.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
