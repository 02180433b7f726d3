"""`capture(settings, out_dir)`: the one entry point behind `yoloprof run`, `yoloprof infer` and
every sweep job. Timing pass (N trials) -> trace pass -> trace analysis -> profile.json.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from yoloprof.capture.device import DeviceInfo, resolve_device
from yoloprof.capture.preflight import check_memory, check_output_dir
from yoloprof.capture.progress import CaptureProgress
from yoloprof.capture.settings import CaptureSettings
from yoloprof.capture.timing import TrialResult
from yoloprof.errors import UsageError
from yoloprof.profiles.io import write_profile
from yoloprof.profiles.model import empty_profile

PROFILE_NAME = "profile.json"
TRACE_NAME = "profile_trace.json"


def resolve_amp(settings: CaptureSettings, device: DeviceInfo) -> tuple[bool, list[str]]:
    """--amp default: on for CUDA (what people train with), off for CPU (autocast there is an
    experiment, not the norm)."""
    warnings: list[str] = []
    amp = device.is_cuda if settings.amp is None else bool(settings.amp)
    if amp and not device.is_cuda and settings.mode == "infer":
        warnings.append(f"--half on CPU runs autocast({settings.amp_dtype}); CPU kernels for reduced "
                        "precision are often slower than float32")
    return amp, warnings


def _resolve_batch(settings: CaptureSettings, device: DeviceInfo) -> CaptureSettings:
    if settings.batch != -1:
        return settings
    if not device.is_cuda:
        raise UsageError("--batch -1 (largest batch that fits) needs a CUDA device; give a batch size "
                         "on CPU, e.g. --batch 16")
    from yoloprof.capture.autobatch import largest_batch

    return dataclasses.replace(settings, batch=largest_batch(settings, device))


def capture(settings: CaptureSettings, out_dir: str | Path, *, progress: bool = False) -> dict[str, Any]:
    """Run the capture and write `out_dir/profile.json` (+ `profile_trace.json`); return the profile.

    Nothing is written until the end, and then atomically: an interrupted capture leaves any
    earlier profile.json intact.
    """
    settings.validate()
    out_dir = check_output_dir(out_dir)
    device = resolve_device(settings.device)
    settings = _resolve_batch(settings, device)
    amp, warnings = resolve_amp(settings, device)
    check_memory(settings, device, amp)
    from yoloprof.capture import infer as infer_mod, train as train_mod

    runner = train_mod if settings.mode == "train" else infer_mod
    inputs, input_notes = runner.prepare(settings)  # dataset or images, built once, checked first
    with CaptureProgress(progress).running() as bar:
        run = runner.measure(settings, device, amp, bar, inputs)
        trace_path = None
        if settings.trace:
            trace_path = runner.trace(settings, device, amp, out_dir / TRACE_NAME, bar, inputs)
    profile = assemble(settings, device, amp, run, trace_path, warnings + input_notes)
    write_profile(out_dir / PROFILE_NAME, profile)
    return profile


def trial_metrics(trials: list[TrialResult], batch: int) -> dict[str, list[float]]:
    """Per-trial samples of the timing figures: one value per trial, never one per step."""
    import statistics

    samples: dict[str, list[float]] = {"step_ms": [], "img_per_s": [], "peak_rss_mb": []}
    for trial in trials:
        mean_ms = statistics.fmean(trial.step_ms)
        samples["step_ms"].append(mean_ms)
        samples["img_per_s"].append(batch * 1000.0 / mean_ms)
        for phase, values in trial.phase_ms.items():
            samples.setdefault(f"{phase}_wall_ms", []).append(statistics.fmean(values))
        for key, value in trial.memory.items():
            if value is not None:
                samples.setdefault(key, []).append(value)
    # CPU has no allocator statistics to reset per trial; its per-trial peak is the resident set,
    # so that `compare` gets one memory sample per trial on every device. (The CPU allocator's
    # own peak, seen once in the trace pass, stays available as trace_peak_mem_mb.)
    if "peak_mem_mb" not in samples:
        samples["peak_mem_mb"] = list(samples["peak_rss_mb"])
    return samples


def assemble(settings: CaptureSettings, device: DeviceInfo, amp: bool, run: Any,
             trace_path: Path | None, warnings: list[str]) -> dict[str, Any]:
    from yoloprof.capture.env import collect_env
    from yoloprof.capture.profile_sections import (add_flops, merge_trace_sections, metrics_from_samples,
                                                   phases_from_run)

    config = settings.to_dict()
    config.update(device=str(device.torch_device), amp=amp, batch=settings.batch,
                  workers_effective=run.workers, phase_timing=run.phase_timing)
    profile = empty_profile(settings.mode, config=config, env=collect_env(device))
    profile["warnings"] = [*warnings, *run.warnings]
    profile["metrics"] = metrics_from_samples(run.samples)
    add_flops(profile, run.flops, device, settings.amp_dtype if amp else "float32")
    profile["phases"] = phases_from_run(run)
    if settings.mode == "infer":
        profile["latency"] = run.latency
        profile["stages"] = run.stages
    if trace_path is not None:
        merge_trace_sections(profile, trace_path)
    from yoloprof.metrics.verdict import decide

    profile["verdict"] = decide(profile)
    return profile
