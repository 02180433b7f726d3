"""What `yoloprof.profile` costs a user's loop, and what the per-module methods cost.

1. Overhead of the timed steps: the profile's own step_ms (one synchronise per step boundary,
   phase marks) against the same loop timed from outside with no yoloprof at all, in interleaved
   pairs (plain, profiled, plain, ...); the median of the per-pair ratios. Target: <= 3%.
2. The bookkeeping itself, free of the workload's noise: an iteration that does nothing but open
   three phases and call `prof.step()`, timed by the profile (its step_ms is pure overhead) and
   from outside; the 3% target then holds for any step longer than that cost / 0.03. And the cost
   of `prof.step()` once the profile is done (the loop's remaining iterations).
3. Per-module breakdown: CPU time per step with the module hooks (capturing/extras/module_recorder.py) and with
   torch.profiler's module view (`with_stack=True`, which names `nn.Module: X` frames), each
   against the plain step. This is the measurement behind docs/userloop.md's choice.

    PYTHONPATH=. python bench/bench_userloop.py [--pairs 5] [--steps 30] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import yoloprof  # noqa: E402
from yoloprof.capturing.device.torch_device import DeviceInfo, synchronize  # noqa: E402
from yoloprof.capturing.extras.module_recorder import ModuleRecorder  # noqa: E402


def make(device: torch.device, width: int) -> tuple[nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                          nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(8, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (8,), device=device)
    return model, opt, x, y


def one_step(model, opt, x, y, phase=None) -> None:
    ctx = phase or (lambda name: _null)
    with ctx("forward"):
        loss = nn.functional.cross_entropy(model(x), y)
    with ctx("backward"):
        loss.backward()
    with ctx("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_null = _Null()


def plain_ms(model, opt, x, y, dev: DeviceInfo, steps: int) -> float:
    for _ in range(3):
        one_step(model, opt, x, y)
    synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        one_step(model, opt, x, y)
    synchronize(dev)
    return (time.perf_counter() - t0) * 1e3 / steps


def profiled_ms(model, opt, x, y, steps: int, out: str) -> float:
    with yoloprof.profile(out, model=model, warmup=3, steps=steps, trace_steps=1, module_steps=1,
                          flops=False) as prof:
        while not prof.done:
            one_step(model, opt, x, y, prof.phase)
            prof.step()
    return prof.result["metrics"]["step_ms"]["value"]


def empty_iteration_us(out: str, steps: int = 2000) -> tuple[float, float]:
    """(the profile's own step time, outside wall time per iteration) of an empty iteration, us."""
    warmup = 10
    with yoloprof.profile(out, warmup=warmup, steps=steps, trace_steps=0, flops=False) as prof:
        t0 = 0.0
        while not prof.done:
            for name in ("forward", "backward", "optimizer"):
                with prof.phase(name):
                    pass
            prof.step()
            if prof.iterations == warmup:  # the timed window starts (after its one gc.collect)
                t0 = time.perf_counter()
        wall = (time.perf_counter() - t0) * 1e6 / steps
    return prof.result["metrics"]["step_ms"]["value"] * 1e3, wall


def done_step_us(out: str) -> float:
    with yoloprof.profile(out, warmup=0, steps=1, trace_steps=0, flops=False) as prof:
        prof.step()
        n = 200_000
        t0 = time.perf_counter()
        for _ in range(n):
            prof.step()
        return (time.perf_counter() - t0) * 1e6 / n


def _cpu_ms(fn, steps: int) -> float:
    """Median process CPU ms per step: with one thread, CPU time is what the method itself costs,
    and other processes on a shared machine do not inflate it as they inflate wall time."""
    times = []
    for _ in range(steps):
        t0 = time.process_time()
        fn()
        times.append((time.process_time() - t0) * 1e3)
    return statistics.median(times)


def plain_cpu_ms(model, opt, x, y, dev: DeviceInfo, steps: int) -> float:
    return _cpu_ms(lambda: (one_step(model, opt, x, y), synchronize(dev)), steps)


def hooks_ms(model, opt, x, y, dev: DeviceInfo, steps: int) -> float:
    rec = ModuleRecorder(model, dev).attach()

    def step() -> None:
        rec.begin_step()
        one_step(model, opt, x, y)
        synchronize(dev)
        rec.end_step()

    try:
        return _cpu_ms(step, steps)
    finally:
        rec.detach()


def stack_profiler_ms(model, opt, x, y, dev: DeviceInfo, steps: int) -> float:
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if dev.is_cuda else [])
    with torch.profiler.profile(activities=acts, with_stack=True, with_modules=True):
        return _cpu_ms(lambda: (one_step(model, opt, x, y), synchronize(dev)), steps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dev = DeviceInfo(device, "cuda" if device.type == "cuda" else "cpu")
    model, opt, x, y = make(device, args.width)
    ratios, plains = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            p = plain_ms(model, opt, x, y, dev, args.steps)
            q = profiled_ms(model, opt, x, y, args.steps, f"{tmp}/p{i}")
            plains.append(p)
            ratios.append(q / p)
            print(f"pair {i}: plain {p:.3f} ms/step, yoloprof.profile step_ms {q:.3f} ms ({100 * (q / p - 1):+.2f}%)")
        print(f"timed-step overhead: median {100 * (statistics.median(ratios) - 1):+.2f}% over {args.pairs} pairs "
              f"(spread {100 * (min(ratios) - 1):+.2f}% .. {100 * (max(ratios) - 1):+.2f}%)")
        own, wall = empty_iteration_us(tmp + "/e")
        print(f"empty iteration with 3 phases: {own:.2f} us (the profile's own step_ms), {wall:.2f} us wall per "
              f"timed iteration incl. the step boundary; 3% of a step is reached at steps of {wall / 0.03 / 1e3:.3f} ms")
        print(f"prof.step() after done: {done_step_us(tmp + '/d'):.3f} us per call")
    # interleaved rounds, medians of per-step CPU time
    rounds = [(plain_cpu_ms(model, opt, x, y, dev, args.steps), hooks_ms(model, opt, x, y, dev, args.steps),
               stack_profiler_ms(model, opt, x, y, dev, args.steps)) for _ in range(3)]
    base, hooks, stack = (statistics.median(r[i] for r in rounds) for i in range(3))
    print(f"module breakdown, CPU ms per step (median of 3 interleaved rounds): plain {base:.3f}; "
          f"module hooks {hooks:.3f} (x{hooks / base:.2f}); torch.profiler with_stack {stack:.3f} "
          f"(x{stack / base:.2f})")


if __name__ == "__main__":
    main()
