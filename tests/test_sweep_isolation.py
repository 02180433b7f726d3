"""How sweep jobs run: a fresh worker per job, the job's own memory growth, the machine lock and
registry, interleaved job order, planning cost, Ctrl-C and resume's manifest check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.fixtures_capture import LEAK_MIB, leaky_capture
import yoloprof.capturing.builtin.capture_entry as capture_api
from yoloprof.errors import UsageError
from yoloprof.profiles.jobstate import read_state
from yoloprof.sweep import launchers, machine
from yoloprof.sweep.app import main
from yoloprof.sweep.plan import interleave
from yoloprof.profiles.rows import RESULTS_NAME, ROW_NAME, growth_columns, read_rows
from yoloprof.sweep.worker import WorkerError, run_in_worker

QUIET = ["device=cpu", "workers=0", "analysis.enabled=false"]


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_isolated_jobs_do_not_measure_each_others_leftovers(leaky_sweep_env, isolation):
    assert main(["-m", "trial=range(0,4)", f"launch.isolation={isolation}", *QUIET]) == 0
    df = read_rows(leaky_sweep_env())
    assert set(df["status"]) == {"ok"} and set(df["isolation"]) == {isolation}
    peaks, growth = list(df["peak_mem_mb"]), list(df["peak_mem_growth_mib"])
    if isolation == "process":  # each job starts from the same clean worker: flat absolute peaks,
        # and every job's own growth is its own allocation, whatever ran before it
        assert max(peaks) - min(peaks) < 8, peaks
        assert all(LEAK_MIB - 4 < g < LEAK_MIB + 8 for g in growth), growth
    else:  # one shared process: the jobs' leftovers pile up in the absolute peak. (Per job, how
        # much of an allocation shows as new resident memory depends on what the process freed
        # before - a heap that already holds freed pages reuses them - so only the sum is pinned.)
        assert peaks[-1] - peaks[0] > LEAK_MIB - 4, peaks
        assert peaks == sorted(peaks), peaks


def test_growth_is_peak_minus_the_starting_footprint():
    profile = {"metrics": {"peak_mem_mb": {"value": 505.0, "samples": [500.0, 510.0]}}}
    assert growth_columns(profile, 400.0) == {"peak_mem_growth_mib": 105.0,
                                              "peak_mem_growth_mib_samples": [100.0, 110.0]}
    assert growth_columns(profile, None)["peak_mem_growth_mib"] is None


def _fails(settings, out_dir):
    raise ValueError("model does not build")


def _dies(settings, out_dir):
    os.kill(os.getpid(), signal.SIGKILL)


def _sleeps(settings, out_dir):
    Path(out_dir, "pid").write_text(str(os.getpid()))
    time.sleep(60)


class _Settings:
    device = "cpu"


def test_worker_reports_errors_and_deaths_as_one_line(tmp_path):
    with pytest.raises(WorkerError, match="^ValueError: model does not build$") as info:
        run_in_worker(_fails, _Settings(), tmp_path)
    assert "Traceback" in info.value.trace and "_fails" in info.value.trace
    with pytest.raises(WorkerError, match=r"worker process died \(signal 9\)"):
        run_in_worker(_dies, _Settings(), tmp_path)


def test_ctrl_c_while_a_worker_runs_kills_it(tmp_path):
    def interrupt(*_):  # Ctrl-C once the worker runs the job
        if not (tmp_path / "pid").exists():
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        deadline = time.time() + 50
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            run_in_worker(_sleeps, _Settings(), tmp_path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.time() < deadline
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, and reaped


def test_ctrl_c_during_a_sweep_exits_130_with_one_line(leaky_sweep_env, monkeypatch, capsys):
    calls = []

    def capture(settings, out_dir, **_):
        calls.append(settings.batch)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return leaky_capture(settings, out_dir)

    monkeypatch.setattr(capture_api, "capture", capture)
    assert main(["-m", "batch=1,2,3", "launch.isolation=inprocess", *QUIET]) == 130
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("yoloprof sweep: interr")]
    sweep = leaky_sweep_env()
    assert err == [f"yoloprof sweep: interrupted after 1 of 3 jobs; nothing half-written; continue with: "
                   f"yoloprof sweep resume={sweep.relative_to(Path.cwd())}"]
    assert (sweep / "0" / ROW_NAME).is_file() and not (sweep / "1" / ROW_NAME).exists()
    assert read_state(sweep / "1")["state"] == "interrupted" and not (sweep / "2").exists()
    assert not (sweep / RESULTS_NAME).exists() and not list(sweep.rglob("*.tmp"))


def test_resume_refuses_an_edited_manifest(leaky_sweep_env):
    assert main(["-m", "batch=1,2", "launch.isolation=inprocess", *QUIET]) == 0
    sweep = leaky_sweep_env()
    path = sweep / "yoloprof_sweep.json"
    manifest = json.loads(path.read_text())
    manifest["overrides"].append("model._target_=os.system")
    path.write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="does not match its config_hash.*trusted like code"):
        main([f"resume={sweep}"])


def test_interleave_alternates_configurations_and_cancels_a_linear_drift():
    hydra_order = [[f"amp={a}", f"trial={t}"] for a in ("false", "true") for t in range(4)]
    jobs = interleave(hydra_order)
    assert [(j[0][4:], int(j[1][6:])) for j in jobs] == [
        ("false", 0), ("true", 0), ("true", 1), ("false", 1), ("false", 2), ("true", 2), ("true", 3), ("false", 3)]
    # a drift of d per job adds d * position: both sides get the same total (hand sum: 14 and 14)
    positions = {"false": 0, "true": 0}
    for k, job in enumerate(jobs):
        positions[job[0][4:]] += k
    assert positions == {"false": 14, "true": 14}
    no_trials = [["batch=1"], ["batch=2"]]
    assert interleave(no_trials) == no_trials


def test_order_as_given_keeps_hydras_order(leaky_sweep_env):
    assert main(["-m", "precision=float32,bfloat16", "trial=0,1", "launch.order=as_given",
                 "launch.isolation=inprocess", *QUIET]) == 0
    df = read_rows(leaky_sweep_env())
    assert [(r.precision, r.trial) for r in df.itertuples()] == \
        [("float32", 0), ("float32", 1), ("bfloat16", 0), ("bfloat16", 1)]


def test_a_thousand_jobs_are_planned_with_one_composition_per_configuration(leaky_sweep_env, monkeypatch):
    """2 configurations x 500 trials: the grid is validated with 2 compositions, not 1,000 (the wall
    time to the first job is measured by bench/bench_sweep.py --plan; timing asserts would be
    noise on a shared test machine)."""
    import yoloprof.sweep.plan as plan

    started, composed = [], []
    real = plan.validate_grid

    def counting(jobs, compose):
        composed.append(real(jobs, compose))
        return composed[-1]

    def first_job(settings, out_dir, **_):
        started.append(settings.trial)
        raise KeyboardInterrupt  # stop at the first job: only planning is exercised

    monkeypatch.setattr(plan, "validate_grid", counting)
    monkeypatch.setattr(capture_api, "capture", first_job)
    assert main(["-m", "precision=float16,bfloat16", "trial=range(0,500)", "launch.isolation=inprocess",
                 *QUIET]) == 130
    assert composed == [2] and started == [0]
    manifest = json.loads((leaky_sweep_env() / "yoloprof_sweep.json").read_text())
    assert manifest["jobs"] == 1000 and len(manifest["planned"]) == 1000
    # interleaved: A B B A ... across the 1,000 planned jobs
    assert [p["overrides"][0] for p in manifest["planned"][:4]] == [
        "precision=float16", "precision=bfloat16", "precision=bfloat16", "precision=float16"]


def test_the_launcher_reuses_the_configs_validation_composed(tmp_path, monkeypatch):
    """Each job of a 4-job grid is composed once (validation), not twice (and the launcher's own
    composition again); every job's saved config is the one a fresh composition gives (the reuse
    switched off: sweeper.REUSED_CONFIGS = 0)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    from helpers.fake_sweep import fake_capture
    from yoloprof.sweep import sweeper

    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    calls: list[list[str]] = []
    real = ConfigLoaderImpl.load_sweep_config

    def counting(self, master, overrides):
        calls.append(list(overrides))
        return real(self, master, overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counting)
    saved = {}
    for reused in (sweeper.REUSED_CONFIGS, 0):
        monkeypatch.setattr(sweeper, "REUSED_CONFIGS", reused)
        monkeypatch.chdir((tmp_path / str(reused)).mkdir() or tmp_path / str(reused))
        calls.clear()
        assert main(["-m", "batch=1,2", "imgsz=64,128", "launch.isolation=inprocess", *QUIET]) == 0
        assert len(calls) == (4 if reused else 8), calls
        [sweep] = (tmp_path / str(reused) / "runs" / "profile" / "sweeps" / "adhoc").iterdir()
        saved[reused] = [(sweep / str(n) / ".hydra" / "config.yaml").read_text().replace(sweep.name, "<id>")
                         for n in range(4)]
    assert saved[sweeper.REUSED_CONFIGS] == saved[0]


def test_a_grid_that_interpolates_trial_is_composed_per_job(tmp_path):
    from yoloprof.config.compose import compose_job
    from yoloprof.sweep.plan import validate_grid

    calls = []

    def compose(job):
        calls.append(job)
        return compose_job([*job, "device=cpu", "seed=${trial}"])

    jobs = [[f"trial={t}"] for t in range(3)]
    assert validate_grid(jobs, compose) == 3 and len(calls) == 3


def test_machine_lock_refuses_or_waits_and_gpus_share_the_machine(tmp_path, monkeypatch):
    monkeypatch.setenv(machine.RUNTIME_ENV, str(tmp_path))
    with machine.timed_slot("cpu", "wait", "a"):
        with pytest.raises(machine.MachineBusy, match="another timed capture holds this machine"):
            with machine.timed_slot("cpu", "refuse", "b"):
                pass
        with machine.timed_slot("cpu", "shared", "c") as rec:  # asked for in so many words
            assert rec.machine_wait_s == 0
    with machine.timed_slot("0", "refuse", "gpu0"):
        with machine.timed_slot("1", "refuse", "gpu1"):  # another GPU: both may time
            with pytest.raises(machine.MachineBusy):
                with machine.timed_slot("cpu", "refuse", "cpu job"):  # but not a CPU job
                    pass
        with pytest.raises(machine.MachineBusy):
            with machine.timed_slot("cuda:0", "refuse", "same gpu"):
                pass
    # `wait`: a second process waits until the first releases the machine
    code = ("import sys, time; sys.path.insert(0, %r); from yoloprof.sweep import machine\n"
            "with machine.timed_slot('cpu', 'wait', 'late') as rec: print(rec.machine_wait_s)")
    with machine.timed_slot("cpu", "wait", "early"):
        proc = subprocess.Popen([sys.executable, "-c", code % str(Path(__file__).parents[1])],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert proc.poll() is None  # still waiting
    out, err = proc.communicate(timeout=60)
    assert float(out) > 0 and "late waits for another timed capture on this machine (pid" in err


def test_registry_counts_live_captures_and_drops_dead_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(machine.RUNTIME_ENV, str(tmp_path))
    registry = tmp_path / machine.REGISTRY
    registry.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        for proc in (live, dead):
            (registry / f"{proc.pid}.json").write_text(json.dumps({"pid": proc.pid, "label": "other"}))
        with machine.timed_slot("cpu", "shared", "me") as rec:
            assert rec.other_captures == 1 and rec.load_avg_1m == pytest.approx(os.getloadavg()[0], abs=2)
        assert not (registry / f"{dead.pid}.json").exists() and (registry / f"{live.pid}.json").exists()
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("cfg, policy, want", [
    ({"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}, "wait", "serial"),
    ({"_target_": "x.JoblibLauncher", "n_jobs": 1}, "wait", "serial"),
    ({"_target_": "x.JoblibLauncher", "n_jobs": -1}, "wait", "serialised"),
    ({"_target_": "x.LocalLauncher"}, "shared", "concurrent"),
    ({"_target_": "x.SlurmLauncher"}, "wait", "cluster"),
])
def test_concurrency_recorded_per_launcher(cfg, policy, want):
    assert launchers.concurrency(cfg, policy) == want
    note = launchers.parallel_note("l", cfg, policy)
    assert (note is not None) == (want in ("serialised", "concurrent"))
