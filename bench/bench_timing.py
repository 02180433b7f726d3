"""Does the timing pass measure the step honestly? Compare it with a hand-written bare loop.

Same process, same model size, batch and data; the two are interleaved (A B, B A, ...) so that
drift of the machine hits both. Per pair: the ratio of the median step times (robust to a
preempted step); the statistic is the median of the per-pair ratios (ratios of means shown too).
Target: timing pass / bare loop within 3% (ratio in [0.97, 1.03]).

    python bench/bench_timing.py [--pairs 9] [--steps 15] [--batch 4] [--imgsz 320] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from yoloprof.capturing.builtin.trial_context import build_dataset, build_train_context
from yoloprof.capturing.device.torch_device import resolve_device
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.capturing.passes.timing import time_train_trial


def bare_loop(ctx, warmup: int, steps: int) -> list[float]:
    """What a user would write: no phases, no clock marks; perf_counter around each step."""
    it = iter(ctx.loader)
    model, opt, loss_fn = ctx.model, ctx.optimizer, ctx.loss_fn
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        images, targets = next(it)
        images = images.float().div_(255.0)
        loss, _ = loss_fn(model(images), targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--size", default="n")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads; 1 keeps a core free for the OS, which makes a "
                         "2-core machine's step times far steadier")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

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
                results[which] = time_train_trial(ctx, device, args.warmup, args.steps).step_ms
            else:
                results[which] = bare_loop(ctx, args.warmup, args.steps)
        # Per-step medians: one preempted step on a shared VM moves a mean by several percent.
        timing, bare = statistics.median(results["timing"]), statistics.median(results["bare"])
        mean_ratio = statistics.fmean(results["timing"]) / statistics.fmean(results["bare"])
        rows.append((pair, timing, bare, timing / bare, mean_ratio))

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, size {args.size}, "
          f"batch {args.batch}, imgsz {args.imgsz}, {args.steps} steps per run")
    print(f"{'pair':>4}  {'timing median ms':>16}  {'bare median ms':>14}  {'ratio':>7}  {'ratio of means':>14}")
    for pair, timing, bare, ratio, mean_ratio in rows:
        print(f"{pair:>4}  {timing:>16.2f}  {bare:>14.2f}  {ratio:>7.4f}  {mean_ratio:>14.4f}")
    ratios = sorted(r[3] for r in rows)
    median = statistics.median(ratios)
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else (median, median, median)
    verdict = "within 3%" if abs(median - 1) <= 0.03 else "OUTSIDE 3%"
    print(f"median ratio of means = {statistics.median(r[4] for r in rows):.4f}")
    print(f"median ratio timing/bare = {median:.4f} ({verdict}); per-pair ratios IQR "
          f"[{q1:.3f}, {q3:.3f}], median step {statistics.median(r[2] for r in rows):.1f} ms (bare)")


if __name__ == "__main__":
    main()
