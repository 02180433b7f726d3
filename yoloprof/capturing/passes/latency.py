"""The latency block of an inference profile, from its timed trials: one home for `yoloprof
infer` and a `yoloprof.profile(kind="infer")` loop.

- `latency` (the profile section): percentiles p50/p90/p99 of every measured call of every trial
  pooled, by linear interpolation between order statistics (numpy's default method), each with its
  distribution-free 95% interval `p<q>_ci_ms` = [low, high] (an end no order statistic reaches is
  null: `metrics.quantiles`), and mean/min/max/n of the calls.
- `p<q>_ms` metrics: the same percentiles per trial (one sample per trial, as every metric).
- `stages`: per stage (the capture's preprocess/forward/postprocess, a loop's own phases in the
  order first seen) the mean over trials of the trial's mean ms per call, and its share of the
  stages' sum (time in no stage is outside the split).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from yoloprof.capturing.passes.timing import TrialResult
from yoloprof.metrics.quantiles import quantile_interval, tail_note

PERCENTILES = (50, 90, 99)


def latency_table(call_ms: list[float]) -> dict[str, Any]:
    """The `latency` section of these calls (module docstring)."""
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


def stage_split(trials: list[TrialResult], stages: Sequence[str]) -> list[dict[str, Any]]:
    """The `stages` section: each stage's mean ms per call and share of the stages' sum."""
    means = {s: statistics.fmean(statistics.fmean(t.phase_ms[s]) for t in trials if t.phase_ms.get(s))
             for s in stages if any(t.phase_ms.get(s) for t in trials)}
    total = sum(means.values()) or 1.0
    return [{"stage": s, "ms": ms, "share": ms / total} for s, ms in means.items()]


@dataclass
class Latency:
    """What an inference capture adds to its RunResult: `per_trial` (the `p<q>_ms` samples),
    `table` (the `latency` section), `stages` (None without any), `warnings` (thin tails)."""

    per_trial: dict[str, list[float]]
    table: dict[str, Any]
    stages: list[dict[str, Any]] | None
    warnings: list[str]


def latency_of(trials: list[TrialResult], stages: Sequence[str]) -> Latency:
    """The latency block of these trials (each trial's `step_ms` holds one time per call)."""
    per_trial: dict[str, list[float]] = {f"p{q}_ms": [] for q in PERCENTILES}
    for trial in trials:
        table = latency_table(trial.step_ms)
        for q in PERCENTILES:
            per_trial[f"p{q}_ms"].append(table[f"p{q}_ms"])
    calls = [ms for trial in trials for ms in trial.step_ms]
    return Latency(per_trial=per_trial, table=latency_table(calls), stages=stage_split(trials, stages) or None,
                   warnings=tail_warnings(len(calls)))
