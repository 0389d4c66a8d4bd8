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
