"""Training capture: trials of the timing pass, FLOPs, and the trace pass over `train_step`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yoloprof.capturing.builtin.trial_context import build_train_context, effective_workers, prepare_dataset
from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.device.flop_count import FlopMix, count_flop_mix
from yoloprof.capturing.builtin.capture_progress import CaptureProgress
from yoloprof.capturing.passes.one_time import one_time_samples
from yoloprof.capturing.passes.run_result import RunResult, phase_timing_name
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.capturing.passes.recipe_figures import add_amortised, recipe_section
from yoloprof.capturing.passes.step_calls import TrainContext, no_phases, train_step
from yoloprof.capturing.passes.steady_steps import cap_warnings
from yoloprof.capturing.passes.timing import (cap_by_data, run_trials, time_train_trial, trial_metrics, warmup_cap_of,
                                              warmup_used)
from yoloprof.capturing.passes.tracing import TraceSchedule, run_trace_pass

prepare = prepare_dataset  # exit 3 here, before anything is measured


def measure(settings: CaptureSettings, device: DeviceInfo, amp: bool, bar: CaptureProgress,
            dataset: Any) -> RunResult:
    warnings = []
    workers = effective_workers(settings)
    if workers < settings.workers:
        warnings.append(f"--workers {settings.workers} capped at {workers} (CPU cores on this machine)")
    mix, shape = _flops_of_one_step(settings, device, dataset, amp)
    flops = mix.total if mix is not None else None
    from yoloprof.workloads.data import num_batches

    data_steps = num_batches(dataset, settings.batch)
    cap = warmup_cap_of(settings, data_steps)  # no loader restart when timed
    trials = run_trials(settings, device, lambda: build_train_context(settings, device, dataset, amp),
                        time_train_trial, bar, cap=cap)
    warmup = warmup_used(settings, trials, cap, cap_by_data(settings, data_steps))
    samples = add_amortised(trial_metrics(trials, settings.batch), shape.optimizer_every)
    samples.update(one_time_samples(trials))  # first_call_ms, setup_s (capturing/passes/one_time.py)
    return RunResult(samples=samples, phase_order=shape.phases,
                     workers=workers, phase_timing=phase_timing_name(device.is_cuda), flops=flops,
                     flop_mix=mix, warnings=warnings + cap_warnings(warmup), warmup=warmup,
                     sections={"train_recipe": recipe_section(shape.recipe, shape.optimizer_every)})


@dataclass(frozen=True)
class StepShape:
    """What every context of this capture has in common: its phases and its family's recipe."""

    phases: tuple[str, ...]
    optimizer_every: int
    recipe: dict[str, Any] | None

    @staticmethod
    def of(ctx: TrainContext) -> "StepShape":
        return StepShape(ctx.phases, ctx.optimizer_every, ctx.recipe)


def _flops_of_one_step(settings: CaptureSettings, device: DeviceInfo, dataset: Any, amp: bool
                       ) -> tuple[FlopMix | None, StepShape]:
    """FLOPs of one whole step (forward + loss + backward; the optimizer adds no matmul/conv) on a
    throwaway context, outside the timed steps. The context is built outside the counter: under
    FlopCounterMode every op of the model's initialisation goes through its Python dispatch
    (about 0.7 s for the small detector) and counts nothing. The same context gives the step's
    shape (phases, recipe), which the knobs leave as they are."""
    ctx = build_train_context(settings, device, dataset, amp, knobs=False)
    try:
        return count_flop_mix(lambda: train_step(ctx, no_phases())), StepShape.of(ctx)
    finally:
        ctx.close()


def trace(settings: CaptureSettings, device: DeviceInfo, amp: bool, path: Path, bar: CaptureProgress,
          dataset: Any) -> Path:
    ctx = build_train_context(settings, device, dataset, amp)
    bar.task("trace pass", 1)
    try:
        return run_trace_pass(lambda phase: train_step(ctx, phase, cycle=True), device, path,
                              TraceSchedule.of(settings), gzip=settings.trace_gzip)
    finally:
        ctx.close()
