"""Sweep jobs over a user's own code: `task._target_` names a function that runs its loop inside
`yoloprof.profile(...)`; the job calls it (Hydra's `call`, the task's other keys as keyword
arguments) and turns the profile it wrote into the job's row, as for a built-in capture.

    yoloprof sweep -m +task._target_=mytrain.train +task.width=16,32,64 device=cpu

Whatever out_dir the function passes, `yoloprof.profile` writes into the job's folder while the job
runs (`yoloprof.capturing.userloop.loop.job_output`), so rows, resume and analysis work unchanged. A function
that writes no profile fails its job with a message that says so (the block's own warning when
its loop was too short for one timed step, as a data-too-small failure, exit 3); one that writes
several (two profile blocks) gives the row its last.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from yoloprof.errors import DataTooSmallError, ProfileError, UsageError

TASK_KEY = "task"


def user_task(cfg: DictConfig) -> dict[str, Any] | None:
    """The job's `task` node as plain values, or None when the job is a built-in capture."""
    node = OmegaConf.select(cfg, TASK_KEY, default=None)
    if node is None:
        return None
    task = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    if not isinstance(task, dict) or not task.get("_target_"):
        raise UsageError("task: needs a _target_ (an importable function that runs its loop inside "
                         "yoloprof.profile), e.g. +task._target_=mytrain.train")
    return {str(key): value for key, value in task.items()}  # keyword arguments of the user's function


def task_identity(task: dict[str, Any]) -> dict[str, Any]:
    """Row axes of a user-task job: the target is the model column; the built-in workload's axes
    (size, data) say nothing about a user's loop, so they are left empty."""
    return {"model": str(task["_target_"]), "size": None, "data": None}


def run_task(task: dict[str, Any], job_dir: Path) -> dict[str, Any]:
    """Call the user's function with the job folder as every profile's output; return the profile."""
    from hydra.utils import call

    from yoloprof.capturing.userloop.loop_support import job_failures, job_output

    with job_output(job_dir) as written:
        call(task)
        failures = job_failures()
    if not written and failures:  # the block's exit never raises: its warning is the job's error
        too_few, text = failures[-1]
        raise (DataTooSmallError if too_few else ProfileError)(f"task._target_ {task['_target_']}: {text}")
    if not written:
        raise UsageError(f"task._target_ {task['_target_']} returned without writing a profile: run the "
                         "loop inside `with yoloprof.profile(...) as prof:` and let the block end")
    return written[-1]


@dataclass
class TaskJob:
    """What a worker process needs to run a user task: the task, the device (for the worker's
    footprint) and the parent's import path (a forkserver child does not see later additions,
    such as the current directory the sweep puts first for user modules)."""

    task: dict[str, Any]
    device: str
    sys_path: list[str] = field(default_factory=list)


def run_task_job(job: TaskJob, job_dir: Path) -> dict[str, Any]:
    """The worker side of `run_user_task`."""
    sys.path[:0] = [p for p in job.sys_path if p not in sys.path]
    return run_task(job.task, Path(job_dir))


def run_user_task(task: dict[str, Any], settings: Any, job_dir: Path, isolation: str
                  ) -> tuple[dict[str, Any], float | None]:
    """(profile, starting footprint MiB), in a fresh worker process or in this one, like a capture."""
    from yoloprof.sweep.worker import footprint_mib, run_in_worker

    if isolation == "process":
        return run_in_worker(run_task_job, TaskJob(task, str(settings.device), list(sys.path)), job_dir)
    footprint = footprint_mib(settings.device)
    return run_task(task, job_dir), footprint
