"""Write requirements.lock: every dependency of yoloprof (runtime, test and the launcher extras)
pinned for CPython 3.10-3.13 on Linux, in one universal file with environment markers.

Inputs come from pyproject.toml, so the ranges have one home. torch is left out of the resolution:
`make setup` installs it first from `TORCH` (the CPU build by default), and resolving torch from the
registry would pin the multi-GB CUDA libraries its registry metadata names. Its own dependencies are
taken from the torch installed in the running interpreter and pinned here like the rest.

Run with `make lock` (a deliberate upgrade: run `make test` after it and commit both).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("test", "submitit", "joblib", "optuna")
PYTHON_MIN = "3.10"


def inputs() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project.get("optional-dependencies", {}).get(extra, [])
    torch_deps = [r for r in requires("torch") or [] if "extra ==" not in r]
    keep = [r for r in reqs + torch_deps if Requirement(r).name != "torch"]
    return sorted(set(keep), key=str.lower)


def main() -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as fh:
        fh.write("\n".join(inputs()) + "\n")
    cmd = [sys.executable, "-m", "uv", "pip", "compile", fh.name, "--universal",
           "--python-version", PYTHON_MIN, "--no-header",
           "--no-annotate", "-o", str(ROOT / "requirements.lock")]
    done = subprocess.run(cmd)
    Path(fh.name).unlink()
    if done.returncode == 0:
        text = (ROOT / "requirements.lock").read_text()
        head = ("# Pinned dependencies of yoloprof for CPython 3.10-3.13 on Linux, written by `make lock`\n"
                "# (tools/lock.py) from pyproject.toml. torch is installed separately (Makefile TORCH).\n")
        (ROOT / "requirements.lock").write_text(head + text)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
