"""Packaging consistency: conda recipe, extension list, stubs and sdist contents.

The recipe is rendered the way conda-build renders a v0 ``meta.yaml``: Jinja first (with the
functions conda-build puts in the template context), then the ``# [selector]`` lines are kept
or dropped for the target platform and Python, then the result is parsed as YAML.

Most tests need the source tree (``setup.py``, ``_ext/``, ``conda-recipe/``). The recipe's own
test phase only ships ``tests/`` and ``pyproject.toml``: there those tests skip and the
installed-package checks still run.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from tests.helpers import ROOT

RECIPE = ROOT / "conda-recipe"
PYPROJECT = ROOT / "pyproject.toml"

needs_tree = pytest.mark.skipif(
    not all(p.exists() for p in (ROOT / "setup.py", ROOT / "_ext", RECIPE / "meta.yaml")),
    reason="needs the source tree (setup.py, _ext/, conda-recipe/), absent from an installed test run",
)

# PyPI name -> conda-forge name, where they differ.
CONDA_NAMES = {"isal": "python-isal", "build": "python-build", "tables": "pytables"}

# The build the recipe is rendered for by default: linux-64 with the running Python.
HOST = "linux-64"
PY = sys.version_info[:2]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


# --- Source tree facts ------------------------------------------------------------------
def _pyx_names() -> list[str]:
    names = sorted(p.stem for p in (ROOT / "_ext").glob("*.pyx"))
    assert names, "no _ext/*.pyx found: the derivation below would be vacuous"
    return names


def _compiled_modules() -> set[str]:
    """``dafzarr.<name>`` for every ``_ext/<name>.pyx`` (the ``_ext`` naming rule)."""
    return {f"dafzarr.{name}" for name in _pyx_names()}


def _setup_ext_names() -> list[str]:
    """The ``<name>`` of every ``ext("<name>")`` call in setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "ext"
            and node.args
        ):
            arg = node.args[0]
            assert isinstance(arg, ast.Constant), (
                f"setup.py: ext() needs a literal name: {ast.unparse(node)}"
            )
            assert isinstance(arg.value, str)
            names.append(arg.value)
    return names


# --- Rendering the recipe ---------------------------------------------------------------
def _py_int(version: tuple[int, int]) -> int:
    """conda-build's ``py`` selector variable: 3.11 -> 311."""
    return int(f"{version[0]}{version[1]}")


def _namespace(
    platform: str, py: tuple[int, int], build_platform: str | None = None
) -> dict[str, Any]:
    """The selector variables conda-build defines for one build."""
    osname, _, arch = platform.partition("-")
    build_platform = build_platform or platform
    return {
        "linux": osname == "linux",
        "osx": osname == "osx",
        "win": osname == "win",
        "unix": osname in ("linux", "osx"),
        "linux64": platform == "linux-64",
        "x86_64": arch == "64",
        "aarch64": arch == "aarch64",
        "arm64": arch == "arm64",
        "py": _py_int(py),
        "py3k": py[0] == 3,
        "target_platform": platform,
        "build_platform": build_platform,
    }


_CMP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _evaluate(node: ast.AST, ns: Mapping[str, Any]) -> Any:
    """Evaluate the small expression language used by the recipe's selectors."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, ns)
    if isinstance(node, ast.Name):
        if node.id not in ns:
            raise ValueError(f"unknown selector variable {node.id!r}")
        return ns[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, str)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _evaluate(node.operand, ns)
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, ns) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, ns)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            if type(op) not in _CMP:
                raise ValueError(f"unsupported selector operator {type(op).__name__}")
            right = _evaluate(comparator, ns)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError(f"unsupported selector syntax: {ast.dump(node)}")


def _select_lines(text: str, ns: Mapping[str, Any]) -> str:
    """Keep lines whose trailing ``# [selector]`` is true (and lines without one)."""
    out = []
    for line in text.splitlines():
        stripped = line.rstrip()
        if stripped.endswith("]") and "# [" in stripped:
            body, _, selector = stripped.rpartition("# [")
            if not _evaluate(ast.parse(selector[:-1].strip(), mode="eval"), ns):
                continue
            line = body.rstrip()
        out.append(line)
    return "\n".join(out) + "\n"


def _load_file_data(
    filename: str,
    fmt: str | None = None,
    from_recipe_dir: bool = False,
    recipe_dir: str | None = None,
    permit_undefined_jinja: bool = True,
) -> Any:
    """conda-build's ``load_file_data``: relative to the work dir (the source, ``path: ..``)."""
    base = (Path(recipe_dir) if recipe_dir else RECIPE) if from_recipe_dir else ROOT
    path = base / filename
    fmt = fmt or path.suffix.lstrip(".")
    text = path.read_text(encoding="utf-8")
    if fmt == "toml":
        return tomllib.loads(text)
    if fmt in ("yaml", "yml"):
        return yaml.safe_load(text)
    if fmt == "json":
        return json.loads(text)
    raise ValueError(f"load_file_data: unsupported format {fmt!r}")


def render_recipe(
    platform: str = HOST, py: tuple[int, int] = PY, build_platform: str | None = None
) -> dict[str, Any]:
    """Render ``conda-recipe/meta.yaml`` for one target, as conda-build would."""
    ns = _namespace(platform, py, build_platform)
    compilers = (
        {"c": "gcc", "cxx": "gxx", "fortran": "gfortran"}
        if ns["linux"]
        else {"c": "clang", "cxx": "clangxx", "fortran": "gfortran"}
    )
    stdlibs = {"linux": "sysroot", "osx": "macosx_deployment_target", "win": "vs"}
    context = {
        "load_file_data": _load_file_data,
        "compiler": lambda lang: f"{compilers[lang]}_{platform}",
        "stdlib": lambda lang: f"{stdlibs[platform.partition('-')[0]]}_{platform}",
        "pin_compatible": lambda name, **_: name,
        "pin_subpackage": lambda name, **_: name,
        "environ": dict(os.environ),
        "os": os,
        "RECIPE_DIR": str(RECIPE),
        "PYTHON": sys.executable,
        "target_platform": platform,
        "build_platform": ns["build_platform"],
        "py": ns["py"],
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    rendered = env.from_string((RECIPE / "meta.yaml").read_text(encoding="utf-8")).render(context)
    meta = yaml.safe_load(_select_lines(rendered, ns))
    assert isinstance(meta, dict)
    return meta


# --- Requirement normalisation ------------------------------------------------------------
def _conda_spec(line: str) -> tuple[str, SpecifierSet]:
    """``"zarr >=3.1,<4"`` -> ("zarr", SpecifierSet(">=3.1,<4"))."""
    name, _, spec = str(line).strip().partition(" ")
    assert " " not in spec.strip(), f"unexpected build-string pin in {line!r}"
    return name.lower(), SpecifierSet(spec.replace(" ", ""))


def _conda_specs(lines: list[str]) -> dict[str, SpecifierSet]:
    specs = [_conda_spec(line) for line in lines]
    out = dict(specs)
    assert len(out) == len(specs), f"duplicate names in {lines}"
    return out


def _pypi_as_conda(requirements: list[str]) -> dict[str, SpecifierSet]:
    """PEP 508 requirements that apply to this environment, under their conda names."""
    out = {}
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = canonicalize_name(req.name)
        out[CONDA_NAMES.get(name, name)] = SpecifierSet(str(req.specifier))
    return out


# --- Selector evaluator -------------------------------------------------------------------
def test_selector_evaluator() -> None:
    ns = _namespace("linux-64", (3, 11))
    text = "a: 1  # [linux]\nb: 2  # [win or py<311]\nc: 3  # [build_platform != target_platform]\nd: 4\n"
    assert yaml.safe_load(_select_lines(text, ns)) == {"a": 1, "d": 4}
    ns = _namespace("win-64", (3, 10))
    assert yaml.safe_load(_select_lines(text, ns)) == {"b": 2, "d": 4}
    with pytest.raises(ValueError, match="unknown selector variable"):
        _select_lines("x: 1  # [freebsd]\n", ns)


# --- The recipe -----------------------------------------------------------------------------
@needs_tree
def test_recipe_version_and_source() -> None:
    meta = render_recipe()
    project = _pyproject()["project"]
    assert meta["package"] == {"name": project["name"], "version": project["version"]}
    assert meta["source"] == {"path": ".."}
    assert (RECIPE / meta["source"]["path"]).resolve() == ROOT
    assert meta["build"]["number"] == 0
    assert "script" not in meta["build"], "the build script is conda-recipe/build.sh"


@needs_tree
@pytest.mark.parametrize(
    ("platform", "py", "skipped"),
    [
        ("linux-64", (3, 11), False),
        ("linux-aarch64", (3, 13), False),
        ("osx-arm64", (3, 12), True),
        ("win-64", (3, 12), True),
        ("linux-64", (3, 10), True),
    ],
    ids=["linux-64-py311", "linux-aarch64-py313", "osx-arm64-py312", "win-64", "py310"],
)
def test_recipe_skips(platform: str, py: tuple[int, int], skipped: bool) -> None:
    """Linux only (the store relies on Linux's mapping and locking calls), and Pythons from
    requires-python on."""
    meta = render_recipe(platform, py)
    assert bool(meta["build"].get("skip", False)) is skipped
    minimum = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert (f"{py[0]}.{py[1]}" in minimum) or skipped


@needs_tree
def test_recipe_covers_classified_pythons() -> None:
    classifiers = _pyproject()["project"]["classifiers"]
    prefix = "Programming Language :: Python :: 3."
    versions = [(3, int(c.removeprefix(prefix))) for c in classifiers if c.startswith(prefix)]
    assert versions
    for version in versions:
        assert not render_recipe("linux-64", version)["build"].get("skip", False), version


@needs_tree
def test_run_requirements_match_pyproject() -> None:
    run = render_recipe()["requirements"]["run"]
    conda = _conda_specs(run)
    assert conda.pop("python") == SpecifierSet()
    assert conda == _pypi_as_conda(_pyproject()["project"]["dependencies"])


@needs_tree
def test_host_and_build_requirements_match_build_system() -> None:
    meta = render_recipe()
    host = _conda_specs(meta["requirements"]["host"])
    build_system = _pypi_as_conda(_pyproject()["build-system"]["requires"])
    assert host == {"python": SpecifierSet(), "pip": SpecifierSet(), **build_system}
    # numpy belongs in host (and build-system.requires) only if an extension cimports it.
    cimports_numpy = any(
        "cimport numpy" in p.read_text(encoding="utf-8") for p in (ROOT / "_ext").glob("*.px*")
    )
    assert ("numpy" in host) is cimports_numpy
    build = meta["requirements"]["build"]
    assert build == [f"sysroot_{HOST}", f"gcc_{HOST}"]


@needs_tree
def test_cross_compiling_requirements() -> None:
    build = render_recipe("linux-aarch64", PY, build_platform="linux-64")["requirements"]["build"]
    specs = _conda_specs(build)
    assert specs["cross-python_linux-aarch64"] == SpecifierSet()
    assert "python" in specs
    assert specs["cython"] == _pypi_as_conda(_pyproject()["build-system"]["requires"])["cython"]
    assert "gcc_linux-aarch64" in specs
    assert "sysroot_linux-aarch64" in specs


@needs_tree
def test_recipe_test_section() -> None:
    test = render_recipe()["test"]
    assert set(test["imports"]) == {"dafzarr"} | _compiled_modules()
    assert len(test["imports"]) == len(set(test["imports"]))
    requires = _conda_specs(test["requires"])
    assert requires.pop("pip") == SpecifierSet()
    assert requires == _pypi_as_conda(_pyproject()["dependency-groups"]["test"])
    assert "tests" in test["source_files"]
    for command in (
        "pip check",
        'python -c "import dafzarr; dafzarr.show_config()"',
        'pytest tests -ra -m "not slow"',
    ):
        assert command in test["commands"]
    for script in _pyproject()["project"].get("scripts", {}):
        assert any(c.split()[0] == script for c in test["commands"]), f"console script {script}"


@needs_tree
def test_recipe_about() -> None:
    about = render_recipe()["about"]
    project = _pyproject()["project"]
    assert about["license"] == project["license"]
    assert about["license_file"] in project["license-files"]
    assert (ROOT / about["license_file"]).is_file()
    assert about["summary"] == project["description"]
    assert about["dev_url"] == project["urls"]["Source"]


@needs_tree
def test_build_script() -> None:
    script = RECIPE / "build.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    lines = [ln.strip() for ln in script.read_text(encoding="utf-8").splitlines()]
    assert '"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation' in lines
    install = lines.index('"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation')
    assert any(ln.startswith("rm -rf build") for ln in lines[:install])
    assert any(ln.startswith("find dafzarr") and "*.so" in ln for ln in lines[:install])


# --- Extensions, stubs, compiled modules ---------------------------------------------------------
@needs_tree
def test_every_pyx_has_extension_and_stub() -> None:
    names = _pyx_names()
    in_setup = _setup_ext_names()
    assert sorted(in_setup) == names, "setup.py ext(...) entries must match _ext/*.pyx one to one"
    for name in names:
        assert (ROOT / "dafzarr" / f"{name}.pyi").is_file(), f"dafzarr/{name}.pyi is missing"
    assert (ROOT / "dafzarr" / "py.typed").is_file()


@needs_tree
def test_every_compiled_module_imports() -> None:
    for module in sorted(_compiled_modules()):
        mod = importlib.import_module(module)
        assert mod.__file__ is not None
        assert mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), mod.__file__


@needs_tree
def test_build_info_lists_compiled_modules() -> None:
    from dafzarr._core.config import BUILD_INFO

    assert set(BUILD_INFO["compiled_modules"]) == _compiled_modules()


def test_installed_compiled_modules_import() -> None:
    """Runs in the conda test phase too: every module show_config lists is a built extension."""
    from dafzarr._core.config import BUILD_INFO

    assert BUILD_INFO["compiled_modules"]
    for module in BUILD_INFO["compiled_modules"]:
        mod = importlib.import_module(module)
        assert mod.__file__ is not None
        assert mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), mod.__file__


@needs_tree
def test_stubtest(tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    # The check is about the stubs: type errors elsewhere in the package, which mypy reaches
    # through dafzarr/__init__.py, are mypy's own job and must not mask the stub comparison.
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\nfollow_imports = silent\ncache_dir = {tmp_path / 'mypy_cache'}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            *sorted(_compiled_modules()),
            "--allowlist",
            str(ROOT / "tests" / "package" / "stubtest_allowlist.txt"),
            "--mypy-config-file",
            str(config),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


# --- The sdist ---------------------------------------------------------------------------------
_SDIST_IGNORE = (
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".asv",
    ".venv*",
)
_NOT_SOURCE = shutil.ignore_patterns(*_SDIST_IGNORE)


@needs_tree
def test_sdist_ships_sources_and_stubs(tmp_path: Path) -> None:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package is not installed")
    # Build from a copy so nothing is written into the repository. The copy keeps in-place
    # .so files, so the sdist's exclusion of compiled artefacts is exercised too.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_NOT_SOURCE)
    dist = tmp_path / "dist"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(src),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    project = _pyproject()["project"]
    (sdist,) = dist.glob("*.tar.gz")
    assert sdist.name == f"{project['name']}-{project['version']}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    top = f"{project['name']}-{project['version']}/"
    assert all(n == top.rstrip("/") or n.startswith(top) for n in names)
    members = {n.removeprefix(top) for n in names}

    expected = {
        "pyproject.toml",
        "setup.py",
        "LICENSE",
        "README.md",
        "MANIFEST.in",
        "dafzarr/py.typed",
        "conda-recipe/meta.yaml",
        "conda-recipe/build.sh",
        "tests/package/stubtest_allowlist.txt",
    }
    for pattern in (
        "_ext/*.pyx",
        "_ext/**/*.pxd",
        "_ext/*.pxi",
        "_ext/*.h",
        "dafzarr/**/*.py",
        "dafzarr/*.pyi",
        "tests/**/*.py",
    ):
        expected |= {str(p.relative_to(ROOT)) for p in ROOT.glob(pattern)}
    assert {m for m in expected if m.startswith("_ext/") and m.endswith(".pyx")}
    assert {m for m in expected if m.endswith(".pyi")}
    assert {m for m in expected if m.endswith(".h")}
    assert sorted(expected - members) == []
    compiled = sorted(m for m in members if m.endswith((".so", ".pyd", ".c", ".pyc")))
    assert compiled == []
    assert not any(m.startswith("build/") for m in members)


@needs_tree
@pytest.mark.slow
def test_sdist_builds_and_installs(tmp_path: Path) -> None:
    """``python -m build --sdist`` output installs, compiling the extensions from source."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*_SDIST_IGNORE))
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (sdist,) = dist.glob("*.tar.gz")
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--target",
            str(site),
            str(sdist),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dafzarr, dafzarr._posix as p; print(p.__file__); print(p.crc32(b'abc'))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    module_file, crc = probe.stdout.split()
    assert Path(module_file).is_relative_to(site)
    assert int(crc) == 0x352441C2  # zlib.crc32(b"abc")


@needs_tree
def test_version_is_defined_once() -> None:
    """pyproject.toml's version is what the installed metadata, ``__version__`` and
    ``dafzarr --version`` say."""
    import importlib.metadata

    import dafzarr

    version = _pyproject()["project"]["version"]
    assert importlib.metadata.version("dafzarr") == dafzarr.__version__ == version
    script = Path(sys.executable).parent / "dafzarr"  # the installed console script
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == f"dafzarr {version}"
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "dafzarr").rglob("*.py"))
    assert f'"{version}"' not in sources and f"'{version}'" not in sources  # no second copy


def test_xarray_backend_entry_point() -> None:
    """``engine="daf"``: the entry point pyproject.toml registers names xarray's backend
    class, and pydata sparse (the Dataset's sparse matrices) is a test dependency."""
    import xarray.backends

    points = _pyproject()["project"]["entry-points"]["xarray.backends"]
    assert set(points) == {"daf"}
    module, _, name = points["daf"].partition(":")
    backend = getattr(importlib.import_module(module), name)
    assert issubclass(backend, xarray.backends.BackendEntrypoint)
    test = _pyproject()["dependency-groups"]["test"]
    assert any(
        isinstance(r, str) and canonicalize_name(Requirement(r).name) == "sparse" for r in test
    )
