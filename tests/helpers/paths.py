"""Where the real trace fixtures are, and how to run the CLI as a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The Hydra config and the experiment files: top-level folders of the repository (design card).
CONF = REPO / "conf"
SWEEPS = REPO / "sweeps"
# The real GPU traces live beside the checkout in shared/, never inside the repo.
TRACES = REPO.parent / "shared" / "fixtures" / "traces"


def trace_path(name: str) -> Path:
    """A fixture trace by file name; skips the calling test when the folder is absent."""
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"fixture trace {name} is not available")
    return path


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run `yoloprof ARGS` in a subprocess exactly as a user would, capturing text output."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", **(env or {})}
    full_env.pop("YOLOPROF_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "yoloprof", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout, input=input)
