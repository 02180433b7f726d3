"""The parts of `yoloprof.profile` that are not the window machine: where it writes (sweep jobs,
ranks), which device it measures, how timed steps split into samples, and the checks of its
arguments and phase names."""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
from typing import Any, ContextManager, Iterator

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.errors import UsageError

DEFAULT_OUT = "runs/profile/user"
_PHASE_NAME_OK = "letters, digits, '_' and '-', starting with a letter or '_'"

# A sweep job that runs a user's function sets this: every `yoloprof.profile` inside writes into
# the job's folder (whatever out_dir the function gives) and reports the profile it wrote.
_JOB: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("yoloprof_job", default=None)


def current_job() -> dict[str, Any] | None:
    """The running sweep job's output redirect, or None outside a sweep job."""
    return _JOB.get()


@contextlib.contextmanager
def job_output(out_dir: Path) -> Iterator[list[dict[str, Any]]]:
    """Inside: `yoloprof.profile` writes into `out_dir`; yields the list of profiles written."""
    written: list[dict[str, Any]] = []
    token = _JOB.set({"out_dir": Path(out_dir), "written": written})
    try:
        yield written
    finally:
        _JOB.reset(token)


def job_failures() -> list[tuple[bool, str]]:
    """Why the profiles of the running sweep job were not written: (too few iterations?, the
    warning), in order; empty outside a job (`Profile.give_up` adds to it)."""
    job = _JOB.get()
    return list(job.get("failures", [])) if job else []


def dist_rank() -> tuple[int | None, int]:
    """(rank, world size): torch.distributed when initialised, else the RANK/WORLD_SIZE that
    torchrun and most launchers set; (None, 1) for a plain single process."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:  # pragma: no cover - torch without distributed
        pass
    rank = os.environ.get("RANK")
    if rank is not None and rank.isdigit():
        return int(rank), int(os.environ.get("WORLD_SIZE", "1") or 1)
    return None, 1


def output_names(rank: int | None) -> tuple[str, str]:
    """profile.json / profile_trace.json, or profile_rank<R>.json / profile_trace_rank<R>.json."""
    from yoloprof.capturing.builtin.capture_entry import PROFILE_NAME, TRACE_NAME

    if rank is None:
        return PROFILE_NAME, TRACE_NAME
    return (PROFILE_NAME.replace(".json", f"_rank{rank}.json"),
            TRACE_NAME.replace(".json", f"_rank{rank}.json"))


def device_of(model: Any, device: Any) -> DeviceInfo:
    import torch

    if device is not None:
        dev = torch.device(device if not isinstance(device, int) else f"cuda:{device}")
    else:
        param = next(iter(model.parameters()), None) if model is not None else None
        dev = param.device if param is not None else torch.device("cpu")
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return DeviceInfo(dev, "cuda" if dev.type == "cuda" else "cpu")


def blocks(steps: int, repeat: int) -> list[int]:
    """Split the timed steps into `repeat` consecutive blocks; each block's mean is one sample."""
    base, extra = divmod(steps, repeat)
    return [base + (1 if i < extra else 0) for i in range(repeat)]


def checked(name: str) -> ContextManager[Any]:
    """The warm-up's phase: nothing recorded, but a bad name fails at the first iteration."""
    check_phase(name)
    return contextlib.nullcontext()


def untouched(name: str) -> ContextManager[Any]:
    return contextlib.nullcontext()


def traced_phase(name: str) -> ContextManager[Any]:
    import torch

    check_phase(name)
    return torch.profiler.record_function(f"yoloprof/{name}")


_VALID_PHASES: set[str] = set()  # names already checked (the check runs per phase per step)


def check_phase(name: str) -> None:
    if name in _VALID_PHASES:
        return
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][\w-]*", name):
        raise UsageError(f"yoloprof.profile: phase name {name!r} is not valid; use {_PHASE_NAME_OK}")
    _VALID_PHASES.add(name)


def check_counts(**counts: int) -> None:
    for key, value in counts.items():
        least = 1 if key in ("steps", "repeat") else 0
        if not isinstance(value, int) or value < least:
            raise UsageError(f"yoloprof.profile: {key} must be an integer >= {least} (got {value!r})")
