"""The timing pass: warm-up, then measured steps, each timed end to end with one device
synchronise at the step boundary, and no profiler attached.

The warm-up lasts at least `warmup` steps and until the step times are steady (capturing/passes/steady_steps.py,
metrics/steady.py), at most `warmup_max`; each trial (fresh model and loader) gets its own.

A trial returns every measured step's time and phase split; the caller turns each trial into one
sample (the mean step time of the trial), so repeats are independent samples for `compare`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from yoloprof.capturing.device.torch_device import DeviceInfo, StepClock, synchronize
from yoloprof.capturing.passes.heap import fresh_heap
from yoloprof.capturing.passes.steady_steps import SteadySteps, peak_of, warmup_section
from yoloprof.capturing.passes.step_calls import clock_phases, infer_call, train_step

Progress = Callable[[int, int], None]  # (done, total) of this trial's iterations


@dataclass
class TrialResult:
    step_ms: list[float] = field(default_factory=list)
    phase_ms: dict[str, list[float]] = field(default_factory=dict)  # phase -> per-step ms
    memory: dict[str, float | None] = field(default_factory=dict)
    warmup: dict[str, Any] | None = None  # {"steps": warm-up steps used, "steady": bool | None}
    first_ms: float | None = None  # the trial's very first step, before any warm-up (passes/one_time.py)
    setup_s: float = 0.0  # the context's one-time conversion (knobs), paid before the first step

    def add(self, total: float, phases: dict[str, float]) -> None:
        self.step_ms.append(total)
        for name, ms in phases.items():
            self.phase_ms.setdefault(name, []).append(ms)


def _timed_loop(step: Callable[[Callable[[str], Any]], Any], device: DeviceInfo, warmup: int,
                measured: int, progress: Progress | None, warmup_max: int | None = None) -> TrialResult:
    """`warmup` steps, more while the step times are not steady (up to `warmup_max`; None = a
    fixed warm-up), then `measured` steps; every step timed, the warm-up ones dropped."""
    clock = StepClock(device)
    phase = clock_phases(clock)
    steps = SteadySteps(device, warmup, measured, warmup if warmup_max is None else warmup_max)
    fresh_heap()  # every trial starts from the same heap state (capturing/passes/heap.py)
    while not steps.done:
        if len(steps.records) == warmup:
            synchronize(device)
        steps.begin()
        clock.start()
        step(phase)
        steps.end(*clock.finish())
        if progress is not None:
            progress(len(steps.records), steps.needed)
    result = TrialResult(warmup=steps.record(), first_ms=steps.records[0][0] if steps.records else None)
    kept = steps.measured()
    for total, phases, _ in kept:
        result.add(total, phases)
    result.memory = peak_of([reading for _, _, reading in kept])
    return result


def time_train_trial(ctx: Any, device: DeviceInfo, warmup: int, steps: int,
                     progress: Progress | None = None, warmup_max: int | None = None) -> TrialResult:
    return _timed_loop(lambda phase: train_step(ctx, phase), device, warmup, steps, progress, warmup_max)


def time_infer_trial(ctx: Any, device: DeviceInfo, warmup: int, runs: int,
                     progress: Progress | None = None, warmup_max: int | None = None) -> TrialResult:
    return _timed_loop(lambda phase: infer_call(ctx, phase), device, warmup, runs, progress, warmup_max)


def run_trials(settings: Any, device: DeviceInfo, build: Callable[[], Any],
               time_trial: Callable[..., TrialResult], bar: Any, cap: int | None = None) -> list[TrialResult]:
    """`--repeat N`: N timing passes, each over a freshly built context (model, optimizer, loader),
    so that no trial inherits another's warm state; each reaches its own steady state, so a first
    trial that pays the process's first calls (lazy initialisation, caches) warms up longer rather
    than measuring slow. `cap`: the most warm-up steps (default: `settings.warmup_cap`)."""
    from yoloprof.capturing.device import cpu_contention
    from yoloprof.capturing.passes import interrupt

    cap = warmup_cap_of(settings) if cap is None else cap
    trials = []
    for t in range(settings.repeat):
        ctx = build()
        try:
            update = bar.task(f"{settings.mode} trial {t + 1}/{settings.repeat}",
                              settings.warmup + settings.measured)
            interrupt.stage("measure")
            cpu_contention.trial_begin()  # the trial's own window of other processes' CPU
            trials.append(time_trial(ctx, device, settings.warmup, settings.measured, update, warmup_max=cap))
            cpu_contention.trial_end()
            trials[-1].setup_s = float(getattr(ctx, "setup_s", 0.0) or 0.0)
        finally:
            _close(ctx)
        del ctx  # free this trial's model before the next one is built
        interrupt.checkpoint()
    return trials


def warmup_cap_of(settings: Any, data_steps: int | None = None) -> int:
    """The most warm-up steps of a trial: `--warmup-max` (auto: config/steady_thresholds.py), and where the
    data is finite (training) no more than leaves room for the test window and the measured steps,
    so that no timed step restarts the loader."""
    from yoloprof.config.steady_thresholds import test_width, warmup_cap

    cap = warmup_cap(settings.warmup, settings.measured, getattr(settings, "warmup_max", None))
    if data_steps is not None:
        cap = min(cap, data_steps - max(settings.measured, test_width(settings.measured)))
    return max(settings.warmup, cap)


def cap_by_data(settings: Any, data_steps: int | None) -> str | None:
    """Why the cap is lower than the setting gives, where the data's size lowered it; else None."""
    from yoloprof.config.steady_thresholds import warmup_cap

    if data_steps is None:
        return None
    cap = warmup_cap_of(settings, data_steps)
    if cap >= warmup_cap(settings.warmup, settings.measured, getattr(settings, "warmup_max", None)):
        return None
    return (f"the data's {data_steps} batches leave room for {cap} warm-up steps before the measured ones; "
            "a larger dataset or fewer steps raises it")


def warmup_used(settings: Any, trials: list[TrialResult], cap: int, cap_by: str | None = None) -> dict[str, Any]:
    """`config.warmup_used` of a capture's profile (`cap_by`: what set the cap, where not the setting)."""
    section = warmup_section(settings.warmup, cap, [t.warmup or {"steps": settings.warmup, "steady": None}
                                                    for t in trials])
    if cap_by:
        section["cap_by"] = cap_by
    return section


def _close(ctx: Any) -> None:
    close = getattr(ctx, "close", None)  # training contexts own loader workers
    if close is not None:
        close()


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
