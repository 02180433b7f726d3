"""`yoloprof calibrate`: measure this machine's run-to-run noise floor for one workload, by K
identical captures in fresh processes (or from K earlier identical captures), and store it
(`yoloprof.metrics.noise_floor`), so that a later `compare` of one process per side can be judged.

Why K fresh processes, one after another: what a floor must hold is how much a process's mean
moves from one process to the next (allocator, memory layout, CPU frequency, machine load), which
the trials inside one process cannot show.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from yoloprof.errors import UsageError
from yoloprof.metrics.noise_floor import MIN_PROCESSES, floor_record, save_floor
from yoloprof.profiles.model import now_iso

DEFAULT_PROCESSES = 5


def summarize(key: str, record: dict[str, Any], path: Path) -> dict[str, Any]:
    return {"key": key, "file": str(path), "workload": record["workload"], "source": record["source"],
            "measured_at": record["measured_at"], "processes": record["processes"],
            "metrics": record["metrics"]}


def calibrate_profiles(profiles: Sequence[dict], source: str, noise_file: Any = None) -> dict[str, Any]:
    """Store the floor learned from K identical captures (one process each)."""
    if len(profiles) < MIN_PROCESSES:
        raise UsageError(f"calibrate needs at least {MIN_PROCESSES} captures (one process each), "
                         f"got {len(profiles)}")
    key, record = floor_record(profiles, source, now_iso())
    if not record["metrics"]:
        raise UsageError("calibrate: the captures share no metric with per-trial samples")
    return summarize(key, record, save_floor(key, record, noise_file))


def calibrate_command(command: str | list[str], processes: int = DEFAULT_PROCESSES, *,
                      noise_file: Any = None, out_dir: Path | None = None,
                      progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run `command` (a yoloprof capture command line) in `processes` fresh processes, one after
    another, and store the floor they show."""
    from yoloprof.sweep.ab import command_runner

    if processes < MIN_PROCESSES:
        raise UsageError(f"--processes must be at least {MIN_PROCESSES}, got {processes}")
    run = command_runner(command)
    with tempfile.TemporaryDirectory(prefix="yoloprof-calibrate-") as tmp:
        base = out_dir or Path(tmp)
        profiles = []
        for i in range(processes):
            profiles.append(run(i, base / f"run{i}"))
            if progress:
                progress(f"calibrate: process {i + 1} of {processes} done")
    text = command if isinstance(command, str) else " ".join(command)
    return calibrate_profiles(profiles, f"calibrate: {text}", noise_file)
