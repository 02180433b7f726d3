"""Training capture: trials of the timing pass, FLOPs, and the trace pass over `train_step`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yoloprof.capture.build import (build_dataset, build_train_context, check_data_fills,
                                    effective_workers)
from yoloprof.capture.device import DeviceInfo
from yoloprof.capture.memory import count_flops
from yoloprof.capture.progress import CaptureProgress
from yoloprof.capture.run_result import RunResult, phase_timing_name
from yoloprof.capture.settings import CaptureSettings
from yoloprof.capture.steps import TRAIN_PHASES, train_step
from yoloprof.capture.timing import run_trials, time_train_trial
from yoloprof.capture.tracing import TraceSchedule, run_trace_pass


def _dataset(settings: CaptureSettings) -> Any:
    dataset = build_dataset(settings, (settings.warmup + settings.measured) * settings.batch)
    check_data_fills(dataset, settings)
    return dataset


def _train_flops(settings: CaptureSettings, device: DeviceInfo, dataset: Any, amp: bool) -> float | None:
    """Forward + loss + backward FLOPs of one step, on a throwaway context (outside timed steps)."""
    import torch

    ctx = build_train_context(settings, device, dataset, amp)
    images, targets = ctx.next_batch()
    images = images.to(ctx.device)
    images = images.float().div_(255.0) if images.dtype == torch.uint8 else images
    targets = targets.to(ctx.device)

    def step() -> None:
        with ctx.autocast():
            out = ctx.loss_fn(ctx.model(images), targets)
        (out[0] if isinstance(out, (tuple, list)) else out).backward()

    return count_flops(step)


def measure(settings: CaptureSettings, device: DeviceInfo, amp: bool, bar: CaptureProgress) -> RunResult:
    from yoloprof.capture.api import trial_metrics

    dataset = _dataset(settings)  # exit 3 here, before anything is measured
    warnings = [f"skipped {dataset.skipped} unreadable image(s)"] if getattr(dataset, "skipped", 0) else []
    workers = effective_workers(settings)
    if workers < settings.workers:
        warnings.append(f"--workers {settings.workers} capped at {workers} (CPU cores on this machine)")
    flops = _train_flops(settings, device, dataset, amp)
    trials = run_trials(settings, device, lambda: build_train_context(settings, device, dataset, amp),
                        time_train_trial, bar)
    return RunResult(samples=trial_metrics(trials, settings.batch), phase_order=TRAIN_PHASES,
                     workers=workers, phase_timing=phase_timing_name(device.is_cuda), flops=flops,
                     warnings=warnings)


def trace(settings: CaptureSettings, device: DeviceInfo, amp: bool, path: Path, bar: CaptureProgress,
          schedule: TraceSchedule = TraceSchedule()) -> Path:
    dataset = _dataset(settings)
    ctx = build_train_context(settings, device, dataset, amp)
    bar.task("trace pass", 1)
    return run_trace_pass(lambda phase: train_step(ctx, phase, cycle=True), device, path, schedule,
                          gzip=settings.trace_gzip)
