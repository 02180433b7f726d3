"""What each Hydra launcher means for timing, and the checks and records that follow from it.

Launchers are told apart by their `_target_` class (a user's own launcher config that extends
`submitit_slurm` is still SLURM). Three kinds matter:
- serial on this machine (basic): one job at a time;
- parallel on this machine (joblib with n_jobs != 1, submitit_local): several jobs at once, whose
  timed captures would slow each other; they are serialised by the machine lock
  (sweep/machine.py) unless the user asks for overlap in so many words (`launch.machine=shared`);
- a cluster (submitit_slurm): every job in its own allocation, one GPU per job for GPU sweeps.
Each row records which (`concurrency`), where it ran (`node`, `cluster_job_id`) and what the
launcher asked for (`launcher_resources`).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from yoloprof.config.device_spec import parse_device
from yoloprof.errors import UsageError

# launcher class name -> kind
KINDS = {"BasicLauncher": "serial", "JoblibLauncher": "parallel", "LocalLauncher": "parallel",
         "SlurmLauncher": "cluster"}
# launcher keys worth recording in each row (those that exist in the launcher's config)
RESOURCE_KEYS = ("n_jobs", "array_parallelism", "partition", "account", "qos", "constraint", "nodes",
                 "tasks_per_node", "gpus_per_node", "gpus_per_task", "gres", "cpus_per_task", "mem_gb",
                 "timeout_min")


def kind(launcher_cfg: dict[str, Any] | Any) -> str:
    """serial / parallel / cluster from the launcher config's `_target_`; unknown = parallel (safe)."""
    target = str((launcher_cfg or {}).get("_target_") or "BasicLauncher")
    name = target.rsplit(".", 1)[-1]
    if name == "JoblibLauncher" and (launcher_cfg or {}).get("n_jobs") == 1:
        return "serial"
    return KINDS.get(name, "parallel")


def resources(launcher_cfg: dict[str, Any] | Any) -> str | None:
    """The launcher's resource settings as a compact JSON object (None for the basic launcher)."""
    cfg = launcher_cfg or {}
    picked = {key: cfg.get(key) for key in RESOURCE_KEYS if cfg.get(key) is not None}
    return json.dumps(picked, sort_keys=True, default=str) if picked else None


def concurrency(launcher_cfg: dict[str, Any] | Any, machine_policy: str) -> str:
    """serial | serialised (parallel launcher, timed parts take turns) | concurrent (asked for) |
    cluster (one allocation per job)."""
    found = kind(launcher_cfg)
    if found == "parallel":
        return "concurrent" if machine_policy == "shared" else "serialised"
    return found


def placement() -> tuple[str | None, str]:
    """(cluster job id, node) of the running job, from the environment SLURM / submitit give it."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        job_id: str | None = f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    else:
        job_id = env.get("SLURM_JOB_ID") or env.get("SUBMITIT_LOCAL_JOB_ID")
    return job_id, env.get("SLURMD_NODENAME") or socket.gethostname()


def parallel_note(launcher: str, launcher_cfg: dict[str, Any], machine_policy: str) -> str | None:
    """The one line a parallel local launcher gets before the first job (None otherwise)."""
    if kind(launcher_cfg) != "parallel":
        return None
    width = launcher_cfg.get("n_jobs", launcher_cfg.get("array_parallelism", "all"))
    if machine_policy == "shared":
        return (f"{launcher} runs jobs in parallel ({width} at once) and launch.machine=shared lets their "
                "timed captures overlap; the rows record it (concurrency=concurrent)")
    return (f"{launcher} runs jobs in parallel ({width} at once); their timed captures take turns on the "
            "machine lock (launch.machine=shared would time them together)")


def _gpus_per_job(cfg: dict[str, Any]) -> int:
    for key in ("gpus_per_task", "gpus_per_node"):
        if cfg.get(key):
            return int(cfg[key])
    gres = str(cfg.get("gres") or "")
    if gres.startswith("gpu"):
        tail = gres.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else 1
    return 0


def check_cluster(launcher: str, launcher_cfg: dict[str, Any], devices: list[str]) -> None:
    """A SLURM GPU sweep must give every job its own GPU and run one capture per allocation."""
    if kind(launcher_cfg) != "cluster":
        return
    gpu_devices = sorted({d for d in devices if parse_device(d).is_cuda})
    if not gpu_devices:
        return
    gpus = _gpus_per_job(launcher_cfg)
    tasks = int(launcher_cfg.get("tasks_per_node") or 1) * int(launcher_cfg.get("nodes") or 1)
    if gpus < 1:
        raise UsageError(f"{launcher}: a GPU sweep (device {', '.join(gpu_devices)}) needs a GPU per job: set "
                         "hydra.launcher.gpus_per_task=1 (see +sweep=cluster_example)")
    if tasks != 1:
        raise UsageError(f"{launcher}: {tasks} tasks per job would run {tasks} captures on one allocation; "
                         "set hydra.launcher.tasks_per_node=1 and hydra.launcher.nodes=1")
    for device in gpu_devices:
        index = int(parse_device(device).index or 0)
        if index >= gpus:
            raise UsageError(f"{launcher}: device {device} does not exist in a job with {gpus} GPU(s); "
                             "SLURM numbers a job's GPUs from 0 (use device=0)")


def say(line: str) -> None:
    print(f"yoloprof sweep: {line}", file=sys.stderr, flush=True)
