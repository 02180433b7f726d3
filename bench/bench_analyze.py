"""Benchmark of the analysis stages: 10,000 synthetic sweep rows (500 configurations x 20 trial
jobs, one sample each) -> read, compare (1,500 comparisons with Holm), best/Pareto/scaling, and
the report tables (Markdown, CSV, parquet). Target: under 5 s. The HTML report (matplotlib
figures: one figure of metrics x swept axes, capped at MAX_SERIES lines per panel, plus the bar
and Pareto charts) is timed apart, target under 3 s for 500 configurations.

Run: python bench/bench_analyze.py [--configs 500 --trials 20 --no-html]

`--files N` times what `yoloprof analyze DIR --no-html` does on a sweep folder of N jobs written to
disk (one row.parquet and one small profile.json per job, 10 configurations): every job folder
accounted for, rows read together, profiles loaded, compared, drift checked, outputs committed.
Target: under 3 s for 2,000 jobs.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

TARGET_S = 5.0
FILES_TARGET_S = 3.0
HTML_TARGET_S = 3.0


def synthetic_rows(n_configs: int, trials: int, seed: int = 0) -> pd.DataFrame:
    """Rows in the sweep contract's columns: a batch x imgsz x size x precision grid, trial axis
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
                         "batch": batch, "imgsz": imgsz, "size": size, "precision": dtype, "trial": t,
                         "step_ms": s, "step_ms_samples": [s], "img_per_s": batch * 1000 / s,
                         "img_per_s_samples": [batch * 1000 / s], "peak_mem_mb": 50.0 * batch * imgsz / 320,
                         "peak_mem_mb_samples": [50.0 * batch * imgsz / 320], "device_name": "cpu",
                         "torch_version": "2.x", "profile_path": None})
    return pd.DataFrame(recs)


def run(n_configs: int, trials: int, html: bool) -> list[tuple[str, float]]:
    from yoloprof.analysis.collect import collect_rows
    from yoloprof.analysis.run import analyze_collected
    from yoloprof.render.report import write_outputs

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


def write_sweep(root: Path, n_jobs: int, n_configs: int = 10) -> Path:
    """n_jobs job folders (trial outermost) with a row.parquet and a profile.json each."""
    from yoloprof.profiles.model import SCHEMA
    import json

    from yoloprof.profiles.rows import consolidate, write_row

    rows = synthetic_rows(n_configs, math.ceil(n_jobs / n_configs)).head(n_jobs)
    sweep = root / "sweeps" / "bench" / "20240101-000000-bench"
    for r in rows.to_dict("records"):
        job = sweep / str(r["job_num"])
        job.mkdir(parents=True)
        r = {**r, "sweep_name": "bench", "sweep_id": sweep.name, "profile_path": f"{r['job_num']}/profile.json",
             "overrides": json.dumps([f"{k}={r[k]}" for k in ("batch", "imgsz", "size", "precision", "trial")])}
        write_row(job / "row.parquet", r)
        metrics = {m: {"value": r[m], "samples": r[f"{m}_samples"], "unit": u, "better": b}
                   for m, u, b in (("step_ms", "ms", "lower"), ("img_per_s", "img/s", "higher"),
                                   ("peak_mem_mb", "MB", "lower"))}
        prof = {"schema": SCHEMA, "kind": "train", "config": {"batch": r["batch"]}, "env": {"device_name": "cpu"},
                "metrics": metrics, "phases": [{"phase": "forward", "wall_ms_per_step": r["step_ms"] / 2}],
                "categories": [], "kernels": [], "ops": [], "warnings": []}
        (job / "profile.json").write_text(json.dumps(prof))
    consolidate(sweep)  # as every sweep does at its end
    return sweep


def run_files(n_jobs: int) -> list[tuple[str, float]]:
    from yoloprof.analysis.collect import collect
    from yoloprof.analysis.inventory import read_sweep
    from yoloprof.render.report import analyze_sweep
    from yoloprof.render.analysis_terminal import make_console

    with tempfile.TemporaryDirectory() as tmp:
        sweep = write_sweep(Path(tmp), n_jobs)
        t0 = time.perf_counter()
        read_sweep(sweep)
        t1 = time.perf_counter()
        collect(sweep)
        t2, c2 = time.perf_counter(), time.process_time()
        res = analyze_sweep(sweep, html=False, console=make_console(quiet=True))
        t3, c3 = time.perf_counter(), time.process_time()
        print(f"{n_jobs} job folders, {len(res.configs)} configurations, {len(res.comparisons)} comparisons; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return [("read every row file (one dataset)", t1 - t0), ("collect (rows + profiles)", t2 - t1),
            ("analyze: CPU time of this process", c3 - c2), ("total (target)", t3 - t2)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=500)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--html", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the HTML report (default: on)")
    ap.add_argument("--files", type=int, default=0, help="time `analyze --no-html` on N job folders on disk")
    args = ap.parse_args()
    target = FILES_TARGET_S if args.files else TARGET_S
    timings = run_files(args.files) if args.files else run(args.configs, args.trials, args.html)
    print(f"{'stage':36s} {'seconds':>8s} {'vs target':>14s}")
    for name, s in timings:
        ratio = f"{s / target:.2f}x" if name.startswith("total") else ""
        print(f"{name:36s} {s:8.2f} {ratio:>14s}")
    total = dict(timings)["total (target)"]
    print("PASS" if total < target else "FAIL", f"(total {total:.2f} s, target {target:.0f} s)")
    html = dict(timings).get("HTML report (separate)")
    if html is not None:
        print("PASS" if html < HTML_TARGET_S else "FAIL",
              f"(HTML report {html:.2f} s = {html / HTML_TARGET_S:.2f}x of the {HTML_TARGET_S:.0f} s target, "
              f"{args.configs} configurations)")


if __name__ == "__main__":
    main()
