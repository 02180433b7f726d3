"""Who else is timing on this machine: a registry of running sweep jobs and a machine-wide lock.

Two timed captures at once slow each other 2-3x and nothing in their rows would say so. Every timed
sweep job therefore (1) registers itself in `<runtime dir>/captures/` and records the load average
and how many other registered captures were running when it started, and (2) takes a lock before
it measures, so that timed jobs take turns even when a launcher starts them together (joblib,
submitit_local) or two sweeps are started on one machine.

Lock scope: a CPU job needs the whole machine (exclusive lock on `machine.lock`); a CUDA job shares
the machine with jobs on other GPUs (shared lock on `machine.lock`) and needs its own GPU
(exclusive lock on `gpu-<physical index>.lock`). Policies (`launch.machine`): `wait` (default: wait
for the lock, saying so on one line), `refuse` (the job fails with the reason instead of waiting),
`shared` (the user asked for overlapping timed jobs: no lock, the overlap is still recorded).
Locks are `flock`s: the kernel drops them when a process dies, so a killed job never leaves the
machine locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from yoloprof.config.device_spec import parse_device
from yoloprof.config.capture_settings import MACHINE_POLICIES as POLICIES  # the valid values, one home

RUNTIME_ENV = "YOLOPROF_RUNTIME_DIR"
REGISTRY = "captures"


class MachineBusy(Exception):
    """Another timed capture holds the machine and the policy is `refuse`."""


@dataclass
class MachineRecord:
    """What a job records about the machine while it ran (row columns of the same names)."""

    load_avg_1m: float | None = None
    other_captures: int = 0
    machine_wait_s: float = 0.0
    machine_policy: str = "wait"


def runtime_dir() -> Path:
    """Per-user, machine-local: $YOLOPROF_RUNTIME_DIR, else $XDG_RUNTIME_DIR/yoloprof, else
    <tmp>/yoloprof-<uid>."""
    if os.environ.get(RUNTIME_ENV):
        return Path(os.environ[RUNTIME_ENV])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "yoloprof"
    return Path(tempfile.gettempdir()) / f"yoloprof-{os.getuid()}"


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 3)
    except (OSError, AttributeError):
        return None


def gpu_key(device: str) -> str | None:
    """The physical GPU behind a device string (CUDA_VISIBLE_DEVICES applied); None for CPU. The
    string is read by the one device parser (`CPU` is the CPU, `cuda` is GPU 0)."""
    spec = parse_device(device)
    if not spec.is_cuda:
        return None
    index = int(spec.index or 0)
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_captures(exclude_pid: int | None = None) -> list[dict]:
    """Registered captures whose process is alive (stale entries of dead processes are removed)."""
    folder = runtime_dir() / REGISTRY
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            pid = int(entry["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            path.unlink(missing_ok=True)
            continue
        if pid != exclude_pid:
            out.append(entry)
    return out


@contextlib.contextmanager
def _registered(label: str, device: str) -> Iterator[None]:
    folder = runtime_dir() / REGISTRY
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "label": label,
                                "device": device, "started": time.time()}), encoding="utf-8")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _open_lock(name: str) -> IO[str]:
    folder = runtime_dir() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return open(folder / f"{name}.lock", "a+", encoding="utf-8")


WAITS: list[str] = []  # the jobs of this process that waited for another timed capture


def wait_summary() -> str | None:
    """One line for the end of a sweep when more than one job waited (the first said so)."""
    return f"{len(WAITS)} jobs waited for another timed capture (machine_wait_s in their rows)" \
        if len(WAITS) > 1 else None


def _acquire(handles: list[tuple[IO[str], int]], policy: str, label: str) -> float:
    """Take every lock; returns the seconds spent waiting. `refuse` raises MachineBusy instead."""
    t0, said = time.perf_counter(), False
    for handle, mode in handles:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            continue
        except BlockingIOError:
            pass
        others = ", ".join(f"pid {e['pid']} ({e.get('label', '?')})" for e in running_captures(os.getpid()))
        if policy == "refuse":
            raise MachineBusy(f"another timed capture holds this machine ({others or 'unregistered'}); "
                              "launch.machine=wait waits for it, launch.machine=shared times them together")
        if not said:
            said = True
            WAITS.append(label)
            if len(WAITS) == 1:  # once per process; the rest counted (wait_summary) and in each row
                print(f"yoloprof sweep: {label} waits for another timed capture on this machine "
                      f"({others or 'unregistered'}); each job's wait is its row's machine_wait_s",
                      file=sys.stderr, flush=True)
        fcntl.flock(handle, mode)
    return time.perf_counter() - t0


@contextlib.contextmanager
def timed_slot(device: str, policy: str = "wait", label: str = "job") -> Iterator[MachineRecord]:
    """Hold the machine (or this job's GPU) for one timed job and record who else was running."""
    if policy not in POLICIES:
        raise ValueError(f"launch.machine must be one of {', '.join(POLICIES)}, not {policy!r}")
    record = MachineRecord(machine_policy=policy)
    gpu = gpu_key(device)
    handles: list[tuple[IO[str], int]] = []
    try:
        if policy != "shared":
            handles.append((_open_lock("machine"), fcntl.LOCK_SH if gpu is not None else fcntl.LOCK_EX))
            if gpu is not None:
                handles.append((_open_lock(f"gpu-{gpu}"), fcntl.LOCK_EX))
            record.machine_wait_s = round(_acquire(handles, policy, label), 3)
        with _registered(label, device):
            record.other_captures = len(running_captures(os.getpid()))
            record.load_avg_1m = load_average()
            yield record
    finally:
        for handle, _ in handles:
            handle.close()  # closing releases the flock
