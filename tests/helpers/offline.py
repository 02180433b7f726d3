"""Run the CLI as a user would, with the network unreachable, and see every attempt to reach it.

Two layers: the process runs in a network namespace of its own (`unshare -n`: no interface but a
down loopback, so nothing can be reached whatever the code does) where the machine allows it, and
every lookup or connection that Python code attempts is logged by tests/helpers/offline_site and
refused. A library that catches its failed download and carries on (Ultralytics' online checks do)
is still caught by the log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.paths import CLI_ENV

SITE = Path(__file__).resolve().parent / "offline_site"


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


UNSHARE = _unshare_works()


def run_offline(*args: str, tmp: Path, timeout: float = 600) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`yoloprof ARGS` with the network unreachable; returns (result, attempts logged)."""
    log = tmp / "network_attempts.log"
    env = {**os.environ, **CLI_ENV, "YOLOPROF_TEST_NET_LOG": str(log),
           "YOLO_CONFIG_DIR": str(tmp / "ultralytics_config"), "HOME": str(tmp / "home"),
           "PYTHONPATH": os.pathsep.join([str(SITE), str(Path(__file__).resolve().parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    env.pop("YOLOPROF_DEBUG", None)
    (tmp / "home").mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "yoloprof", *map(str, args)]
    done = subprocess.run((["unshare", "-n"] if UNSHARE else []) + cmd, cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=timeout)
    attempts = log.read_text().splitlines() if log.exists() else []
    return done, attempts
