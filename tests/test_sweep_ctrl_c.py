"""Ctrl-C stops a real sweep (issue: "Ctrl-C does not stop a sweep").

The sweep runs as a user's script or CI step starts it in the background: a shell without job
control hands it SIGINT *ignored*, which Python keeps. SIGINT then comes as a terminal sends it (to
the whole process group: the launching process, its forkserver, the job's worker and its DataLoader
workers) or to the launching process alone (`kill -INT PID`). Either way: exit 130, the running job
marked `interrupted`, the manifest's state `interrupted`, no later job started, no process of the
sweep left running, and the line names the `resume=` that goes on with the job that was stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers.fake_sweep import TINY
from yoloprof.defs import files

# a job long enough to be stopped in the middle of its timed steps (two DataLoader workers: the
# processes a killed worker used to leave behind)
GRID = ["-m", "batch=1,2", *[a for a in TINY if not a.startswith(("capture.steps", "workers"))],
        "capture.steps=150", "workers=2", "capture.trace=false", "capture.modules=false", "launch.isolation=process", "launch.machine=shared"]


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `cmd &` in a script starts it


def _state(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("state")
    except (OSError, ValueError):
        return None


def _ours(mark: str) -> list[int]:
    """Live processes that carry this test's mark in their environment (the sweep's descendants)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if mark.encode() in (proc / "environ").read_bytes():
                stat = (proc / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":  # a zombie is already dead
                    pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _start(tmp_path: Path, mark: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1", "YOLOPROF_CTRL_C_MARK": mark}
    return subprocess.Popen([sys.executable, "-m", "yoloprof", "sweep", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_ignoring_sigint, start_new_session=True)


def _wait_running(tmp_path: Path, proc: subprocess.Popen, mark: str, timeout: float = 90.0) -> Path:
    """The first job's folder once its capture is under way (its state `running`; the launching
    process, its forkserver and resource tracker, the job's worker and its loader workers up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = list(tmp_path.glob("runs/profile/sweeps/adhoc/*/0/job_state.json"))
        if states and _state(states[0]) == "running" and len(_ours(mark)) >= 5:
            time.sleep(1.0)  # inside the timed steps
            return states[0].parent
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the first job never started")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("to", ["group", "main"])
def test_ctrl_c_stops_a_background_sweep_and_names_its_resume(tmp_path, to):
    mark = uuid.uuid4().hex
    proc = _start(tmp_path, mark, *GRID)
    job = _wait_running(tmp_path, proc, mark)
    if to == "group":
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C
    else:
        os.kill(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the sweep went on after SIGINT")
    assert proc.returncode == 130, out
    assert "Traceback" not in out, out
    assert "interrupted after 0 of 2 jobs" in out
    sweep = job.parent
    assert _state(sweep / files.MANIFEST) == "interrupted"
    assert _state(job / "job_state.json") == "interrupted"
    assert not (sweep / "1").exists()  # no later job started
    deadline = time.monotonic() + 10
    while _ours(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ours(mark) == []  # the worker and its DataLoader workers went with the sweep
    # resume goes on from here: the job left `interrupted` is one resume runs again (the resume itself,
    # after an interrupt and a SIGKILL, is run in tests/test_sweep_cli.py and test_sweep_tune.py)
    assert f"continue with: yoloprof sweep resume={sweep.relative_to(tmp_path)}" in out or f"resume={sweep}" in out
