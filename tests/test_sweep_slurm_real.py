"""On a real one-node SLURM (`.ci/slurm_up.sh`; skipped when none is up): a task cancelled with
`scancel` mid-sweep is named as cancelled (accounting is off there, so squeue/scontrol tell), and a
resume submits that task alone while the finished rows stay byte-identical. The jobs run the fake
capture in their own processes (tests/helpers/fake_site)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from helpers.fake_sweep import driver_cmd, fake_jobs_env, write_driver
from yoloprof.profiles.jobstate import read_state
from yoloprof.profiles.rows import ROW_NAME, read_rows


def _slurm_up() -> bool:
    if not shutil.which("sinfo") or not shutil.which("sbatch"):
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(state.strip().rstrip("*") in ("idle", "mix") and not state.strip().endswith("*")
               for state in out.splitlines())


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _slurm_up(), reason="no real SLURM up (.ci/slurm_up.sh)")]
ARGS = ["-m", "hydra/launcher=submitit_slurm", "device=cpu", "mode=infer", "imgsz=32", "workers=0",
        "capture.warmup=1", "capture.runs=2", "capture.trace=false", "analysis.enabled=false", "batch=1,2,3"]


def _array_tasks(array_id: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-t", "all", "-j", array_id, "-o", "%i"], capture_output=True,
                         text=True, timeout=30).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("accounting", ["on", "off"])
def test_scancel_mid_sweep_is_named_cancelled_and_resume_submits_that_task_alone(tmp_path, accounting):
    """`off`: a `sacct` that fails as it does without slurmdbd comes first on PATH, so only squeue
    and scontrol can say what became of the task (submitit alone would wait for it forever)."""
    driver = write_driver(tmp_path)
    env = {**os.environ, **fake_jobs_env(), "FAKE_HOLD_BATCH": "2", "NO_COLOR": "1"}
    if accounting == "off":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2\n"
                                       "exit 1\n")
        (bin_dir / "sacct").chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env.pop("YOLOPROF_SWEEP_ID", None)
    proc = subprocess.Popen(driver_cmd(driver, *ARGS), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    state = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(tmp_path.glob("runs/profile/sweeps/adhoc/*/1/job_state.json"))
        state = json.loads(found[0].read_text()) if found else None
        if state and state.get("cluster_job_id"):
            break
        time.sleep(0.2)
    assert state and state.get("cluster_job_id"), "job 1 never started on the cluster"
    subprocess.run(["scancel", state["cluster_job_id"]], check=True, timeout=30)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    [sweep] = [p for p in tmp_path.glob("runs/profile/sweeps/adhoc/*") if p.is_dir()]
    assert read_state(sweep / "1")["state"] == "cancelled"
    kept = {n: (sweep / n / ROW_NAME).read_bytes() for n in ("0", "2")}
    env.pop("FAKE_HOLD_BATCH")
    done = subprocess.run(driver_cmd(driver, f"resume={sweep}"), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert {n: (sweep / n / ROW_NAME).read_bytes() for n in ("0", "2")} == kept
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok"] * 3
    new_id = str(df["cluster_job_id"][1]).split("_")[0]
    assert new_id != state["cluster_job_id"].split("_")[0]
    assert _array_tasks(new_id) in ([f"{new_id}_0"], [new_id])  # one task submitted: job 1 alone
