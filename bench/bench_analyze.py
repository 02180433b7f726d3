"""Benchmark of the analysis stages: 10,000 synthetic sweep rows (500 configurations x 20 trial
jobs, one sample each) -> read, compare (1,500 comparisons with Holm), best/Pareto/scaling, and
the report tables (Markdown, CSV, parquet). Target: under 5 s. The HTML report (matplotlib
figures) is timed separately because its cost grows with the plots, not the rows.

Run: python bench/bench_analyze.py [--configs 500 --trials 20 --html]
"""

from __future__ import annotations

import argparse
import itertools
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

TARGET_S = 5.0


def synthetic_rows(n_configs: int, trials: int, seed: int = 0) -> pd.DataFrame:
    """Rows in the sweep contract's columns: a batch x imgsz x size x amp_dtype grid, trial axis
    outermost, step time log-normal with 3% noise and a known dependence on the axes."""
    rng = np.random.default_rng(seed)
    grid = list(itertools.product((1, 2, 4, 8, 16), (256, 320, 416, 512, 640), ("n", "t", "s", "m"),
                                  ("float16", "bfloat16", "float32", "int8", "fp8")))[:n_configs]
    recs = []
    for t in range(trials):
        for g, (batch, imgsz, size, dtype) in enumerate(grid):
            step = 5.0 * batch ** 0.8 * (imgsz / 320) ** 2 * (1 + "ntsm".index(size)) * (0.9 if dtype == "bfloat16" else 1)
            s = float(rng.lognormal(math.log(step), 0.03))
            recs.append({"sweep_id": "bench", "job_num": t * len(grid) + g, "status": "ok",
                         "group_hash": f"g{g:04d}", "config_hash": f"g{g:04d}-{t}", "mode": "train",
                         "batch": batch, "imgsz": imgsz, "size": size, "amp_dtype": dtype, "trial": t,
                         "step_ms": s, "step_ms_samples": [s], "img_per_s": batch * 1000 / s,
                         "img_per_s_samples": [batch * 1000 / s], "peak_mem_mb": 50.0 * batch * imgsz / 320,
                         "peak_mem_mb_samples": [50.0 * batch * imgsz / 320], "device_name": "cpu",
                         "torch_version": "2.x", "profile_path": None})
    return pd.DataFrame(recs)


def run(n_configs: int, trials: int, html: bool) -> list[tuple[str, float]]:
    from yoloprof.analysis.collect import collect_rows
    from yoloprof.analysis.run import analyze_collected, write_outputs

    rows = synthetic_rows(n_configs, trials)
    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        c = collect_rows(rows, Path(tmp), load_profiles=False)
        res = analyze_collected(c, baseline=["batch=1"])
        t1 = time.perf_counter()
        write_outputs(res, html=False)
        t2 = time.perf_counter()
        timings += [("read + compare + insights", t1 - t0), ("report tables (md, csv, parquet)", t2 - t1),
                    ("total (target)", t2 - t0)]
        print(f"{len(rows)} rows, {len(res.configs)} configurations, {len(res.comparisons)} comparisons, "
              f"verdicts: {res.comparisons['verdict_code'].value_counts().to_dict()}")
        if html:
            from yoloprof.render.html import render_report

            t3 = time.perf_counter()
            render_report(res)
            timings.append(("HTML report (separate)", time.perf_counter() - t3))
    return timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=500)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--html", action="store_true", help="also time the HTML report")
    args = ap.parse_args()
    timings = run(args.configs, args.trials, args.html)
    print(f"{'stage':36s} {'seconds':>8s} {'vs 5 s target':>14s}")
    for name, s in timings:
        ratio = f"{s / TARGET_S:.2f}x" if name.startswith("total") else ""
        print(f"{name:36s} {s:8.2f} {ratio:>14s}")
    total = dict(timings)["total (target)"]
    print("PASS" if total < TARGET_S else "FAIL", f"(total {total:.2f} s, target {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
