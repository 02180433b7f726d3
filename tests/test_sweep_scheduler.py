"""What the scheduler says became of a task (cancelled, timed out, node failure), also where
sacct is unavailable, and a resume that submits only the tasks that need to run - through the
SLURM stand-ins of tests/fakeslurm.py (the real submitit_slurm launcher, jobs in their own
processes running the fake capture)."""

from __future__ import annotations

import pytest

from helpers.fake_sweep import fake_step_ms
from yoloprof.profiles.jobstate import describe, read_state
from yoloprof.profiles.rows import ROW_NAME, read_rows
from yoloprof.sweep import scheduler_state
from yoloprof.sweep.app import main

# the fake capture in the job processes (fixture `fake_jobs`), 32 px inference, no trace pass
ARGS = ["-m", "hydra/launcher=submitit_slurm", "analysis.enabled=false", "device=cpu", "mode=infer",
        "imgsz=32", "workers=0", "capture.warmup=1", "capture.runs=2", "repeat=2", "capture.trace=false"]


def _runner(answers: dict[str, str]):
    """A stand-in for running sacct/squeue/scontrol: each answers its text, or fails (absent)."""
    import subprocess

    def run(command: list[str]) -> str:
        if command[0] not in answers:
            raise subprocess.CalledProcessError(1, command)
        return answers[command[0]]
    return run


def test_query_asks_sacct_then_squeue_then_scontrol():
    assert scheduler_state.query("7_1", _runner({"sacct": "7_1|CANCELLED by 1000\n7_1.batch|CANCELLED\n"})) \
        == "CANCELLED"
    assert scheduler_state.query("7_1", _runner({"squeue": "7_0|RUNNING\n7_1|TIMEOUT\n"})) == "TIMEOUT"
    assert scheduler_state.query("7_1", _runner({"scontrol": "JobId=7_1 JobState=NODE_FAIL Reason=x"})) \
        == "NODE_FAIL"
    assert scheduler_state.query("7_1", _runner({})) is None
    assert [scheduler_state.FINAL[s] for s in ("CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED")] == \
        ["cancelled", "timed_out", "node_failure", "preempted"]


@pytest.mark.slow
def test_cancel_timeout_node_failure_without_sacct_then_resume_submits_those_alone(
        slurm, fake_jobs, tmp_path, monkeypatch, capsys):
    trigger = f"{tmp_path}/runs/profile/sweeps/*/*/{{task}}/job_state.json"
    monkeypatch.setenv("FAKE_SLURM_PREEMPT", ";".join(f"{t}:{mode}:{trigger}" for t, mode in
                                                       ((0, "node_fail"), (1, "cancel"), (3, "timeout"))))
    monkeypatch.setenv("FAKE_HOLD_TASK", "0,1,3")
    monkeypatch.setenv("FAKE_SLURM_NO_SACCT", "1")  # accounting off: squeue/scontrol must tell
    monkeypatch.setattr(scheduler_state, "ASK_S", 0.3)
    monkeypatch.setattr(scheduler_state, "RESULT_GRACE_S", 0.3)
    assert main([*ARGS, "batch=1,2,3,4"]) == 1
    [sweep] = sorted((tmp_path / "runs" / "profile" / "sweeps" / "adhoc").iterdir())
    states = {n: read_state(sweep / str(n))["state"] for n in range(4)}
    assert states == {0: "node_failure", 1: "cancelled", 2: "done", 3: "timed_out"}
    assert describe(read_state(sweep / "1")).startswith("cancelled on the scheduler")
    kept = {n: (sweep / n / ROW_NAME).read_bytes() for n in ("2",)}
    for var in ("FAKE_SLURM_PREEMPT", "FAKE_HOLD_TASK"):
        monkeypatch.delenv(var)
    before = {job["id"] for job in slurm.all_jobs()}
    capsys.readouterr()
    assert main([f"resume={sweep}"]) == 0
    assert "1 of 4 jobs have an ok row; running 3:" in capsys.readouterr().err
    submitted = [job for job in slurm.all_jobs() if job["id"] not in before]
    assert sorted(len(job["tasks"]) for job in submitted) == [1, 2]  # jobs 0-1, then job 3 alone
    assert {n: (sweep / n / ROW_NAME).read_bytes() for n in ("2",)} == kept
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok"] * 4 and list(df["batch"]) == [1, 2, 3, 4]
    fake_jobs(df)
    assert all(row.step_ms_samples[0] == pytest.approx(fake_step_ms(row.batch, row.imgsz, row.trial, 0))
               for row in df.itertuples())
