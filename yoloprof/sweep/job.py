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
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from yoloprof.capturing.builtin.store_record import environment_columns, record_sweep_row, settings_columns
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.errors import YoloprofError
from yoloprof.defs.files import PROFILE as PROFILE_NAME
from yoloprof.config.translate import job_values, node_dict
from yoloprof.profiles.jobstate import read_manifest_field, read_state, write_state
from yoloprof.sweep import progress
from yoloprof.sweep.launchers import concurrency, kind, placement, resources
from yoloprof.sweep.machine import MachineBusy, timed_slot
from yoloprof.sweep.worker import WorkerError, footprint_mib, run_in_worker
from yoloprof.profiles.rows import (ROW_NAME, failed_row, overrides_json, read_row, row_from_profile,
                                 utc_now, write_row)

log = logging.getLogger("yoloprof.sweep")


class JobNotWritten(YoloprofError):
    """A job's row or state could not be written (ENOSPC, EDQUOT, EIO...): the sweep stops there,
    since the next job would meet the same disk; every finished job is untouched (atomic writes),
    and resume= reruns this one and those after it."""

    def __init__(self, num: int, job_dir: Path, exc: OSError) -> None:
        super().__init__(f"job {num} could not be written to {job_dir}: {exc.strerror or exc}; the "
                         f"finished jobs are intact; make room, then: yoloprof sweep resume={job_dir.parent}")


def _job_num(hydra_cfg: Any) -> int:
    num = OmegaConf.select(hydra_cfg, "job.num", default=None, throw_on_missing=False)
    return int(num) if isinstance(num, int) else 0


def identity_columns(settings: CaptureSettings, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """Hashes and axes of the row (capturing/builtin/store_record.py), and a user task's target as its model."""
    columns = settings_columns(settings, task)
    if task is not None:
        from yoloprof.sweep.usertask import task_identity

        columns.update(task_identity(task))
    return columns


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


def _finished(job_dir: Path, num: int) -> dict[str, Any] | None:
    """This job's earlier ok row, unless the user confirmed rerunning it (sweep/resume.py): a
    finished job's row, profile and state are then left exactly as they are."""
    from yoloprof.sweep.resume import rerun_requested

    old = read_row(job_dir / ROW_NAME)
    return old if old and old.get("status") == "ok" and not rerun_requested(num) else None


def execution_columns(hc: Any, cfg: DictConfig, job_dir: Path) -> dict[str, Any]:
    """How this job runs: isolation, where (node, cluster job id, attempt), the launcher's resources
    and concurrency (sweep/launchers.py)."""
    launcher_cfg = node_dict(hc.launcher, resolve=False) if "launcher" in hc else {}
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
    from yoloprof.capturing.builtin import capture_entry as api

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
    old = _finished(job_dir, num)
    if old is not None:  # never launched by a grid resume; a search sweeper's may ask again
        return _kept(cfg, job_dir, num, old)
    prior = read_state(job_dir)
    try:
        _state(job_dir, num, "running", base)
    except OSError as exc:
        raise JobNotWritten(num, job_dir, exc) from exc
    started, t0 = utc_now(), time.perf_counter()
    try:
        from yoloprof.sweep.usertask import run_user_task, user_task

        settings, task = settings_from_cfg(cfg), user_task(cfg)
        base.update(identity_columns(settings, task))
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
        _stopped(job_dir, num, prior, "interrupted" if isinstance(exc, KeyboardInterrupt) else "preempted", base)
        raise
    try:
        write_row(job_dir / ROW_NAME, row)
        _state(job_dir, num, "done" if row["status"] == "ok" else "failed", base)
    except OSError as exc:  # a full disk, a quota: this job is lost, the finished ones are whole
        raise JobNotWritten(num, job_dir, exc) from exc
    record_sweep_row(str(cfg.project), row, job_dir)  # the project's results store (history)
    progress.notify_done(num, row["status"])
    return _returned(cfg, row, str(row["status"]))


def _kept(cfg: DictConfig, job_dir: Path, num: int, old: dict[str, Any]) -> str | float:
    """A finished job asked for again: its folder is left exactly as it is."""
    if old.get("config_hash") != _identity_hash(cfg):
        log.error("job %d: its ok row is of another configuration (config %s); left untouched: "
                  "rerun it with resume=%s rerun=%d --yes", num, old.get("config_hash"), job_dir.parent, num)
    progress.notify_done(num, "kept")
    return _returned(cfg, old, "kept")


def _stopped(job_dir: Path, num: int, prior: dict[str, Any] | None, state: str, base: dict[str, Any]) -> None:
    """Ctrl-C or the scheduler's stop: the job is marked `state`, unless it has a finished row (a
    confirmed rerun stopped midway): that row stands, and so does its earlier state."""
    if prior is not None and (read_row(job_dir / ROW_NAME) or {}).get("status") == "ok":
        write_state(job_dir, num, **{k: v for k, v in prior.items() if k not in ("schema", "job_num", "updated_at")})
    else:
        _state(job_dir, num, state, base)


def _identity_hash(cfg: DictConfig) -> str | None:
    from yoloprof.config.translate import settings_from_cfg
    from yoloprof.sweep.usertask import user_task

    try:
        return identity_columns(settings_from_cfg(cfg), user_task(cfg))["config_hash"]
    except Exception:  # noqa: BLE001 - a config that no longer builds: certainly another one
        return None


def _returned(cfg: DictConfig, row: dict[str, Any], status: str) -> str | float:
    search = node_dict(cfg.search) if OmegaConf.select(cfg, "search") is not None else {}
    if not search or not search.get("metric"):
        return status
    from yoloprof.sweep.search import objective

    return objective(row, search)
