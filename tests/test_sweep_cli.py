"""`yoloprof sweep` as a user runs it: subprocesses, exit codes, SIGKILL mid-sweep, concurrent
starts, real captures for every packaged sweep file, submitit, and the installed wheel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers.paths import CLI_ENV as ENV, REPO, SWEEPS, run_cli, run_main
from helpers.fake_sweep import TINY, driver_cmd, fake_jobs_env, fake_step_ms, write_driver
from yoloprof.profiles.rows import RESULTS_NAME, ROW_NAME, read_rows


def sweep_dirs(root: Path, name: str = "adhoc") -> list[Path]:
    base = root / "runs" / "profile" / "sweeps" / name
    return sorted(base.iterdir()) if base.is_dir() else []


@pytest.mark.parametrize("args, word, as_a_user", [(["precision=float8"], "precision", True),
                                                   (["+bacth=4"], "did you mean 'batch'", False),
                                                   (["+sweep=nope"], "unknown sweep 'nope'", False)])
def test_bad_input_exit_2_one_line(tmp_path, args, word, as_a_user):
    """The first case as a user runs it (a subprocess), the others through the CLI's own main."""
    proc = (run_cli if as_a_user else run_main)("sweep", *args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("yoloprof: error:") and word in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_python_dash_m_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "yoloprof.sweep", "size=x", "device=cpu"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, **ENV})
    assert proc.returncode == 2 and "size" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_sigkill_mid_sweep_keeps_finished_rows_and_resume_finishes(tmp_path):
    driver = write_driver(tmp_path)
    # jobs in the sweep's process: a fake capture needs no fresh worker (a forkserver importing torch)
    args = ["-m", "batch=1,2,3,4", "device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]
    proc = subprocess.Popen(driver_cmd(driver, *args), cwd=tmp_path, env={**os.environ, **ENV, "FAKE_HOLD_BATCH": "3"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            dirs = sweep_dirs(tmp_path)
            if dirs and (dirs[0] / "1" / ROW_NAME).exists() and (dirs[0] / "2").is_dir():
                break
            assert proc.poll() is None, "sweep ended before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    [sweep] = sweep_dirs(tmp_path)
    assert not (sweep / "2" / ROW_NAME).exists() and not (sweep / RESULTS_NAME).exists()
    df = read_rows(sweep)
    assert list(df["job_num"]) == [0, 1] and set(df["status"]) == {"ok"}
    kept = {n: (sweep / str(n) / ROW_NAME).read_bytes() for n in (0, 1)}
    done = subprocess.run(driver_cmd(driver, f"resume={sweep}"), cwd=tmp_path, env={**os.environ, **ENV},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    df = read_rows(sweep)
    assert list(df["batch"]) == [1, 2, 3, 4] and set(df["status"]) == {"ok"}
    assert all((sweep / str(n) / ROW_NAME).read_bytes() == kept[n] for n in (0, 1))
    assert len(read_rows(sweep)) == len(__import__("pandas").read_parquet(sweep / RESULTS_NAME))


@pytest.mark.slow
def test_two_sweeps_started_together_do_not_collide(tmp_path):
    driver = write_driver(tmp_path)
    args = ["-m", "batch=1,2", "device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]
    procs = [subprocess.Popen(driver_cmd(driver, *args), cwd=tmp_path, env={**os.environ, **ENV},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    dirs = sweep_dirs(tmp_path)
    assert len(dirs) == 2
    for sweep in dirs:
        df = read_rows(sweep)
        assert list(df["batch"]) == [1, 2] and set(df["sweep_id"]) == {sweep.name}


def _first_point(spec: dict) -> list[str]:
    """Collapse every swept axis to one tiny value, so each file runs one real capture."""
    out = []
    for key, value in spec["hydra"]["sweeper"]["params"].items():
        first = str(value).split(",")[0]
        first = "0" if first.startswith("range(") or first == "auto" else first  # auto: one fixed trial
        out.append(f"{key}={ {'batch': '1', 'imgsz': '64'}.get(key, first) }")
    if "n_trials" in spec["hydra"]["sweeper"]:  # a search sweeper: one trial of the fixed point
        out.append("hydra.sweeper.n_trials=1")
    return out


# A smaller capture where the test is about the sweep, not the capture (no module pass, a trace
# window of one step); the installed-wheel test keeps the default capture of a real sweep job.
QUICK = ["capture.trace_active=1", "capture.trace_warmup=0", "capture.modules=false"]
# every packaged sweep file but the SLURM one (run through the fake SLURM in test_sweep_cluster)
PACKAGED = [p.stem for p in sorted(SWEEPS.glob("*.yaml")) if p.stem != "cluster_example"]


@pytest.mark.slow
@pytest.mark.parametrize("name", PACKAGED)
def test_every_packaged_sweep_file_runs_a_real_capture(tmp_path, monkeypatch, capsys, name):
    """Each file in sweeps/ drives one real capture, in process (the CLI's own main; jobs in the
    sweep's process, trace window of one step): the other tests here run sweeps as a user does.
    One test per file, so the files spread over the xdist workers."""
    from yoloprof.cli import main

    monkeypatch.chdir(tmp_path)
    quick = ["launch.isolation=inprocess", *QUICK]
    spec = yaml.safe_load((SWEEPS / f"{name}.yaml").read_text())
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    code = main(["sweep", f"+sweep={name}", *TINY, "batch=1", *_first_point(spec), *quick])
    captured = capsys.readouterr()
    proc = subprocess.CompletedProcess([], code, captured.out, captured.err)
    assert proc.returncode == 0, (name, proc.stderr[-2000:])
    [sweep] = sweep_dirs(tmp_path, name)
    df = read_rows(sweep)
    assert len(df) == 1 and df.iloc[0]["status"] == "ok", name
    row = df.iloc[0]
    assert row["step_ms"] > 0 and row["img_per_s"] == pytest.approx(
        sum(1000.0 * row["batch"] / s for s in row["step_ms_samples"]) / len(row["step_ms_samples"]), rel=1e-6)
    assert (sweep / "0" / "profile.json").is_file() and (sweep / "0" / "profile_trace.json").is_file()
    assert "job" in proc.stdout and "ok" in proc.stdout
    assert (sweep / "0" / "profile.json").stat().st_size > 0


@pytest.mark.slow
def test_submitit_local_runs_each_job_in_its_own_process(tmp_path):
    """The launcher's path, not the capture's: the job processes submitit starts run the fake
    capture (fake_jobs_env); the machine lock is still taken around it (sweep/job.py)."""
    proc = run_cli("sweep", "-m", "hydra/launcher=submitit_local", "batch=1,2", *TINY, cwd=tmp_path,
                   env=fake_jobs_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    [sweep] = sweep_dirs(tmp_path)
    df = read_rows(sweep)
    assert list(df["batch"]) == [1, 2] and set(df["status"]) == {"ok"}
    for row in df.itertuples():  # the fake's numbers, recomputed: the fake ran in the job processes
        steps = [fake_step_ms(row.batch, row.imgsz, row.trial, r) for r in range(row.repeat)]
        assert row.device_name == "fake-cpu" and list(row.step_ms_samples) == pytest.approx(steps)
    assert set(df["launcher"]) == {"submitit_local"}
    # submitit_local starts both jobs at once: their timed parts took turns on the machine lock
    assert set(df["concurrency"]) == {"serialised"} and set(df["isolation"]) == {"launcher"}
    assert "take turns on the machine lock" in proc.stderr
    job_ids = {p.name for p in (sweep / ".submitit").iterdir() if p.is_dir() and p.name.isdigit()}
    assert len(job_ids) == 2  # one submitit job (process) per grid point


def _source_copy(dest: Path) -> Path:
    """The checkout's files that git tracks or would track (edits included), copied: setuptools
    builds in the source folder's build/, and a stale build/lib there (an older layout, left by an
    earlier build) would end up in the wheel."""
    import shutil

    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True)
    if listed.returncode != 0:  # not a git checkout: build from it as it is
        return REPO
    for name in listed.stdout.splitlines():
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.mark.slow
def test_installed_wheel_runs_a_sweep_from_an_unrelated_folder(tmp_path):
    """Build the wheel, install it into a fresh venv that sees the project's dependencies but not
    its editable yoloprof, and run a one-job sweep from a folder outside the checkout."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(_source_copy(tmp_path / "src"))], check=True, capture_output=True,
                   timeout=600)
    [wheel] = wheels.glob("yoloprof-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    deps = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    # a plain path line: the project venv's packages, without processing its editable-install .pth
    Path(site, "project_deps.pth").write_text(deps + "\n")
    # without the checkout on PYTHONPATH (its yoloprof.egg-info would read as "already installed")
    # and whatever the deps folder holds: the wheel itself must be what gets imported
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                    "--ignore-installed", str(wheel)], check=True, capture_output=True, timeout=600,
                   env={**os.environ, "PYTHONPATH": ""})
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, **ENV, "PYTHONPATH": ""}
    where = subprocess.run([str(py), "-c", "import yoloprof, sys; print(yoloprof.__file__)"], cwd=work,
                           capture_output=True, text=True, env=env, check=True).stdout
    assert where.startswith(str(venv))
    # a packaged experiment file, collapsed to one point: the conf/ groups ship inside the wheel
    # with --json: a real capture in a forked worker puts nothing on stdout beside the one document
    # (trial=0: the demo's trial=auto collapsed to one trial; the sweeper plugin ships in the wheel)
    proc = subprocess.run([str(venv / "bin" / "yoloprof"), "sweep", "--json", "+sweep=demo", *TINY, "batch=1",
                           "precision=float32", "trial=0"], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [sweep] = sweep_dirs(work, "demo")
    assert read_rows(sweep).iloc[0]["status"] == "ok"
    doc = json.loads(proc.stdout)
    assert doc["sweep_dir"].endswith(sweep.name) and [j["status"] for j in doc["jobs"]] == ["ok"]


def test_json_puts_one_document_on_stdout_and_the_tables_on_stderr(tmp_path):
    """A real process (what Hydra's log handler binds to is the point), with the fake capture in
    the sweep's own process: a real capture's under --json is checked by the installed-wheel run."""
    args = ["--json", "-m", "batch=1,2", "device=cpu", "workers=0", "analysis.enabled=false",
            "launch.isolation=inprocess"]
    proc = subprocess.run(driver_cmd(write_driver(tmp_path), *args), cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, **ENV}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # nothing else on stdout: Hydra's log and the tables went to stderr
    (sweep,) = sweep_dirs(tmp_path)
    assert doc["sweep_dir"].endswith(sweep.name) and doc["failed"] == 0
    rows = read_rows(sweep).sort_values("job_num")
    assert [j["job_num"] for j in doc["jobs"]] == list(rows["job_num"])
    assert [j["step_ms"] for j in doc["jobs"]] == pytest.approx(list(rows["step_ms"]))
    assert any("batch=2" in o for o in doc["jobs"][1]["overrides"])
    assert "Launching 2 jobs" in proc.stderr
