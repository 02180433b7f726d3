"""`yoloprof tune` on YOLOv8n (Ultralytics yaml, seeded weights), inference on the CPU, at each
--sizes, its decided ratios beside Ultralytics' claim (issue 40).

For each size, one run of

    yoloprof tune --model ultralytics --mode infer --device cpu --batch 1 --imgsz S
                  --knobs runtime,memory_format,precision,threads --budget B model.cfg=yolov8n.yaml

(`--compile` adds the compile knob: minutes of compilation per job on a small CPU). Every figure
is tune's own, from its `tune.parquet` (docs/tune.md "The table"): each level against the eager,
contiguous, float32 baseline at the CLI's threads, one fresh process per job, interleaved, rounds
until the sequential rule decides or the knob's share of the budget is spent; `ratio` > 1 is
faster (baseline step_ms / level step_ms), `[CI]` the rule's repeated confidence interval, `n` /
`n_base` the processes per side of the comparison. Contended jobs (other processes used more
than a quarter of a core while they ran: metrics/contention.py) are counted per run from the sweeps'
rows; verdicts leave them out and the sweep replaces them within its budget.

Ultralytics' claim beside the runtime rows: "Gain up to ... 3x CPU speedup with ONNX or OpenVINO"
(docs.ultralytics.com/modes/export; `yolo benchmark` times each export format once, with no
interval). It is a ceiling on other hardware with trained weights, not a figure for this machine:
the column says what was promised, the ratio what tune measured here.

    python bench/bench_tune.py [--sizes 320,640] [--budget 420,600] [--knobs ...] [--compile]
                               [--threads 0] [--project DIR] [--read DIR ...]

`--read DIR` prints the table of finished tune folders (<project>/tune/<id>) without running.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yoloprof.defs import files  # noqa: E402
from yoloprof.metrics.contention import contended  # noqa: E402
from yoloprof.profiles.rows import OTHER_CPU, read_rows  # noqa: E402

MODEL, CFG = "ultralytics", "yolov8n.yaml"
KNOBS = "runtime,memory_format,precision,threads"
CLAIM_URL = "docs.ultralytics.com/modes/export"
# Ultralytics' published figure per knob=level (none for the others: it claims nothing for them)
CLAIMS = {"runtime=onnxruntime": "up to 3x", "runtime=openvino": "up to 3x"}


def run_tune(size: int, budget: float, knobs: str, threads: int, project: Path) -> tuple[Path, float, int]:
    """One `yoloprof tune` run; (its folder, wall seconds, exit code). Its output goes to a log."""
    before = set((project / files.TUNE_DIR).glob("*")) if (project / files.TUNE_DIR).is_dir() else set()
    cmd = [sys.executable, "-m", "yoloprof", "tune", "--model", MODEL, "--mode", "infer", "--device", "cpu",
           "--batch", "1", "--imgsz", str(size), "--knobs", knobs, "--budget", f"{budget:g}",
           "--threads", str(threads), "--project", str(project), f"model.cfg={CFG}"]
    log = project / f"tune_{size}.log"
    print(f"[{size}] {' '.join(cmd[1:])}  (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    made = sorted(set((project / files.TUNE_DIR).glob("*")) - before)
    if not made:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"bench_tune: {size}: tune made no folder (exit {code}): " + " | ".join(tail))
    return made[-1], wall, code


def contention(folder: Path) -> dict[str, tuple[int, int]]:
    """sweep -> (contended jobs, jobs) of a tune folder, from the rows' other_cpu_cores."""
    out = {}
    for sweep in sorted((folder / "sweeps").glob("*")):
        if sweep.is_dir():
            rows = read_rows(sweep)
            hit = sum(contended(v) for v in rows[OTHER_CPU]) if OTHER_CPU in rows else 0
            out[sweep.name] = (int(hit), len(rows))
    return out


def _fmt(value: Any, spec: str) -> str:
    return "" if value is None or pd.isna(value) else format(value, spec)


def _cell(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def print_table(size: int, folder: Path, wall: float | None) -> None:
    df = pd.read_parquet(folder / files.TUNE_ROWS)
    per_sweep = contention(folder)
    hit, total = sum(h for h, _ in per_sweep.values()), sum(t for _, t in per_sweep.values())
    took = f", {wall:.0f} s wall" if wall is not None else ""
    print(f"\nYOLOv8n {size}x{size}, infer, CPU, batch 1 ({folder.name}{took}); contended jobs {hit} of "
          f"{total}, left out of verdicts (" + ", ".join(f"{k} {h}/{t}" for k, (h, t) in per_sweep.items()) + ")")
    print(f"{'knob=level':<38}{'ratio [CI]':<24}{'verdict':<25}{'n/base':>7}  {'outputs':<26}"
          f"{'setup_s':>8}{'payback':>9}  Ultralytics claims")
    for r in df.to_dict("records"):
        ratio = "-" if pd.isna(r["ratio"]) else f"{r['ratio']:.3f}x"
        if not pd.isna(r["ci_low"]):
            ratio += f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        verdict = _cell(r["verdict_code"])
        n = "" if pd.isna(r["n"]) else f"{r['n']:.0f}/{r['n_baseline']:.0f}"
        print(f"{_cell(r['config']):<38}{ratio:<24}{verdict[:24]:<25}{n:>7}  {_cell(r['outputs'])[:25]:<26}"
              f"{_fmt(r['setup_s'], '.2f'):>8}{_fmt(r['payback_calls'], '.1f'):>9}  "
              f"{CLAIMS.get(_cell(r['config']), '')}")
        if verdict != "improved" and _cell(r["verdict"]) != verdict:
            print(f"{'':<4}{_cell(r['verdict'])[:130]}")
    best = folder / files.TUNE_BEST
    if best.is_file():
        print("best: " + next((line.lstrip("# ") for line in best.read_text().splitlines()
                               if line.startswith("# yoloprof tune")), "?"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="320,640", help="image sizes, comma-separated")
    parser.add_argument("--budget", default="420,600", help="tune budget (s), one or one per size")
    parser.add_argument("--knobs", default=KNOBS)
    parser.add_argument("--compile", action="store_true", help="add the compile knob (minutes per job)")
    parser.add_argument("--threads", type=int, default=0, help="the baseline's threads (0 = auto)")
    parser.add_argument("--project", default=None, help="where tune writes (default: a temporary folder)")
    parser.add_argument("--read", nargs="*", default=None, help="finished tune folders: print only")
    args = parser.parse_args()
    if args.read:
        for d in args.read:
            folder = Path(d)
            size = pd.read_json(folder / files.TUNE_MANIFEST, typ="series")["settings"].get("imgsz")
            print_table(int(size or 0), folder, None)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    budgets = [float(b) for b in args.budget.split(",") if b]
    if len(budgets) not in (1, len(sizes)):
        parser.error(f"--budget {args.budget}: give one budget or one per size ({len(sizes)})")
    budgets = budgets * len(sizes) if len(budgets) == 1 else budgets
    knobs = args.knobs + (",compile" if args.compile and "compile" not in args.knobs.split(",") else "")
    project = Path(args.project or tempfile.mkdtemp(prefix="bench_tune_"))
    project.mkdir(parents=True, exist_ok=True)
    print(f"bench_tune: {os.cpu_count()} CPUs, knobs {knobs}, baseline threads {args.threads} (0 = auto); "
          f"Ultralytics' claim from {CLAIM_URL}")
    results = []
    for size, budget in zip(sizes, budgets):
        folder, wall, code = run_tune(size, budget, knobs, args.threads, project)
        print(f"[{size}] exit {code}, {wall:.0f} s wall (budget {budget:g} s)", flush=True)
        results.append((size, folder, wall))
    for size, folder, wall in results:
        if (folder / files.TUNE_ROWS).is_file():
            print_table(size, folder, wall)
        else:
            print(f"\n{size}: no {files.TUNE_ROWS} in {folder} (see the log)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
