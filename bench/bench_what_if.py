"""Does `what-if --remove-launches N` predict a real change? Check it against torch.compile.

On CPU, torch.compile (inductor) fuses elementwise ops into generated C++ kernels, so the compiled
forward dispatches far fewer ops than the eager one. The bench profiles the built-in detector's
forward both ways (untraced timing trials, interleaved, plus one torch.profiler trace each, read by
yoloprof's trace engine), runs `what-if` on the eager profile with N = the measured drop in ops
per step, and prints predicted vs measured step time and their ratio.

What it can and cannot show: the what-if model on a CPU profile removes N op dispatches at the
mean self CPU time per op. Fusion also removes memory traffic and may change the remaining ops'
cost, so a ratio far from 1 says how much of compile's gain is *not* dispatch count.

    python bench/bench_what_if.py [--size n] [--imgsz 320] [--batch 1] [--runs 20] [--trials 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable


def build(size: str, batch: int, imgsz: int) -> tuple[Any, Any]:
    import torch

    from yoloprof.workloads.models import build_model

    model = build_model("yolo", size=size, num_classes=80, seed=0).eval()
    x = torch.rand(batch, 3, imgsz, imgsz, generator=torch.Generator().manual_seed(0))
    return model, x


def make_compiled(model: Any, x: Any) -> tuple[Callable[[], Any] | None, str, float]:
    """The compiled forward, or None with the reason (no C compiler, inductor error...)."""
    import torch

    if shutil.which("gcc") is None and shutil.which("cc") is None and shutil.which("clang") is None:
        return None, "no C compiler on PATH: inductor cannot build CPU kernels", 0.0
    try:
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        with torch.no_grad():
            compiled(x)  # compile happens on the first call
        return (lambda: compiled(x)), "", time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - report why compile is unavailable, keep eager
        return None, f"torch.compile failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", 0.0


def time_trial(fn: Callable[[], Any], warmup: int, runs: int) -> float:
    """Mean ms per call, no profiler attached."""
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            fn()
        t0 = time.perf_counter_ns()
        for _ in range(runs):
            fn()
        return (time.perf_counter_ns() - t0) / 1e6 / runs


def trace_profile(fn: Callable[[], Any], path: Path) -> dict:
    """One profiler window (wait 1, warmup 1, active 3) analysed by the trace engine."""
    import torch

    from yoloprof.traces.to_profile import profile_from_trace_bytes

    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                  schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1))
    with prof, torch.no_grad():
        for _ in range(5):
            with torch.profiler.record_function("yoloprof/forward"):
                fn()
            prof.step()
    prof.export_chrome_trace(str(path))
    return profile_from_trace_bytes(path.read_bytes(), source=path.name)


def ops_per_step(profile: dict) -> float:
    return sum(o.get("count_per_step") or 0.0 for o in profile.get("ops") or [])


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from yoloprof.profiles.model import metric
    from yoloprof.readers.what_if import compute_what_if

    torch.set_num_threads(args.threads)
    model, x = build(args.size, args.batch, args.imgsz)
    eager = lambda: model(x)  # noqa: E731
    compiled, why, compile_s = make_compiled(model, x)
    variants = {"eager": eager, **({"compiled": compiled} if compiled else {})}
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.trials):  # interleaved trials: machine drift hits both variants
        for name, fn in variants.items():
            samples[name].append(time_trial(fn, args.warmup, args.runs))
    tmp = Path(tempfile.mkdtemp(prefix="yoloprof-bench-"))
    profiles = {name: trace_profile(fn, tmp / f"{name}_trace.json") for name, fn in variants.items()}
    result: dict[str, Any] = {"size": args.size, "imgsz": args.imgsz, "batch": args.batch,
                              "threads": torch.get_num_threads(), "torch": torch.__version__,
                              "compile_available": compiled is not None, "compile_note": why,
                              "compile_s": compile_s, "trace_dir": str(tmp)}
    for name, prof in profiles.items():
        prof["metrics"]["step_ms"] = metric(samples[name], "ms", "lower")  # untraced, like capture
        result[name] = {"step_ms": statistics.fmean(samples[name]), "samples": samples[name],
                        "traced_step_ms": prof["trace"]["per_step"][0]["step_ms"] if prof["trace"].get("per_step") else None,
                        "ops_per_step": ops_per_step(prof)}
    if compiled is None:
        return result
    removed = max(0, round(result["eager"]["ops_per_step"] - result["compiled"]["ops_per_step"]))
    wi = compute_what_if(profiles["eager"], remove_launches=removed)
    measured = result["compiled"]["step_ms"]
    result["what_if"] = {"removed_ops": removed, "cost_per_op_us": wi["cost_per_launch_us"],
                         "predicted_step_ms": wi["predicted_step_ms"], "measured_step_ms": measured,
                         "predicted_over_measured": wi["predicted_step_ms"] / measured,
                         "predicted_if_cheapest_ms": wi["predicted_step_ms_if_cheapest"],
                         "cheapest_over_measured": wi["predicted_step_ms_if_cheapest"] / measured,
                         "assumptions": wi["assumptions"]}
    return result


def report(r: dict[str, Any]) -> None:
    print(f"bench_what_if: yolo-{r['size']} forward, batch {r['batch']}, imgsz {r['imgsz']}, "
          f"{r['threads']} threads, torch {r['torch']}")
    e = r["eager"]
    print(f"  eager     {e['step_ms']:8.2f} ms/call  {e['ops_per_step']:7.0f} ops/call")
    if not r["compile_available"]:
        print(f"  compiled  n/a: {r['compile_note']}")
        return
    c, w = r["compiled"], r["what_if"]
    print(f"  compiled  {c['step_ms']:8.2f} ms/call  {c['ops_per_step']:7.0f} ops/call  "
          f"(compile took {r['compile_s']:.1f} s)")
    print(f"  what-if --remove-launches {w['removed_ops']} on the eager profile "
          f"(cost per op {w['cost_per_op_us']:.1f} us):")
    print(f"    predicted {w['predicted_step_ms']:.2f} ms, measured {w['measured_step_ms']:.2f} ms, "
          f"predicted/measured = {w['predicted_over_measured']:.3f}")
    print(f"    conservative (the cheapest ops removed): {w['predicted_if_cheapest_ms']:.2f} ms, "
          f"/measured = {w['cheapest_over_measured']:.3f}")
    for a in w["assumptions"]:
        print(f"    - {a}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="n")
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20, help="timed calls per trial")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; 1 keeps timings stable on a shared machine")
    ap.add_argument("--json", default=None, help="also write the result to this file")
    args = ap.parse_args(argv)
    result = run(args)
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
