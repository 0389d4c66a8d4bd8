"""Fixtures and test-suite configuration (never import from this module)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None)
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("nightly", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def fixtures_dir() -> Path:
    """Golden files written by other implementations (absent in a user's clone: skip)."""
    for parent in Path(__file__).resolve().parents[1:4]:
        path = parent / "shared" / "fixtures"
        if path.is_dir():
            return path
    pytest.skip("golden fixtures (../shared/fixtures) are not available")
