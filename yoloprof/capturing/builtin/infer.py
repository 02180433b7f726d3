"""Inference capture: trials of the pipeline (preprocess, forward, postprocess), latency
percentiles, the stage split, FLOPs of the forward, and the trace pass over `infer_call`."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from yoloprof.capturing.builtin.trial_context import build_infer_context, load_infer_sources
from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.device.flop_count import FlopMix, count_flop_mix
from yoloprof.capturing.builtin.capture_progress import CaptureProgress
from yoloprof.capturing.passes.run_result import RunResult, phase_timing_name
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.metrics.quantiles import quantile_interval, tail_note
from yoloprof.capturing.passes.step_calls import INFER_STAGES, infer_call, no_phases
from yoloprof.capturing.passes.steady_steps import cap_warnings
from yoloprof.capturing.passes.timing import (TrialResult, run_trials, time_infer_trial, trial_metrics, warmup_cap_of,
                                     warmup_used)
from yoloprof.capturing.passes.tracing import TraceSchedule, run_trace_pass

PERCENTILES = (50, 90, 99)


def latency_table(call_ms: list[float]) -> dict[str, Any]:
    """Percentiles by linear interpolation between order statistics (numpy's default method),
    each with its distribution-free 95% interval `p<q>_ci_ms` = [low, high] (an end no order
    statistic reaches is null: `metrics.quantiles`)."""
    import numpy as np

    arr = np.asarray(call_ms, dtype=float)
    table: dict[str, Any] = {f"p{q}_ms": float(np.percentile(arr, q)) for q in PERCENTILES}
    for q in PERCENTILES:
        ci = quantile_interval(call_ms, q / 100.0)
        table[f"p{q}_ci_ms"] = [ci["low"], ci["high"]]
    table.update(mean_ms=float(arr.mean()), min_ms=float(arr.min()), max_ms=float(arr.max()), n=int(arr.size))
    return table


def tail_warnings(calls: int) -> list[str]:
    """The latency table's percentiles whose calls are too few for an interval with both ends
    (`compare` warns apart about the per-trial samples it compares)."""
    return [n for n in (tail_note(f"p{q} latency", q / 100.0, calls) for q in PERCENTILES) if n]


def stage_split(trials: list[TrialResult]) -> list[dict[str, Any]]:
    means = {s: statistics.fmean(statistics.fmean(t.phase_ms[s]) for t in trials) for s in INFER_STAGES}
    total = sum(means.values()) or 1.0
    return [{"stage": s, "ms": means[s], "share": means[s] / total} for s in INFER_STAGES]


prepare = load_infer_sources


def _flops_of_one_call(settings: CaptureSettings, device: DeviceInfo, sources: list[Any], amp: bool
                       ) -> FlopMix | None:
    """FLOPs of one call (the forward holds every matmul/conv), outside the timed calls, on a
    throwaway context built before the counter starts (initialisation counts nothing, and under
    FlopCounterMode it would run through its Python dispatch) and gone before the trials."""
    ictx = build_infer_context(settings, device, sources, amp)
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
    for trial in trials:
        per_trial = latency_table(trial.step_ms)
        for q in PERCENTILES:
            samples.setdefault(f"p{q}_ms", []).append(per_trial[f"p{q}_ms"])
    all_calls = [ms for trial in trials for ms in trial.step_ms]
    return RunResult(samples=samples, phase_order=INFER_STAGES, workers=0,
                     phase_timing=phase_timing_name(device.is_cuda), flops=flops, flop_mix=mix,
                     latency=latency_table(all_calls), stages=stage_split(trials),
                     warnings=cap_warnings(warmup) + tail_warnings(len(all_calls)), warmup=warmup)


def trace(settings: CaptureSettings, device: DeviceInfo, amp: bool, path: Path, bar: CaptureProgress,
          sources: list[Any]) -> Path:
    ctx = build_infer_context(settings, device, sources, amp)
    bar.task("trace pass", 1)
    return run_trace_pass(lambda phase: infer_call(ctx, phase), device, path, TraceSchedule.of(settings),
                          gzip=settings.trace_gzip)
