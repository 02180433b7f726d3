"""The Hydra task function: one job = one capture = one profile.json + one row.parquet.

The task catches its own failures (any Exception: a model that does not build, CUDA OOM, too little
data) and writes a `failed` row with the traceback in Hydra's job log, because Hydra callbacks
swallow exceptions and an uncaught one would stop the whole sweep. Resume lives here too: a job
whose existing row is `ok` for the same config hash is kept untouched and not rerun.
"""

from __future__ import annotations

import gc
import logging
import os
import platform
import socket
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from yoloprof.config.settings import CaptureSettings
from yoloprof.defs.files import PROFILE as PROFILE_NAME
from yoloprof.config.translate import job_values
from yoloprof.profiles.jobstate import read_manifest_field, read_state, write_state
from yoloprof.sweep import progress
from yoloprof.sweep.launchers import concurrency, kind, placement, resources
from yoloprof.sweep.machine import MachineBusy, timed_slot
from yoloprof.sweep.worker import WorkerError, footprint_mib, run_in_worker
from yoloprof.profiles.rows import (ROW_NAME, failed_row, overrides_json, read_row, row_from_profile,
                                 utc_now, write_row)

log = logging.getLogger("yoloprof.sweep")


def _job_num(hydra_cfg: Any) -> int:
    num = OmegaConf.select(hydra_cfg, "job.num", default=None, throw_on_missing=False)
    return int(num) if isinstance(num, int) else 0


def identity_columns(settings: CaptureSettings, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """Hashes and axes of the row, from the exact settings the capture receives, resolved as the
    capture resolves them (canonical device, effective precision and thread count), and, for a
    user-task job, the task's target and arguments, which then decide what runs."""
    from yoloprof.config.translate import config_hash, group_hash

    builtin = settings.model == "yolo"
    settings = settings.resolved()
    columns = {
        "config_hash": config_hash(settings, task), "group_hash": group_hash(settings, task),
        "mode": settings.mode, "model": settings.model, "size": settings.size if builtin else None,
        "data": settings.data, "precision": settings.precision, "device": settings.device,
        "batch": settings.batch, "imgsz": settings.imgsz, "workers": settings.workers,
        "warmup": settings.warmup, "steps": settings.steps, "runs": settings.runs,
        "repeat": settings.repeat, "trial": settings.trial, "seed": settings.seed,
        "threads": settings.threads,
    }
    if task is not None:
        from yoloprof.sweep.usertask import task_identity

        columns.update(task_identity(task))
    return columns


def environment_columns(launcher: str) -> dict[str, Any]:
    from yoloprof.defs.version import __version__
    from yoloprof.capture.env import git_state, torch_version

    commit, dirty = git_state(os.getcwd())
    return {"torch_version": torch_version(), "python_version": platform.python_version(),
            "hostname": socket.gethostname(), "launcher": launcher,
            "yoloprof_version": __version__, "git_commit": commit, "git_dirty": dirty}


# Override keys that are not settings of the capture: Hydra's own, how the sweep launches and
# analyses (recorded in their own columns or the manifest), the experiment file, our resume.
_NOT_SWEPT_PREFIXES = ("hydra.", "launch.", "analysis.", "adaptive.")
_NOT_SWEPT_KEYS = ("sweep", "sweep_name", "resume", "analysis", "launch", "adaptive")


def swept_values(hc: Any, cfg: DictConfig, overrides: list[str]) -> dict[str, Any]:
    """Each key the job's overrides set, with its typed value: a config group's chosen option
    (`model=custom_example`), else the composed value (`model.width=32` -> 32)."""
    choices = dict(hc.runtime.choices)
    out: dict[str, Any] = {}
    for item in overrides:
        key, sep, _ = item.lstrip("+~").partition("=")
        if not sep or key.startswith(_NOT_SWEPT_PREFIXES) or key in _NOT_SWEPT_KEYS:
            continue
        if key in choices:
            out[key] = choices[key]
            continue
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        out[key] = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    return out


def _release_memory() -> None:
    """After a failed job (OOM above all) give the next job a clean device."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort only
        pass


def _kept(job_dir: Path, chash: str) -> bool:
    old = read_row(job_dir / ROW_NAME)
    return bool(old and old.get("status") == "ok" and old.get("config_hash") == chash)


def execution_columns(hc: Any, cfg: DictConfig, job_dir: Path) -> dict[str, Any]:
    """How this job runs: isolation, where (node, cluster job id, attempt), the launcher's resources
    and concurrency (sweep/launchers.py)."""
    launcher_cfg = OmegaConf.to_container(hc.launcher, resolve=False) if "launcher" in hc else {}
    launch = job_values(cfg).get("launch") or {}
    policy, isolation = str(launch.get("machine", "wait")), str(launch.get("isolation", "process"))
    if kind(launcher_cfg) != "serial" and str(launcher_cfg.get("_target_", "")).endswith(
            ("SlurmLauncher", "LocalLauncher")):
        isolation = "launcher"  # submitit starts a fresh process for every job already
    job_id, node = placement()
    previous = read_state(job_dir) or {}
    asked = read_manifest_field(job_dir.parent, "launcher_resources") or resources(launcher_cfg)
    return {"isolation": isolation, "node": node, "cluster_job_id": job_id, "machine_policy": policy,
            "concurrency": concurrency(launcher_cfg, policy), "launcher_resources": asked,
            "attempt": int(previous.get("attempt") or 0) + 1}


def _capture(settings: CaptureSettings, job_dir: Path, isolation: str) -> tuple[dict[str, Any], float | None]:
    """(profile, starting footprint MiB): in a fresh worker process, or in this process."""
    from yoloprof.capture import api

    if isolation == "process":
        return run_in_worker(api.capture, settings, job_dir)
    footprint = footprint_mib(settings.device)
    return api.capture(settings, job_dir), footprint


def _scheduler_stop(exc: BaseException) -> bool:
    """submitit raises its UncompletedJobError from the signal handler when the scheduler stops a
    job it will not requeue (time limit, preemption without requeue): not the capture's failure."""
    return type(exc).__name__ == "UncompletedJobError" and type(exc).__module__.startswith("submitit")


def _state(job_dir: Path, num: int, state: str, base: dict[str, Any]) -> None:
    write_state(job_dir, num, state, attempt=base.get("attempt"), launcher=base.get("launcher"),
                cluster_job_id=base.get("cluster_job_id"), node=base.get("node"), pid=os.getpid())


def run_job(cfg: DictConfig) -> str | float:
    """Run one sweep job; never raises for a failed capture. Returns ok / failed / kept, or under a
    search sweeper (`search.metric` set) the value the sampler optimises (sweep/search.py).

    Ctrl-C or a scheduler's stop (SystemExit from submitit's preemption handler) writes no row and
    marks the job `interrupted` / `preempted` in its state file, then goes on up: the job reruns on
    requeue or with resume=."""
    from hydra.core.hydra_config import HydraConfig

    from yoloprof.config.translate import settings_from_cfg

    hc = HydraConfig.get()
    job_dir = Path(hc.runtime.output_dir)
    num, overrides = _job_num(hc), list(hc.overrides.task)
    launcher = str(hc.runtime.choices.get("hydra/launcher") or "basic")
    os.environ["YOLOPROF_LAUNCHER"] = launcher  # recorded in the profile's env by the capture
    base: dict[str, Any] = {"sweep_name": str(cfg.sweep_name), "sweep_id": job_dir.parent.name,
                            "job_num": num, "overrides": overrides_json(overrides),
                            "swept": swept_values(hc, cfg, overrides),
                            **environment_columns(launcher), **execution_columns(hc, cfg, job_dir)}
    progress.notify_start(num, overrides)
    _state(job_dir, num, "running", base)
    started, t0 = utc_now(), time.perf_counter()
    try:
        from yoloprof.sweep.usertask import run_user_task, user_task

        settings, task = settings_from_cfg(cfg), user_task(cfg)
        base.update(identity_columns(settings, task))
        if _kept(job_dir, base["config_hash"]):
            log.info("job %d: kept the existing ok row (config %s)", num, base["config_hash"])
            _state(job_dir, num, "kept", base)
            progress.notify_done(num, "kept")
            return _returned(cfg, read_row(job_dir / ROW_NAME) or {}, "kept")
        label = f"sweep {base['sweep_id']} job {num}"
        with timed_slot(settings.device, base["machine_policy"], label) as machine:
            if task is not None:
                profile, footprint = run_user_task(task, settings, job_dir, base["isolation"])
            else:
                profile, footprint = _capture(settings, job_dir, base["isolation"])
        base.update(asdict(machine), start_footprint_mib=footprint)
        row = row_from_profile(profile, {**base, "started_at": started, "wall_s": time.perf_counter() - t0,
                                         "profile_path": f"{job_dir.name}/{PROFILE_NAME}"})
    except Exception as exc:  # noqa: BLE001 - a failed job is a row, not the end of the sweep
        if _scheduler_stop(exc):  # submitit's handler of the scheduler's stop signal: no row
            _state(job_dir, num, "preempted", base)
            raise
        log.error("job %d failed: %s", num, exc if isinstance(exc, WorkerError) else f"{type(exc).__name__}: {exc}")
        log.debug("job %d traceback:\n%s", num, getattr(exc, "trace", "") or traceback.format_exc())
        row = failed_row({**base, "started_at": started, "wall_s": time.perf_counter() - t0},
                         str(exc) if isinstance(exc, (WorkerError, MachineBusy)) else exc)
        _release_memory()
    except BaseException as exc:
        _state(job_dir, num, "interrupted" if isinstance(exc, KeyboardInterrupt) else "preempted", base)
        raise
    write_row(job_dir / ROW_NAME, row)
    _state(job_dir, num, "done" if row["status"] == "ok" else "failed", base)
    progress.notify_done(num, row["status"])
    return _returned(cfg, row, str(row["status"]))


def _returned(cfg: DictConfig, row: dict[str, Any], status: str) -> str | float:
    search = OmegaConf.to_container(cfg.search) if OmegaConf.select(cfg, "search") is not None else {}
    if not search or not search.get("metric"):
        return status
    from yoloprof.sweep.search import objective

    return objective(row, search)
