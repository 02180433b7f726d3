"""Fault injection, as data systems test themselves: a sweep SIGKILLed at random moments and
resumed each time ends with every configuration and trial once and every finished job
byte-identical; a disk that fills mid-sweep loses no finished job and names the job it could not
write; `analyze` run while jobs write never fails on a half-written file."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers.fake_sweep import driver_cmd, write_driver
from yoloprof.errors import YoloprofError
from yoloprof.profiles.rows import ROW_NAME, read_rows
from yoloprof.sweep.app import main

GRID = ["-m", "batch=1,2,3", "trial=0,1", "device=cpu", "workers=0", "analysis.enabled=false",
        "launch.isolation=inprocess"]
ENV = {"FAKE_SLEEP": "0.25", "NO_COLOR": "1"}


def _finished(sweep: Path) -> dict[str, bytes]:
    """Every finished job's row and profile, byte for byte."""
    out = {}
    for row in sweep.glob(f"*/{ROW_NAME}"):
        out[f"{row.parent.name}/{ROW_NAME}"] = row.read_bytes()
        profile = row.parent / "profile.json"
        if profile.is_file():
            out[f"{row.parent.name}/profile.json"] = profile.read_bytes()
    return out


def _sweeps(root: Path) -> list[Path]:
    return [p.parent for p in root.glob("runs/profile/sweeps/adhoc/*/yoloprof_sweep.json")]


def _written_since(root: Path, since: float, name: str) -> int:
    """How many job files `name` the run started at `since` wrote (not those of an earlier run)."""
    count = 0
    for path in root.glob(f"runs/profile/sweeps/adhoc/*/*/{name}"):
        try:
            count += path.stat().st_mtime >= since
        except FileNotFoundError:  # replaced this instant (atomic write)
            continue
    return count


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_completes_every_job_once(tmp_path):
    rng = random.Random(28)  # the moments are random, and the same in every run of the test
    driver = write_driver(tmp_path)
    env = {**os.environ, **ENV}
    seen: dict[str, bytes] = {}
    kills = checked = 0
    for attempt in range(8):
        sweeps = _sweeps(tmp_path)
        args = [f"resume={sweeps[0]}"] if sweeps else GRID
        started = time.time()
        proc = subprocess.Popen(driver_cmd(driver, *args), cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if attempt < 2:  # kill it at a random moment after this run finished 1 or 2 jobs
            deadline, rows = time.monotonic() + 60, rng.randint(1, 2)
            while _written_since(tmp_path, started, ROW_NAME) < rows:
                if proc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.4))  # anywhere in the next job: its capture, row or state
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        code = proc.wait(timeout=120)
        [sweep] = _sweeps(tmp_path) or [None]
        if sweep is None:
            continue
        now = _finished(sweep)
        assert {k: now.get(k) for k in seen} == seen, "a finished job changed"
        checked += len(seen)
        seen = now
        if code == 0:
            break
    assert kills >= 1 and code == 0 and checked, "no finished job was there to check after a kill"
    df = read_rows(sweep)
    assert sorted(zip(df["batch"], df["trial"])) == [(b, t) for b in (1, 2, 3) for t in (0, 1)]
    assert set(df["status"]) == {"ok"} and sorted(df["job_num"]) == list(range(6))


def test_a_full_disk_loses_no_finished_job_and_names_the_one_it_could_not_write(sweep_env, monkeypatch,
                                                                                capsys):
    real_fsync = os.fsync
    full = {"on": True}

    def fsync(fd: int) -> None:  # the disk fills when job 2 writes (its profile, then its row)
        target = os.readlink(f"/proc/self/fd/{fd}")
        if full["on"] and "/2/" in target:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(YoloprofError) as err:
        main(["-m", "batch=1,2,3,4", "device=cpu", "workers=0", "analysis.enabled=false",
              "launch.isolation=inprocess"])
    [sweep] = sweep_env()
    assert "\n" not in str(err.value) and str(err.value).startswith(f"job 2 could not be written to {sweep / '2'}")
    assert "No space left on device" in str(err.value) and f"resume={sweep}" in str(err.value)
    finished = _finished(sweep)
    # the basic launcher goes on with job 3 (its folder had room) before the sweep stops on job 2
    assert sorted(finished) == [f"{n}/{f}" for n in (0, 1, 3) for f in ("profile.json", "row.parquet")]
    assert not list(sweep.rglob("*.tmp"))  # no half-written file left behind
    full["on"] = False
    assert main([f"resume={sweep}"]) == 0
    assert {k: v for k, v in _finished(sweep).items() if k in finished} == finished
    assert list(read_rows(sweep)["batch"]) == [1, 2, 3, 4]


def test_analyze_while_jobs_write(tmp_path):
    from yoloprof.cli import main as cli

    driver = write_driver(tmp_path)
    proc = subprocess.Popen(driver_cmd(driver, *GRID), cwd=tmp_path, env={**os.environ, **ENV, "FAKE_SLEEP": "0.1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    codes = []
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and len(codes) < 3:
            for sweep in _sweeps(tmp_path):
                if list(sweep.glob(f"*/{ROW_NAME}")):
                    codes.append(cli(["analyze", str(sweep), "--json", "--no-html", "--name", "live"]))
            time.sleep(0.05)
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert codes and set(codes) <= {0, 1}  # 1 while rows are missing; never a crash (2 would be a usage error)
    [sweep] = _sweeps(tmp_path)
    assert len(read_rows(sweep)) == 6 and cli(["analyze", str(sweep), "--no-html", "--json"]) == 0
