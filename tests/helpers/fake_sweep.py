"""Helpers shared by the sweep tests (no tests here): a fake capture whose numbers the tests can
recompute from the job's settings, and a driver script that runs `yoloprof sweep` in a subprocess
with that fake in place.

Why a fake: the sweep's logic (grid order, rows, resume, failures, kills) does not depend on what a
capture measures, and a real capture costs seconds per job on 2 cores; the real capture is still
exercised by the smoke tests marked slow.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from yoloprof.profiles.io import write_bytes_atomic
from yoloprof.profiles.model import metric


def fake_step_ms(batch: int, imgsz: int, trial: int, rep: int) -> float:
    """The fake's step time for one timing trial: tests recompute it independently."""
    return 10.0 * batch + imgsz / 32.0 + trial + 0.5 * rep


# Longest a held job waits for the scheduler's signal (a preemption that never comes fails the test).
HOLD_S = 60.0


def _held(batch: int) -> bool:
    env = os.environ
    if env.get("FAKE_HOLD_BATCH") == str(batch):
        return True
    held = (env.get("FAKE_HOLD_TASK") or "").split(",")  # one task or several: "1,3"
    return env.get("SLURM_ARRAY_TASK_ID") in held and env.get("SLURM_RESTART_COUNT") == "0"


def fake_capture(settings, out_dir, *, progress: bool = False) -> dict:
    """Stand-in for yoloprof.capturing.builtin.capture_entry.capture: writes a profile.json, returns the profile.

    FAKE_SLEEP (seconds per job) lets kill tests catch a sweep mid-job; FAKE_FAIL_BATCH makes the
    jobs with that batch raise, as a model that does not build would. FAKE_HOLD_TASK=N holds the
    first attempt of SLURM array task N (tests/fakeslurm.py) until the scheduler's signal ends it
    (HOLD_S at most), so a preemption test never races a job that has already finished;
    FAKE_HOLD_BATCH=B holds the jobs with that batch the same way (until a kill).
    """
    if str(settings.batch) == os.environ.get("FAKE_FAIL_BATCH"):
        raise RuntimeError(f"fake failure for batch {settings.batch}")
    if str(settings.batch) == os.environ.get("FAKE_OOM_BATCH"):
        import torch

        raise torch.OutOfMemoryError(f"CUDA out of memory at batch {settings.batch} (fake)")
    if _held(settings.batch):
        time.sleep(HOLD_S)
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    steps = [fake_step_ms(settings.batch, settings.imgsz, settings.trial, r) for r in range(settings.repeat)]
    profile = {
        "schema": "yoloprof.profile/1", "kind": settings.mode,
        "config": settings.resolved().to_dict(),  # as the real capture records it
        "env": {"device_name": "fake-cpu"},
        "metrics": {"step_ms": metric(steps, "ms", "lower"),
                    "img_per_s": metric([settings.batch * 1000.0 / s for s in steps], "img/s", "higher")},
        "verdict": {"bound": "compute", "why": "fake", "evidence": {}},
        "warnings": [f"fake warning for batch {settings.batch}"],
    }
    if os.environ.get("FAKE_PEAK_MEM_PER_IMAGE"):  # MiB per image in the batch: a memory that grows
        per = float(os.environ["FAKE_PEAK_MEM_PER_IMAGE"])
        profile["metrics"]["peak_mem_mb"] = metric([per * settings.batch] * settings.repeat, "MiB", "lower")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out / "profile.json", json.dumps(profile).encode())  # as the real capture: atomic
    return profile


DRIVER = """
import sys
sys.path.insert(0, {tests!r})
import yoloprof.capturing.builtin.capture_entry as api
from helpers.fake_sweep import fake_capture
api.capture = fake_capture
from yoloprof.cli import main
raise SystemExit(main(["sweep", *sys.argv[1:]]))
"""


FAKE_SITE = Path(__file__).resolve().parent / "fake_site"


def fake_jobs_env() -> dict[str, str]:
    """Environment under which every Python process a sweep starts (submitit's job processes
    included) runs `fake_capture` instead of the real capture (fake_site/sitecustomize.py)."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(FAKE_SITE), *([path] if path else [])]),
            "YOLOPROF_TEST_FAKE_CAPTURE": "1"}


def write_driver(tmp_path: Path) -> Path:
    """A script that runs `yoloprof sweep ARGS` with the fake capture, for subprocess tests."""
    path = tmp_path / "fake_sweep.py"
    path.write_text(DRIVER.format(tests=str(Path(__file__).resolve().parents[1])), encoding="utf-8")
    return path


def driver_cmd(driver: Path, *args: str) -> list[str]:
    return [sys.executable, str(driver), *args]


# Tiny real-capture settings (about a second per job on an idle 2-core CPU).
TINY = ["device=cpu", "size=n", "imgsz=64", "workers=0", "capture.warmup=1", "capture.steps=2",
        "capture.runs=2", "repeat=1", "analysis.enabled=false"]


def noisy_capture(settings, out_dir, *, progress: bool = False) -> dict:
    """The fake capture with run-to-run noise, for adaptive sweeps: each job (process) draws its own
    level, lognormal with FAKE_PROCESS_CV (default 0.03), seeded by the job's settings and trial
    so a rerun gives the same numbers; FAKE_SLOW="<precision>:<factor>" slows one precision down.
    The image size does not change the work here: `imgsz=64,96` are two labels of identical work."""
    import random

    cv = float(os.environ.get("FAKE_PROCESS_CV", "0.03"))
    slow_precision, _, factor = os.environ.get("FAKE_SLOW", ":1").partition(":")
    rng = random.Random(f"{settings.precision}/{settings.imgsz}/{settings.batch}/{settings.trial}")
    level = 10.0 * settings.batch * rng.lognormvariate(0.0, cv)
    level *= float(factor) if settings.precision == slow_precision else 1.0
    steps = [level * rng.lognormvariate(0.0, cv / 4) for _ in range(settings.repeat)]
    profile = {
        "schema": "yoloprof.profile/1", "kind": settings.mode, "config": settings.resolved().to_dict(),
        "env": {"device_name": "fake-cpu"},
        "metrics": {"step_ms": metric(steps, "ms", "lower"),
                    "img_per_s": metric([settings.batch * 1000.0 / s for s in steps], "img/s", "higher")},
        "verdict": {"bound": "compute", "why": "fake", "evidence": {}}, "warnings": [],
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    return profile
