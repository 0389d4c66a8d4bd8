"""Helpers shared by the test folders, and where the repository's files are."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds ``tests/`` and ``pyproject.toml`` (a clone, or the test phase of a
package build, which ships these two only)."""
