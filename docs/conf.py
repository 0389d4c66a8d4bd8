"""Sphinx configuration of dafzarr's API reference (built from the docstrings)."""

from __future__ import annotations

import importlib.metadata

project = "dafzarr"
author = "dafzarr developers"
release = importlib.metadata.version("dafzarr")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
]

# The API pages list members explicitly; numpydoc renders each docstring.
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # signatures come from the code; numpydoc's sections hold the rest
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
nitpicky = False

html_theme = "alabaster"
exclude_patterns = ["_build"]


def _public_bases(app: object, name: str, obj: type, options: object, bases: list[type]) -> None:
    """Show a class's public bases: a base from a private module (the part of
    ``MmapZipStore`` in ``dafzarr._core.zipstore.handle``) gives way to its own bases."""
    while any("._" in b.__module__ and b.__module__.startswith("dafzarr.") for b in bases):
        bases[:] = [
            p
            for b in bases
            for p in (
                b.__bases__
                if "._" in b.__module__ and b.__module__.startswith("dafzarr.")
                else (b,)
            )
        ]


def setup(app: object) -> None:
    app.connect("autodoc-process-bases", _public_bases)  # type: ignore[attr-defined]
