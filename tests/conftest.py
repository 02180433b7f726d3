"""Shared fixtures (helpers that are not fixtures live in tests/helpers/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import helpers` from any test module

from helpers.paths import TRACES  # noqa: E402


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    if not TRACES.is_dir():
        pytest.skip("shared/fixtures/traces is not beside this checkout")
    return TRACES


@pytest.fixture(autouse=True, scope="session")
def _private_machine_registry(tmp_path_factory):
    """Sweep jobs take a machine-wide lock (yoloprof/sweep/machine.py); each test session gets its
    own, so test runs started side by side do not wait for each other's jobs."""
    os.environ["YOLOPROF_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("yoloprof-runtime"))
    yield
