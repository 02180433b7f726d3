"""What steady-state warm-up costs and buys (docs/benchmarks.md "Steady-state warm-up").

1. The built-in tiny CPU workloads (training on synthetic data, inference on the bundled image):
   warm-up steps each trial took with `--warmup W` (auto cap) against a fixed warm-up
   (`--warmup-max W`), whether each reached steady state, and the extra seconds (extra steps x
   that trial's mean step time), beside the timing pass's own time.
2. A model slow on its first 6 calls per process (tests/assets/slow_start.py) with `--warmup 1`:
   each trial's step time over the same model's steady state (a capture in the same process after
   the slow calls were spent), fixed warm-up against steady-state warm-up.
3. The demo sweep's point (3 steps, `--warmup 1`, 3 trials): step time per trial, fixed against
   steady-state warm-up (the issue saw a first trial of 88 ms against 77-79 ms).

    python bench/bench_steady.py [--repeat 3] [--train-steps 20] [--infer-runs 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yoloprof
from yoloprof.config.capture_settings import CaptureSettings

ASSETS = Path(__file__).resolve().parent.parent / "tests" / "assets"


def capture(settings: CaptureSettings, out: Path) -> tuple[dict, float]:
    t0 = time.perf_counter()
    profile = yoloprof.capture(settings, out).data
    return profile, time.perf_counter() - t0


def workloads(args: argparse.Namespace) -> dict[str, CaptureSettings]:
    common = {"device": "cpu", "trace": False, "modules": False, "repeat": args.repeat, "threads": 1}
    return {
        "train n 64px b2": CaptureSettings.for_mode("train", batch=2, imgsz=64, steps=args.train_steps,
                                                    workers=0, **common),
        "infer n 96px b1": CaptureSettings.for_mode("infer", imgsz=96, runs=args.infer_runs, **common),
    }


def first_over_rest(samples: list[float]) -> float:
    """A capture's first trial over the mean of its others: 1.0 when the first trial is not slow
    (within one capture, so the machine's drift between captures cancels)."""
    return samples[0] / statistics.fmean(samples[1:]) if len(samples) > 1 else float("nan")


def tiny_workloads(args: argparse.Namespace, tmp: Path) -> None:
    print("built-in tiny CPU workloads: warm-up steps per trial, auto cap vs fixed (fixed first,"
          " then auto; one throwaway capture first)")
    print(f"{'workload':18s} {'--warmup':>8s} {'cap':>4s} {'steps per trial':>16s} {'all steady':>10s} "
          f"{'extra s':>8s} {'auto s':>7s} {'fixed s':>7s} {'1st/rest auto':>13s} {'fixed':>6s}")
    for name, base in workloads(args).items():
        capture(base.__class__(**{**base.__dict__, "repeat": 1}), tmp / "throwaway")
        for warmup in (1, 5):
            auto = base.__class__(**{**base.__dict__, "warmup": warmup})
            fixed = base.__class__(**{**auto.__dict__, "warmup_max": warmup})
            fixed_profile, wall_fixed = capture(fixed, tmp / f"{name}-{warmup}-fixed".replace(" ", "_"))
            profile, wall = capture(auto, tmp / f"{name}-{warmup}-auto".replace(" ", "_"))
            used = profile["config"]["warmup_used"]
            step = profile["metrics"]["step_ms"]["samples"]
            extra_s = sum((w - warmup) * ms / 1e3 for w, ms in zip(used["steps"], step))
            print(f"{name:18s} {warmup:8d} {used['max']:4d} {str(used['steps']):>16s} "
                  f"{str(all(used['steady'])):>10s} {extra_s:8.3f} {wall:7.2f} {wall_fixed:7.2f} "
                  f"{first_over_rest(step):13.3f} "
                  f"{first_over_rest(fixed_profile['metrics']['step_ms']['samples']):6.3f}")


def slow_start_model(args: argparse.Namespace, tmp: Path) -> None:
    sys.path.insert(0, str(ASSETS))
    import slow_start

    base = CaptureSettings.for_mode("infer", model="slow_start.SlowStart", device="cpu", imgsz=32, warmup=1,
                                    runs=args.infer_runs, repeat=args.repeat, trace=False, modules=False,
                                    threads=1)
    slow_start.reset()
    slow_start.spend_slow_calls()
    steady, _ = capture(base, tmp / "steady")
    ref = statistics.fmean(steady["metrics"]["step_ms"]["samples"])
    print(f"\nslow-start model ({slow_start.SLOW_CALLS} calls of +{slow_start.EXTRA_MS:g} ms on "
          f"{slow_start.STEADY_MS:g} ms), --warmup 1: step time per trial / steady state ({ref:.3f} ms)")
    for label, warmup_max in (("fixed (--warmup-max 1)", 1), ("steady-state warm-up", -1)):
        slow_start.reset()  # as in a fresh process
        s = base.__class__(**{**base.__dict__, "warmup_max": warmup_max})
        profile, wall = capture(s, tmp / f"slow-{warmup_max}")
        samples = profile["metrics"]["step_ms"]["samples"]
        ratios = ", ".join(f"{ms / ref:.3f}" for ms in samples)
        used = profile["config"]["warmup_used"]
        print(f"  {label:24s} ratios {ratios}  first/rest {first_over_rest(samples):.3f}  "
              f"warm-up {used['steps']} steady {used['steady']}  {wall:.2f} s")


def demo_workload(args: argparse.Namespace, tmp: Path) -> None:
    """The demo sweep's point (sweeps/demo.yaml: training, 128 px, 3 steps, --warmup 1, 3 trials),
    at batch 4 in bfloat16 as the issue quotes it: step time per trial, fixed against steady-state."""
    base = CaptureSettings.for_mode("train", device="cpu", batch=4, imgsz=128, workers=0, steps=3, warmup=1,
                                    repeat=3, precision="bfloat16", trace=False, modules=False)
    print("\ndemo point (train 128 px b4 bfloat16, 3 steps, --warmup 1, 3 trials): step ms per trial")
    for label, warmup_max in (("fixed (--warmup-max 1)", 1), ("steady-state warm-up", -1)):
        s = base.__class__(**{**base.__dict__, "warmup_max": warmup_max})
        profile, wall = capture(s, tmp / f"demo-{warmup_max}")
        used = profile["config"]["warmup_used"]
        samples = profile["metrics"]["step_ms"]["samples"]
        step = ", ".join(f"{ms:.1f}" for ms in samples)
        print(f"  {label:24s} {step}  first/rest {first_over_rest(samples):.3f}  warm-up {used['steps']} "
              f"steady {used['steady']}  {wall:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=20)
    ap.add_argument("--infer-runs", type=int, default=50)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        tiny_workloads(args, Path(tmp))
        slow_start_model(args, Path(tmp))
        demo_workload(args, Path(tmp))


if __name__ == "__main__":
    main()
