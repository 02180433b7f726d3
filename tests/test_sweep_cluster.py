"""The real `submitit_slurm` launcher end to end, against stand-ins for SLURM's commands
(tests/fakeslurm.py): submission, resources, rows, job ids, preemption with and without requeue,
resume, and the job states a partial sweep reports.

The jobs run in their own processes started by submitit, as on a cluster; only
sbatch/srun/sacct/scancel/scontrol are simulated, reading what submitit writes and answering what
it parses (submitit/slurm/slurm.py). The cluster example runs real (tiny) captures; the preemption
tests, about the scheduler's path, run the fake capture in those job processes (fake_jobs)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.fake_sweep import fake_capture
from yoloprof.errors import UsageError
from yoloprof.profiles.jobstate import count_states, job_states, read_state, write_state
from yoloprof.sweep.app import main
from yoloprof.profiles.rows import RESULTS_NAME, ROW_NAME, ROW_SCHEMA, read_rows, write_row


# tiny real captures (infer, 32 px, 2 timed runs x 2 trials, no trace or module pass, a fixed warm-up)
TINY = ["device=cpu", "size=n", "mode=infer", "imgsz=32", "workers=0", "capture.warmup=1", "capture.runs=2",
        "repeat=2", "capture.trace=false", "capture.modules=false", "capture.warmup_max=1"]
# (the time limit stays the derived one, 11 min: submitit counts any stop signal in a job shorter
# than 10 min as a time-out, which it does not requeue)
SLURM = ["-m", "hydra/launcher=submitit_slurm", "analysis.enabled=false"]


# the `slurm` and `fake_jobs` fixtures are in conftest.py


def preempt(monkeypatch, tmp_path: Path, modes: dict[int, str]) -> None:
    """The fake SLURM preempts each array task of `modes` (`requeue` or `kill`, tests/fakeslurm.py)
    as soon as its job has started (its state file exists); the fake capture holds that first
    attempt until the signal ends it, so the job cannot finish first however loaded the machine is."""
    trigger = f"{tmp_path}/runs/profile/sweeps/*/*/{{task}}/job_state.json"
    monkeypatch.setenv("FAKE_SLURM_PREEMPT", ";".join(f"{task}:{mode}:{trigger}" for task, mode in modes.items()))
    monkeypatch.setenv("FAKE_HOLD_TASK", ",".join(str(task) for task in modes))


def sweep_dirs(root: Path, name: str = "adhoc") -> list[Path]:
    return sorted((root / "runs" / "profile" / "sweeps" / name).iterdir())


@pytest.mark.slow
def test_cluster_example_runs_through_submitit_slurm(slurm, tmp_path, capsys, monkeypatch):
    keys = ["hydra.launcher.partition=fakepart", "hydra.launcher.account=proj", "hydra.launcher.qos=normal",
            "hydra.launcher.constraint=cpu"]
    assert main(["+sweep=cluster_example", *TINY, "batch=1,2", *keys, "analysis.html=false"]) == 0
    out, err = capsys.readouterr()
    [sweep] = sweep_dirs(tmp_path, "cluster_example")
    [job] = slurm.all_jobs()  # one array of two tasks
    # what sbatch was asked for: the cluster's keys, CPUs = workers + 1, no GPU for a CPU sweep,
    # a time limit from the capture settings: (1 warm-up + 2 runs) x 2 trials x 5 s -> 1 min + 10
    params = job["params"]
    assert {k: params[k] for k in ("partition", "account", "qos", "constraint", "cpus-per-task", "time",
                                   "ntasks-per-node", "nodes", "array")} == {
        "partition": "fakepart", "account": "proj", "qos": "normal", "constraint": "cpu",
        "cpus-per-task": "1", "time": "11", "ntasks-per-node": "1", "nodes": "1", "array": "0-1%2"}
    assert not any(k.startswith("gpus") for k in params)
    assert "each job asks for" in err and '"timeout_min": 11' in err
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok", "ok"] and list(df["batch"]) == [1, 2]
    assert list(df["cluster_job_id"]) == [f"{job['id']}_0", f"{job['id']}_1"]
    assert set(df["node"]) == {"fakenode1"} and set(df["launcher"]) == {"submitit_slurm"}
    assert set(df["isolation"]) == {"launcher"} and set(df["concurrency"]) == {"cluster"}
    assert list(df["attempt"]) == [1, 1]
    assert json.loads(df["launcher_resources"][0])["partition"] == "fakepart"
    assert f"{job['id']}_1" in out  # the job table shows the SLURM job ids
    results = pd.read_parquet(sweep / RESULTS_NAME)
    assert len(results) == 2 and list(results.columns)[:len(ROW_SCHEMA.names)] == ROW_SCHEMA.names
    assert (sweep / "analysis").is_dir() and any((sweep / "analysis").iterdir())
    # the same points run locally give the same configurations (hashes) and axes: those come from
    # the job's settings, not from what the capture measures, so the local jobs run the fake
    import yoloprof.capturing.builtin.capture_entry as api
    monkeypatch.setattr(api, "capture", fake_capture)
    assert main(["-m", *TINY, "batch=1,2", "analysis.enabled=false", "launch.isolation=inprocess"]) == 0
    [local] = sweep_dirs(tmp_path)
    loc = read_rows(local)
    for col in ("config_hash", "group_hash", "mode", "batch", "imgsz", "repeat", "runs"):
        assert list(loc[col]) == list(df[col]), col


@pytest.mark.slow
def test_a_requeued_job_is_written_once_and_a_killed_one_is_marked_then_resumed(slurm, fake_jobs, tmp_path,
                                                                                 monkeypatch, capsys):
    """One sweep (each job is a process): job 2 is preempted as soon as it has started (SIGTERM then
    SIGUSR2; submitit checkpoints it and calls `scontrol requeue`; the rerun writes the only row);
    job 1 is killed for good (no requeue): the sweep still gathers the jobs before and after it,
    `analyze` names the lost job, and a resume reruns only that one."""
    preempt(monkeypatch, tmp_path, {1: "kill", 2: "requeue"})
    assert main([*SLURM, *TINY, "batch=1,2,4"]) == 1
    err = capsys.readouterr().err
    assert "1 of 3 jobs wrote no row" in err and "resume=" in err
    [sweep] = sweep_dirs(tmp_path)
    # the requeued job: two attempts, one row, written by the second
    [job] = slurm.all_jobs()
    assert job["tasks"]["2"]["attempts"] == 2 and job["tasks"]["0"]["attempts"] == 1
    df = read_rows(sweep)
    assert list(df["job_num"]) == [0, 2] and list(df["status"]) == ["ok", "ok"] and list(df["attempt"]) == [1, 2]
    fake_jobs(df)
    assert sorted(p.parent.name for p in sweep.glob(f"*/{ROW_NAME}")) == ["0", "2"]
    assert read_state(sweep / "2")["state"] == "done" and read_state(sweep / "2")["attempt"] == 2
    # the killed job
    assert read_state(sweep / "1")["state"] == "preempted"
    states = job_states(sweep)
    assert {n: s["state"] for n, s in states.items()} == {0: "done", 1: "preempted", 2: "done"}
    # analyze on the partial sweep names the job and what became of it (exit 1: a row is missing)
    from yoloprof.cli import main as cli
    assert cli(["analyze", str(sweep), "--json", "--no-html"]) == 1
    report = json.loads(capsys.readouterr().out)
    [lost] = [f for f in report["job_folders"] if f["state"] == "missing_row"]
    assert lost["job"] == "1" and lost["detail"].startswith("preempted by the scheduler")
    assert "fakenode1" in lost["detail"] and "cluster job " in lost["detail"]
    kept = {n: (sweep / n / ROW_NAME).read_bytes() for n in ("0", "2")}
    monkeypatch.delenv("FAKE_SLURM_PREEMPT")
    monkeypatch.delenv("FAKE_HOLD_TASK")
    assert main([f"resume={sweep}"]) == 0
    err = capsys.readouterr().err
    assert "2 of 3 jobs have an ok row; running 1:" in err and "job 1: " in err and "batch=2" in err
    assert {n: (sweep / n / ROW_NAME).read_bytes() for n in ("0", "2")} == kept  # untouched
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok"] * 3 and list(df["batch"]) == [1, 2, 4]
    assert list(df["attempt"]) == [1, 2, 2]
    fake_jobs(df)


@pytest.mark.parametrize("args, words", [
    (["device=0"], "needs a GPU per job"),
    (["device=0", "hydra.launcher.gpus_per_task=1", "hydra.launcher.tasks_per_node=2"], "2 tasks per job"),
    (["device=cuda:1", "hydra.launcher.gpus_per_task=1"], "does not exist in a job with 1 GPU"),
])
def test_gpu_sweep_on_slurm_gets_one_gpu_per_job_or_is_refused(slurm, tmp_path, args, words):
    with pytest.raises(UsageError, match=words):
        main([*SLURM, "batch=1,2", "workers=0", *args])
    assert not slurm.all_jobs()  # refused before anything was submitted


def test_job_states_of_a_partial_sweep(tmp_path):
    """pending (planned, never started), running, failed, done, preempted - from the manifest,
    the state files and the rows, as a cluster sweep leaves them while it runs."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    planned = [{"job_num": n, "overrides": [f"batch={n + 1}"]} for n in range(5)]
    (sweep / "yoloprof_sweep.json").write_text(json.dumps({"planned": planned}))
    write_state(sweep / "0", 0, "done", cluster_job_id="7_0", node="n1")
    write_row(sweep / "0" / ROW_NAME, {"job_num": 0, "status": "ok"})
    write_state(sweep / "1", 1, "running", cluster_job_id="7_1", node="n2")
    write_state(sweep / "2", 2, "failed")
    write_row(sweep / "2" / ROW_NAME, {"job_num": 2, "status": "failed", "error": "boom"})
    write_state(sweep / "3", 3, "preempted", cluster_job_id="7_3")
    states = job_states(sweep)
    assert {n: s["state"] for n, s in states.items()} == {
        0: "done", 1: "running", 2: "failed", 3: "preempted", 4: "pending"}
    assert states[1]["node"] == "n2" and states[1]["cluster_job_id"] == "7_1"
    assert states[4]["overrides"] == ["batch=5"]
    from yoloprof.analysis.inventory import read_sweep  # what analyze lists for the jobs without a row
    _, folders = read_sweep(sweep)
    assert {f.job: f.detail for f in folders if f.state == "missing_row"} == {
        "1": "running (node n2, cluster job 7_1)",
        "3": "preempted by the scheduler; rerun it with resume= (cluster job 7_3)",
        "4": "pending (planned, not started)"}
    counts = count_states(states)
    assert (counts["done"], counts["running"], counts["failed"], counts["pending"], counts["preempted"]) == \
        (1, 1, 1, 1, 1)
