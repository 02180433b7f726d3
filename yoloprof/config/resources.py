"""What a cluster job asks for, derived from the sweep's own settings (docs/sweeps.md "Run it on
SLURM"). Registered as OmegaConf resolvers so a launcher config can say
`cpus_per_task: ${yoloprof_cpus:${workers}}` and `--cfg hydra --resolve` shows the numbers.

- GPUs: one per job for a CUDA device, none for the CPU (`config.device_spec.parse_device`: `CPU` too; a capture times one device; a job never
  shares its GPU with another timed job because SLURM gives each allocation its own GPU);
- CPUs: one per data-loader worker plus one for the main process;
- time limit: TIME_FIXED_MIN for start-up, model build and data, plus TIME_PER_ITERATION_S for
  every warm-up and timed iteration of every trial (and once more for the trace pass). Generous
  on purpose: a job killed at its limit measures nothing. Override `hydra.launcher.timeout_min`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from yoloprof.config.device_spec import is_auto, parse_device
from yoloprof.errors import UsageError

AUTO_ON_CLUSTER = ("device=auto: a cluster job's device must be named, as the submitting machine may have no "
                   "GPU while the nodes do; set device=0 (a GPU per job) or device=cpu")
TIME_FIXED_MIN = 10
TIME_PER_ITERATION_S = 5.0


def gpus_per_job(device: Any) -> int | None:
    """One GPU for a CUDA device, none for the CPU, in every spelling the one device parser takes
    (`CPU`, ` cpu `, `cuda:1`, `1`...); an invalid device is refused there, naming the key.
    `auto` is refused: it would be decided on the submitting machine (a login node often has no
    GPU while the compute nodes do), so a cluster job names its device."""
    if is_auto(device):
        raise UsageError(AUTO_ON_CLUSTER)
    return 1 if parse_device(device, flag="device").is_cuda else None


def cpus_per_job(workers: Any) -> int:
    return max(0, int(workers)) + 1


def time_limit_min(warmup: Any, steps: Any, runs: Any, repeat: Any, trace: Any = True) -> int:
    """Minutes for one job: fixed start-up + per-iteration allowance (steps for train, runs for
    infer; whichever is set)."""
    timed = int(steps if steps not in (None, "None") else (runs if runs not in (None, "None") else 0))
    per_trial = int(warmup or 0) + timed
    iterations = per_trial * max(1, int(repeat or 1)) + (per_trial if str(trace).lower() == "true" else 0)
    return TIME_FIXED_MIN + math.ceil(iterations * TIME_PER_ITERATION_S / 60.0)


RESOLVERS: dict[str, Callable[..., int | None]] = {"yoloprof_gpus": gpus_per_job, "yoloprof_cpus": cpus_per_job, "yoloprof_minutes": time_limit_min}


def register_resolvers() -> None:
    from omegaconf import OmegaConf

    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
