"""Does the timing pass measure the step honestly? Compare it with a hand-written bare loop.

Same process, same model size, batch and data; the two are interleaved (A B, B A, ...) so that
drift of the machine hits both; the statistic is the median of the per-pair ratios.
Target: timing pass / bare loop within 3% (ratio in [0.97, 1.03]).

    python bench/bench_timing.py [--pairs 7] [--steps 10] [--batch 4] [--imgsz 320]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from yoloprof.capture.build import build_dataset, build_train_context
from yoloprof.capture.device import resolve_device
from yoloprof.capture.settings import CaptureSettings
from yoloprof.capture.timing import time_train_trial


def bare_loop(ctx, warmup: int, steps: int) -> float:
    """What a user would write: no phases, no clock marks, perf_counter around the measured steps."""
    it = iter(ctx.loader)
    model, opt, loss_fn = ctx.model, ctx.optimizer, ctx.loss_fn
    t0 = 0.0
    for i in range(warmup + steps):
        if i == warmup:
            t0 = time.perf_counter()
        images, targets = next(it)
        images = images.float().div_(255.0)
        out = loss_fn(model(images), targets)
        (out[0] if isinstance(out, tuple) else out).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return (time.perf_counter() - t0) * 1e3 / steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--size", default="n")
    args = ap.parse_args()

    settings = CaptureSettings.for_mode("train", device="cpu", batch=args.batch, imgsz=args.imgsz,
                                        size=args.size, steps=args.steps, warmup=args.warmup, workers=0)
    device = resolve_device("cpu")
    dataset = build_dataset(settings, (args.warmup + args.steps) * args.batch)
    rows = []
    for pair in range(args.pairs):
        results = {}
        order = ("timing", "bare") if pair % 2 == 0 else ("bare", "timing")
        for which in order:
            ctx = build_train_context(settings, device, dataset, amp=False)
            if which == "timing":
                trial = time_train_trial(ctx, device, args.warmup, args.steps)
                results[which] = statistics.fmean(trial.step_ms)
            else:
                results[which] = bare_loop(ctx, args.warmup, args.steps)
        rows.append((pair, results["timing"], results["bare"], results["timing"] / results["bare"]))

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, size {args.size}, "
          f"batch {args.batch}, imgsz {args.imgsz}, {args.steps} steps per run")
    print(f"{'pair':>4}  {'timing pass ms':>14}  {'bare loop ms':>12}  {'ratio':>7}")
    for pair, timing, bare, ratio in rows:
        print(f"{pair:>4}  {timing:>14.2f}  {bare:>12.2f}  {ratio:>7.4f}")
    ratios = sorted(r[3] for r in rows)
    median = statistics.median(ratios)
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else (median, median, median)
    verdict = "within 3%" if abs(median - 1) <= 0.03 else "OUTSIDE 3%"
    print(f"median ratio timing/bare = {median:.4f} ({verdict}); per-pair ratios IQR "
          f"[{q1:.3f}, {q3:.3f}], median step {statistics.median(r[2] for r in rows):.1f} ms (bare)")


if __name__ == "__main__":
    main()
