"""A one-command A/B: run both sides in fresh processes, A B B A A B B A ..., until the verdict is
decided or a budget ends (DESIGN.md section 7; docs/readers.md "compare --run-a/--run-b").

Why fresh processes, alternating: the process is the unit of replication (run-to-run noise lives
between processes, not between the trials of one), and ABBA blocks give both sides the same mean
position in time, so a drifting machine adds noise but no bias.

Interim looks: the verdict is looked at after each ABBA block that reaches a scheduled number of
processes per side (`look_schedule`: at most MAX_LOOKS looks, evenly spaced from MIN_PER_SIDE to
the maximum), look i at level alpha_i = alpha * n_i / sum(n) (`look_alphas`: a Bonferroni split
over the L planned looks, weighted towards the later, larger ones). The chance that any look
calls identical work different is then at most sum(alpha_i) = alpha, whatever the stopping rule
(union bound); it is simple, needs no boundary tables and stays valid when a time budget ends
the run early (the budget's last look spends the alpha of the planned look it replaces). The stop is on
improved, regressed or equivalent; `changed, within noise` and inconclusive run on.

A side is a runner: `run(index, out_dir) -> profile dict`. `command_runner(argv)` runs a capture
command line (`yoloprof infer ...`) in a subprocess; `callable_runner(fn)` times a Python callable
in a fresh worker process (forked from the sweep's forkserver), like PyG's `benchmark`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.errors import ProfileError, UsageError

MIN_PER_SIDE = 3
MAX_LOOKS = 4
DEFAULT_MAX_RUNS = 20
DECIDED = ("improved", "regressed", "equivalent")
Runner = Callable[[int, Path], dict]


def look_schedule(max_per_side: int, looks: int = MAX_LOOKS) -> list[int]:
    """Processes per side at which the verdict is looked at (ascending, the last = the maximum)."""
    if max_per_side < MIN_PER_SIDE:
        return [max_per_side] if max_per_side >= 2 else []
    n = min(looks, max_per_side - MIN_PER_SIDE + 1)
    if n <= 1:
        return [max_per_side]
    step = (max_per_side - MIN_PER_SIDE) / (n - 1)
    return sorted({round(MIN_PER_SIDE + i * step) for i in range(n)})


def look_alphas(schedule: list[int], alpha: float) -> list[float]:
    """The two-sided level of each look: alpha split over the planned looks in proportion to the
    processes per side at each (sum = alpha, so the union bound holds; later, larger looks get
    more, which keeps most of a fixed design's power at the last look)."""
    total = float(sum(schedule))
    return [alpha * n / total for n in schedule]


def abba_order(total: int) -> list[str]:
    """A B B A A B B A ...: `total` labels."""
    block = ["A", "B", "B", "A"]
    return [block[i % 4] for i in range(total)]


def _yoloprof_argv(command: str | list[str]) -> list[str]:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise UsageError("--run-a/--run-b: empty command line")
    if argv[0] == "yoloprof":  # the same yoloprof as this one, installed or not
        argv = [sys.executable, "-m", "yoloprof", *argv[1:]]
    return argv


def command_runner(command: str | list[str], timeout_s: float | None = None) -> Runner:
    """A side that runs a yoloprof capture command line in a fresh process; the profile is read
    from the `--project` folder the command is given (added last, so it wins)."""
    argv = _yoloprof_argv(command)

    def run(index: int, out_dir: Path) -> dict:
        from yoloprof.readers.load import load_any

        proc = subprocess.run([*argv, "--project", str(out_dir), "--json"], capture_output=True,
                              text=True, timeout=timeout_s, env=dict(os.environ))
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise ProfileError(f"{shlex.join(argv)} (run {index}) exited {proc.returncode}: {last}")
        found = sorted(out_dir.glob("*/profile.json"))
        if not found:
            raise ProfileError(f"{shlex.join(argv)} (run {index}) wrote no profile.json under {out_dir}")
        return load_any(str(found[0]))
    return run


@dataclass(frozen=True)
class CallableSpec:
    """What a worker needs to time a callable (picklable: `fn` must be a module-level function)."""
    fn: Callable[[], Any]
    warmup: int = 3
    trials: int = 5
    calls: int = 10
    device: str = "cpu"


def _time_callable(spec: CallableSpec, job_dir: Path) -> dict:
    """Runs in the fresh worker: warm-up calls, then `trials` trials of `calls` timed calls each;
    one value per trial (ms per call), synchronising the device at the trial's edges."""
    sync = _sync(spec.device)
    for _ in range(spec.warmup):
        spec.fn()
    samples = []
    for _ in range(spec.trials):
        sync()
        t0 = time.perf_counter_ns()
        for _ in range(spec.calls):
            spec.fn()
        sync()
        samples.append((time.perf_counter_ns() - t0) / 1e6 / spec.calls)
    from yoloprof.profiles.model import empty_profile, metric

    p = empty_profile("trace", {"device": spec.device, "runs": spec.calls, "warmup": spec.warmup},
                      {"hostname": os.uname().nodename})
    p["kind"] = "callable"
    p["metrics"] = {"step_ms": metric(samples, "ms", "lower")}
    return p


def _sync(device: str) -> Callable[[], None]:
    """Synchronise the device the callable runs on at a trial's edges (the one parser: `auto` is
    the first GPU where there is one); nothing on the CPU."""
    from yoloprof.config.device_spec import parse_device

    spec = parse_device(device)
    if spec.is_cuda:
        import torch

        return lambda: torch.cuda.synchronize(spec.index)
    return lambda: None


def callable_runner(fn: Callable[[], Any], **opts: Any) -> Runner:
    """A side that times `fn()` in a fresh worker process (options: warmup, trials, calls, device)."""
    spec = CallableSpec(fn, **opts)

    def run(index: int, out_dir: Path) -> dict:
        from yoloprof.sweep.worker import run_in_worker

        return run_in_worker(_time_callable, spec, out_dir)[0]
    return run


def settings_runner(settings: Any) -> Runner:
    """A side that runs `yoloprof.capturing.builtin.capture_entry.capture(settings)` in a fresh worker process (the
    sweep's: forked from a server that imported torch once, so a process costs a fork, not an
    interpreter start)."""
    def run(index: int, out_dir: Path) -> dict:
        from yoloprof.capturing.builtin import capture_entry as api
        from yoloprof.sweep.worker import run_in_worker

        return run_in_worker(api.capture, settings, out_dir)[0]
    return run


@dataclass
class ABState:
    """The processes run so far and every look taken."""
    profiles: dict[str, list[dict]] = field(default_factory=lambda: {"A": [], "B": []})
    seconds: list[float] = field(default_factory=list)
    looks: list[dict] = field(default_factory=list)


def _check_metric(state: ABState, metric: str) -> None:
    """After the first process of each side: the deciding metric must be in both (else stop now,
    not after the whole budget)."""
    have = [set((side[0].get("metrics") or {})) for side in state.profiles.values()]
    if not all(metric in h for h in have):
        common = sorted(set.intersection(*have))
        raise UsageError(f"--metric {metric!r} is not in both sides' profiles; valid: {', '.join(common) or 'none'}")


def _look(state: ABState, metric: str, alpha: float, noise: float, floor: dict | None = None) -> dict:
    from yoloprof.readers.compare import compute_compare

    res = compute_compare(state.profiles["A"], state.profiles["B"], metrics=[metric], alpha=alpha,
                          noise=noise, floors={metric: floor} if floor else {})
    row = res["metrics"][0]
    return {"per_side": len(state.profiles["B"]), "alpha": alpha, "ratio": row.get("ratio"),
            "ci": row.get("ci"), "p": row.get("p_welch"), "verdict_code": row.get("verdict_code"),
            "verdict": row.get("verdict")}


def run_ab(run_a: Runner, run_b: Runner, out_dir: Path, *, metric: str = "step_ms",
           alpha: float = ALPHA, noise: float = NOISE, max_runs: int = DEFAULT_MAX_RUNS,
           budget_s: float | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run A and B in alternating fresh processes until decided (module docstring) and return
    {"profiles": {"A": [...], "B": [...]}, "looks", "stopped", "alpha_per_look", "seconds",
    "processes"}; the caller compares the profiles at `alpha_per_look`."""
    if max_runs < 2 * 2:
        raise UsageError(f"--max-runs must be at least 4 (2 processes per side), got {max_runs}")
    if budget_s is not None and budget_s <= 0:
        raise UsageError(f"--budget-s must be positive, got {budget_s}")
    per_side = max_runs // 2
    schedule = look_schedule(per_side)
    levels = look_alphas(schedule, alpha)
    state, runners, start = ABState(), {"A": run_a, "B": run_b}, time.monotonic()
    stopped = "max runs"
    for i, side in enumerate(abba_order(2 * per_side)):
        if budget_s is not None and state.seconds:
            mean = sum(state.seconds) / len(state.seconds)
            if time.monotonic() - start + mean > budget_s:
                stopped = "budget"
                break
        t0 = time.monotonic()
        state.profiles[side].append(runners[side](i, out_dir / f"{side}{len(state.profiles[side])}"))
        state.seconds.append(time.monotonic() - t0)
        na, nb = len(state.profiles["A"]), len(state.profiles["B"])
        if na == nb == 1:
            _check_metric(state, metric)
        if progress:
            progress(f"run {i + 1}: {side} ({state.seconds[-1]:.1f} s)")
        if na == nb and na in schedule and len(state.looks) < len(schedule):
            state.looks.append(_look(state, metric, levels[len(state.looks)], noise))
            if state.looks[-1]["verdict_code"] in DECIDED:
                stopped = "decided"
                break
    na, nb = len(state.profiles["A"]), len(state.profiles["B"])
    if stopped == "budget" and min(na, nb) >= 2 and len(state.looks) < len(schedule) \
            and (not state.looks or state.looks[-1]["per_side"] != nb or na != nb):
        # the budget's last look spends the alpha of the next planned look it replaces
        state.looks.append(_look(state, metric, levels[len(state.looks)], noise))
    return {"profiles": state.profiles, "looks": state.looks, "stopped": stopped, "schedule": schedule,
            "alpha": alpha, "alphas": levels,
            "alpha_per_look": state.looks[-1]["alpha"] if state.looks else levels[-1],
            "seconds": round(time.monotonic() - start, 3),
            "processes": [na, nb], "metric": metric,
            "order": "".join(abba_order(na + nb)), "max_runs": max_runs, "budget_s": budget_s}


def ab_compare(run: dict[str, Any], *, metrics: list[str] | None = None, noise: float = NOISE) -> dict[str, Any]:
    """The `compare` result of an A/B run (A = before, B = after) at the level its last look spent,
    with the run's story under "ab" (order, looks, why it stopped, seconds)."""
    from yoloprof.readers.compare import compute_compare

    res = compute_compare(run["profiles"]["A"], run["profiles"]["B"], metrics=metrics,
                          alpha=run["alpha_per_look"], noise=noise)
    res["ab"] = {k: v for k, v in run.items() if k != "profiles"}
    res["notes"].append(f"A/B in fresh processes ({run['order']}); stopped: {run['stopped']} after "
                        f"{sum(run['processes'])} processes, {run['seconds']:.1f} s; alpha {run['alpha']} split over "
                        f"{len(run['schedule'])} planned looks at {run['schedule']} processes per side "
                        f"({', '.join(f'{x:.3g}' for x in run['alphas'])}); the verdicts below are at the "
                        f"last look's {run['alpha_per_look']:.3g}")
    return res
