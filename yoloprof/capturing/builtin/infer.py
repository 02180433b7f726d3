"""Inference capture: trials of the pipeline (preprocess, forward, postprocess), latency
percentiles and the stage split (capturing/passes/latency.py), FLOPs of the forward, and the trace
pass over `infer_call`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yoloprof.capturing.builtin.trial_context import build_infer_context, load_infer_sources
from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.device.flop_count import FlopMix, count_flop_mix
from yoloprof.capturing.builtin.capture_progress import CaptureProgress
from yoloprof.capturing.passes.latency import latency_of
from yoloprof.capturing.passes.one_time import one_time_samples
from yoloprof.capturing.passes.run_result import RunResult, phase_timing_name
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.capturing.passes.step_calls import INFER_STAGES, infer_call, no_phases
from yoloprof.capturing.passes.steady_steps import cap_warnings
from yoloprof.capturing.passes.timing import run_trials, time_infer_trial, trial_metrics, warmup_cap_of, warmup_used
from yoloprof.capturing.passes.tracing import TraceSchedule, run_trace_pass

prepare = load_infer_sources


def _flops_of_one_call(settings: CaptureSettings, device: DeviceInfo, sources: list[Any], amp: bool
                       ) -> FlopMix | None:
    """FLOPs of one call (the forward holds every matmul/conv), outside the timed calls, on a
    throwaway context built before the counter starts (initialisation counts nothing, and under
    FlopCounterMode it would run through its Python dispatch) and gone before the trials."""
    ictx = build_infer_context(settings, device, sources, amp, knobs=False)
    return count_flop_mix(lambda: infer_call(ictx, no_phases()))


def measure(settings: CaptureSettings, device: DeviceInfo, amp: bool, bar: CaptureProgress,
            sources: list[Any]) -> RunResult:
    mix = _flops_of_one_call(settings, device, sources, amp)
    flops = mix.total if mix is not None else None
    cap = warmup_cap_of(settings)  # the sources cycle: no data limit
    trials = run_trials(settings, device, lambda: build_infer_context(settings, device, sources, amp),
                        time_infer_trial, bar, cap=cap)
    warmup = warmup_used(settings, trials, cap)
    samples = trial_metrics(trials, settings.batch)
    for stage in INFER_STAGES:  # "<stage>_ms" per trial, as DESIGN.md's metric names have it
        samples[f"{stage}_ms"] = samples.pop(f"{stage}_wall_ms")
    latency = latency_of(trials, INFER_STAGES)  # latency, p<q>_ms and the stage split (passes/latency.py)
    samples.update(latency.per_trial)
    samples.update(one_time_samples(trials))  # first_call_ms, setup_s (capturing/passes/one_time.py)
    return RunResult(samples=samples, phase_order=INFER_STAGES, workers=0,
                     phase_timing=phase_timing_name(device.is_cuda), flops=flops, flop_mix=mix,
                     latency=latency.table, stages=latency.stages,
                     warnings=cap_warnings(warmup) + latency.warnings, warmup=warmup)


def trace(settings: CaptureSettings, device: DeviceInfo, amp: bool, path: Path, bar: CaptureProgress,
          sources: list[Any]) -> Path:
    ctx = build_infer_context(settings, device, sources, amp)
    bar.task("trace pass", 1)
    return run_trace_pass(lambda phase: infer_call(ctx, phase), device, path, TraceSchedule.of(settings),
                          gzip=settings.trace_gzip)
