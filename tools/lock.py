"""Write requirements.lock: every dependency of yoloprof (runtime, test and the launcher extras)
pinned for CPython 3.10-3.13 on Linux, in one universal file with environment markers.

Inputs come from pyproject.toml, so the ranges have one home. torch and torchvision are not written
to the lock: `make setup` installs them first from `TORCH` (the Makefile's pins, passed here in the
environment), and the resolution is constrained to those same pins, so that a family's package
that needs torchvision (ultralytics, libreyolo) is resolved against the installed build instead of
the registry's newest. torch's own dependencies are taken from the torch installed in the running
interpreter and pinned here like the rest.

Run with `make lock` (a deliberate upgrade: run `make test` after it and commit both).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("test", "submitit", "joblib", "optuna", "torchvision", "ultralytics", "libreyolo", "onnx", "openvino")
BESIDE_TORCH = ("torch", "torchvision")  # installed by `make setup` from TORCH, never from the lock
PYTHON_MIN = "3.10"


def inputs() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project.get("optional-dependencies", {}).get(extra, [])
    torch_deps = [r for r in requires("torch") or [] if "extra ==" not in r]
    keep = [r for r in reqs + torch_deps if Requirement(r).name not in BESIDE_TORCH]
    return sorted(set(keep), key=str.lower)


def torch_pins() -> list[str]:
    """The Makefile's TORCH (e.g. `torch==2.14.1 torchvision==0.29.1`), as constraints."""
    pins = os.environ.get("TORCH", "").split()
    if not pins or any(Requirement(p).name not in BESIDE_TORCH for p in pins):
        sys.exit("tools/lock.py: run it with `make lock` (TORCH names the torch and torchvision pins)")
    return pins


def main() -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as fh:
        fh.write("\n".join(inputs()) + "\n")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as ch:
        ch.write("\n".join(torch_pins()) + "\n")
    cmd = [sys.executable, "-m", "uv", "pip", "compile", fh.name, "--universal",
           "--python-version", PYTHON_MIN, "--no-header", "--constraint", ch.name,
           *(arg for name in BESIDE_TORCH for arg in ("--no-emit-package", name)),
           "--no-annotate", "-o", str(ROOT / "requirements.lock")]
    done = subprocess.run(cmd)
    Path(fh.name).unlink()
    Path(ch.name).unlink()
    if done.returncode == 0:
        text = (ROOT / "requirements.lock").read_text()
        head = ("# Pinned dependencies of yoloprof for CPython 3.10-3.13 on Linux, written by `make lock`\n"
                "# (tools/lock.py) from pyproject.toml. torch and torchvision are installed first (Makefile TORCH).\n")
        (ROOT / "requirements.lock").write_text(head + text)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
