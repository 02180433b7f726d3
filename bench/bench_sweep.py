"""What does the sweep machinery cost on top of the captures it runs?

Runs `yoloprof sweep` as a user does (a subprocess) over a grid of tiny CPU captures and compares
the sweep's total wall time with the sum of the jobs' own wall times (row `wall_s`: translation +
capture). The difference is Hydra (composition, logging, .hydra files), rows, consolidation and
the start-up of the process. A 1-job sweep measures the fixed start-up part, so the per-job
overhead is (overhead_N - overhead_1) / (N - 1).
Target: per-job overhead below 1 s with the basic launcher.

    python bench/bench_sweep.py [--jobs 6] [--imgsz 64] [--steps 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from yoloprof.profiles.rows import read_rows


def run_sweep(workdir: Path, jobs: int, imgsz: int, steps: int) -> tuple[float, float, int]:
    """(sweep wall s, sum of job wall s, rows) for one `-m trial=range(0,jobs)` sweep of tiny captures
    (identical captures, so the job times are comparable between the two sweeps)."""
    trials = f"range(0,{jobs})" if jobs > 1 else "0"
    args = ["-m", f"trial={trials}", "batch=1", "device=cpu", "size=n",
            f"imgsz={imgsz}", "workers=0", "capture.warmup=1", f"capture.steps={steps}",
            "analysis.enabled=false", "project=runs"]
    env = {**os.environ, "NO_COLOR": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "yoloprof", "sweep", *args], cwd=workdir, env=env,
                          capture_output=True, text=True)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed ({proc.returncode}): {proc.stderr[-2000:]}")
    [sweep] = sorted((workdir / "runs" / "sweeps" / "adhoc").iterdir())
    df = read_rows(sweep)
    return total, float(df["wall_s"].sum()), len(df)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--imgsz", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    results = {}
    for n in (1, args.jobs):
        with tempfile.TemporaryDirectory() as tmp:
            results[n] = run_sweep(Path(tmp), n, args.imgsz, args.steps)
    table = Table(title="sweep overhead (basic launcher, tiny CPU captures)")
    for col in ("jobs", "sweep wall s", "sum job wall s", "overhead s", "ratio wall/jobs"):
        table.add_column(col, justify="right")
    for n, (total, jobs_sum, rows) in results.items():
        assert rows == n, (rows, n)
        table.add_row(str(n), f"{total:.2f}", f"{jobs_sum:.2f}", f"{total - jobs_sum:.2f}",
                      f"{total / jobs_sum:.2f}")
    console = Console()
    console.print(table)
    (t1, s1, _), (tn, sn, _) = results[1], results[args.jobs]
    per_job = ((tn - sn) - (t1 - s1)) / (args.jobs - 1)
    fixed = (t1 - s1) - per_job
    verdict = "meets" if per_job < 1.0 else "misses"
    console.print(f"fixed start-up overhead ~{fixed:.2f} s; per-job overhead {per_job:.3f} s "
                  f"({verdict} the < 1 s target)")


if __name__ == "__main__":
    main()
