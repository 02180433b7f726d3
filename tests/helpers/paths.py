"""Where the real trace fixtures are, and how to run the CLI as a user does."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

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


CLI_ENV = {"NO_COLOR": "1", "COLUMNS": "160"}  # what run_cli and run_main set for every command


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run `yoloprof ARGS` in a subprocess exactly as a user would, capturing text output."""
    full_env = {**os.environ, **CLI_ENV, **(env or {})}
    full_env.pop("YOLOPROF_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "yoloprof", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout, input=input)


@contextlib.contextmanager
def _environ(env: dict, cwd: Path | None) -> Iterator[None]:
    """`env` set (YOLOPROF_DEBUG unset) and `cwd` current for the block, then both restored."""
    saved, here = dict(os.environ), os.getcwd()
    os.environ.update({k: str(v) for k, v in env.items()})
    os.environ.pop("YOLOPROF_DEBUG", None)
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


def run_main(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`yoloprof ARGS` through the CLI's own `main` in this process: the same parsing, dispatch,
    one-line errors and exit codes as `run_cli`, without paying a fresh interpreter and torch import
    per call. Output is captured as text (not a terminal, like a pipe); the result has run_cli's shape.
    Use run_cli where the process itself is the point (start-up imports, signals, a real user run)."""
    from yoloprof.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _environ({**CLI_ENV, **(env or {})}, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(["yoloprof", *map(str, args)], code, out.getvalue(), err.getvalue())
