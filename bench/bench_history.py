"""`yoloprof history`: the change-point search on simulated series, and speed at 100,000 rows.

    PYTHONPATH=. python bench/bench_history.py [--series 1000] [--rows 100000]

1. Detection (the issue's case): 50 commits, one capture per commit, 3% process-to-process noise
   (log-normal), one 6% step at a known commit drawn in 10..40. Reported: how often the step is
   found at exactly the right commit, within one commit, inside the reported location set, and
   how often a flat series (no step) is flagged. Beside it, the ceiling of any method for the
   exact commit (the maximum-likelihood split with the true means and noise known: the best
   possible exact-hit rate) and the same case with 3 captures per commit; and Otava's shortcut
   (E-Divisive split tested by a t-test of the chosen split) at p < 0.05 and p < 0.001.
2. Speed: a store of `--rows` rows (many series on 4 machines, written as compacted files as
   the store's writers leave them), then `compute_history` timed in this process and the whole
   `yoloprof history PROJECT` command (a new process: start-up and imports included, and that
   start-up alone), and the per-append cost of the store (`store.append`, with its compaction,
   fsync included) on a fresh project.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from scipy import stats as sps

from yoloprof.metrics.changepoints import find_splits
from yoloprof.profiles import store


def series(rng, n_commits=50, per_commit=1, noise=0.03, step=0.06, tau=None):
    g = np.repeat(np.arange(n_commits), per_commit)
    y = rng.normal(0, noise, g.size)
    if tau is not None:
        y[g >= tau] += np.log1p(step)
    return y, g


def oracle_cut(y, g, tau_candidates, step):
    """Maximum likelihood split with the true means known (the best exact-hit rule there is)."""
    d = np.log1p(step)
    best, arg = -np.inf, None
    for t in tau_candidates:
        ll = -((y[g < t]) ** 2).sum() - ((y[g >= t] - d) ** 2).sum()
        if ll > best:
            best, arg = ll, t
    return arg


def otava_like(y, g, p_max):
    """Otava's shortcut: the E-Divisive (means) split, kept when Welch's t-test of its two sides
    gives p < p_max (the test ignores that the split was chosen as the best one)."""
    cuts = [c for c in range(2, y.size - 1) if g[c] != g[c - 1]]
    q = [(c * (y.size - c) / y.size) * (y[:c].mean() - y[c:].mean()) ** 2 for c in cuts]
    c = cuts[int(np.argmax(q))]
    p = sps.ttest_ind(y[:c], y[c:], equal_var=False).pvalue
    return (int(g[c]) if p < p_max else None)


def detection(n_series: int, per_commit: int, seed: int = 1) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    exact = near = covered = flagged = only = oracle = ot05 = ot001 = ot05_fp = ot001_fp = 0
    t0 = time.perf_counter()
    for i in range(n_series):
        tau = int(rng.integers(10, 41))
        y, g = series(rng, per_commit=per_commit, tau=tau)
        found = find_splits(y, g, seed=i)
        cuts = [int(g[s.cut]) for s in found]
        exact += tau in cuts
        only += cuts == [tau]
        near += any(abs(c - tau) <= 1 for c in cuts)
        covered += any(g[s.location[0]] <= tau <= g[s.location[1]] for s in found)
        oracle += oracle_cut(y, g, range(1, 50), 0.06) == tau
        ot05 += otava_like(y, g, 0.05) == tau
        ot001 += otava_like(y, g, 0.001) == tau
        z, gz = series(rng, per_commit=per_commit)
        flagged += bool(find_splits(z, gz, seed=10**6 + i))
        ot05_fp += otava_like(z, gz, 0.05) is not None
        ot001_fp += otava_like(z, gz, 0.001) is not None
    n = float(n_series)
    return {"exact": exact / n, "only_that_one": only / n, "within_1": near / n, "in_location_set": covered / n,
            "flat_flagged": flagged / n, "oracle_exact": oracle / n, "otava_p05_exact": ot05 / n,
            "otava_p05_flat_flagged": ot05_fp / n, "otava_p001_exact": ot001 / n,
            "otava_p001_flat_flagged": ot001_fp / n, "ms_per_series": 1000 * (time.perf_counter() - t0) / (2 * n)}


def fake_store(project: Path, rows: int, per_series: int = 50, machines: int = 4, seed: int = 2) -> int:
    """`rows` store rows: series of `per_series` commits, a few with a step, in compacted files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    n_series = rows // per_series
    commits = [uuid.uuid4().hex + "00000000" for _ in range(per_series)]
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for m in range(machines):
        fp = {"cpu_model": f"cpu{m}", "device_name": f"cpu{m}", "torch_version": "2.5.1", "cuda_version": "none",
              "threads": 4}
        ids = range(m, n_series, machines)
        k = len(ids) * per_series
        y = np.exp(rng.normal(np.log(20.0), 0.03, k))
        y[(np.arange(k) % per_series) >= 30] *= np.where(rng.random(len(ids)) < 0.1, 1.06, 1.0).repeat(per_series)[
            (np.arange(k) % per_series) >= 30]
        cols = {"row_id": [uuid.uuid4().hex for _ in range(k)], "status": ["ok"] * k,
                "config_key": [f"cfg{s}" for s in ids for _ in range(per_series)],
                "git_commit": commits * len(ids), "git_dirty": [False] * k,
                "started_at": [t0 + dt.timedelta(minutes=j) for _ in ids for j in range(per_series)],
                "mode": ["infer"] * k, "model": ["yolo"] * k, "batch": [1] * k, "step_ms": y,
                **{f: [v] * k for f, v in fp.items()}}
        table = pa.table({f.name: pa.array(cols[f.name], f.type) if f.name in cols else pa.nulls(k, f.type)
                          for f in store.STORE_SCHEMA})
        folder = store.store_dir(project) / f"{store.PARTITION}={store.machine_key(fp)}"
        folder.mkdir(parents=True, exist_ok=True)
        for j, part in enumerate(np.array_split(np.arange(k), 8)):
            pq.write_table(table.take(pa.array(part)), folder / f"{store.COMPACT_PREFIX}{j}.parquet")
    return n_series


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def speed(rows: int) -> dict[str, float]:
    """Wall seconds and CPU seconds: on a shared machine the wall time is the CPU time stretched
    by the other jobs' load, so both are reported (the load average beside them)."""
    from yoloprof.analysis.history import HistoryQuery, compute_history

    with tempfile.TemporaryDirectory() as tmp:
        n_series = fake_store(Path(tmp), rows)
        t0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        res = compute_history(HistoryQuery(Path(tmp), repo=Path(tmp)))
        took, took_cpu = time.perf_counter() - t0, _cpu(resource.RUSAGE_SELF) - c0
        found = sum(len(s["change_points"]) for m in res["machines"] for s in m["series"])
        t0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_CHILDREN)
        cli = subprocess.run([sys.executable, "-m", "yoloprof", "history", tmp, "--repo", tmp],
                             capture_output=True, text=True)
        cli_s, cli_cpu = time.perf_counter() - t0, _cpu(resource.RUSAGE_CHILDREN) - c0
        assert cli.returncode == 0, cli.stderr
        t0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "import yoloprof.cli, yoloprof.analysis.history, "
                        "yoloprof.render.history_report, scipy.special"], check=True)
        imports_s, imports_cpu = time.perf_counter() - t0, _cpu(resource.RUSAGE_CHILDREN) - c0
    with tempfile.TemporaryDirectory() as tmp:
        row = {"status": "ok", "config_key": "x", "step_ms": 1.0, "cpu_model": "c", "threads": 1}
        t1 = time.perf_counter()
        for _ in range(200):
            store.append(tmp, dict(row))
        per_append = (time.perf_counter() - t1) / 200
        files = len(list(store.store_dir(tmp).rglob("*.parquet")))
        stored = store.rows_count(tmp)
    return {"rows": rows, "series": n_series, "load_avg_1m": os.getloadavg()[0],
            "history_wall_s": took, "history_cpu_s": took_cpu, "cli_history_wall_s": cli_s,
            "cli_history_cpu_s": cli_cpu, "cli_start_and_imports_wall_s": imports_s,
            "cli_start_and_imports_cpu_s": imports_cpu, "change_points": found,
            "append_ms": 1000 * per_append, "files_after_200_appends": files, "rows_after_200_appends": stored}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--speed-only", action="store_true")
    a = ap.parse_args()
    for per in () if a.speed_only else (1, 3):
        r = detection(a.series, per)
        print(f"detection, {a.series} series, 50 commits x {per} capture(s), 3% noise, 6% step:")
        for k, v in r.items():
            print(f"  {k:26s} {v:.3f}")
    s = speed(a.rows)
    print("speed:")
    for k, v in s.items():
        print(f"  {k:26s} {v:.3f}" if isinstance(v, float) else f"  {k:26s} {v}")


if __name__ == "__main__":
    main()
