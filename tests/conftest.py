"""Shared fixtures: the ../shared data folder and deterministic RNGs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VJBOOST_SHARED", REPO.parent / "shared"))

settings.register_profile(
    "vjboost", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("vjboost")


@pytest.fixture
def shared_dir() -> Path:
    """The ../shared folder; the test is skipped when it is absent (a user's fresh clone)."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data folder not found at {SHARED} (set VJBOOST_SHARED to point at it)")
    return SHARED


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
