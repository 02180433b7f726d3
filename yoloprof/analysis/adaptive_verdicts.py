"""The final verdicts of an adaptive (`trial=auto`) sweep, by the rule that stopped it.

A `trial=auto` sweep stopped each comparison at a look of its group-sequential plan
(metrics/sequential.py; the manifest's `adaptive` record holds the plan). Its final analysis must
use the same rule: the fixed-design test at alpha on data whose size was chosen by looking at
them would not hold its error rate. Here each compared (configuration, metric) is judged at the
last look both sides reached, with the repeated confidence interval of that look (valid at any
look, however the sweep stopped, for every metric - not only the one the sweep stopped on), the
family being the comparisons of that metric. Nothing is done for a sweep that was not adaptive.
An inconclusive one says what it could have seen: the smallest change detectable at that look's
level (80% power, the pooled SD of the two sides' process values; metrics/decide.py) and the
`adaptive.max_trials` that would detect a change of the noise band (sequential.max_trials_for).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from yoloprof.metrics import decide as power, sequential
from yoloprof.metrics.stats import verdict_words
from yoloprof.profiles.jobstate import read_manifest_field


def process_logs(metrics: pd.DataFrame) -> dict[tuple[str, str], list[float]]:
    """(group_hash, metric) -> log of each job's mean value (one process, one replicate), in job order."""
    m = metrics[metrics["value"] > 0]
    per_job = m.groupby(["group_hash", "metric", "job_id"], sort=False).agg(
        value=("value", "mean"), order=("job_order", "min")).reset_index().sort_values("order", kind="stable")
    return {key: [math.log(v) for v in g["value"]] for key, g in per_job.groupby(["group_hash", "metric"], sort=False)}


def _look(plan: list[int], n: int) -> int:
    """The last look of `plan` with at most n processes per side (0: not even the first)."""
    return sum(1 for size in plan if size <= n)


def _oriented(d: sequential.Decision, better: Any) -> tuple[float, float, float]:
    """(ratio, low, high) oriented as the comparison table shows them: > 1 is better."""
    if better == "lower":
        return 1 / d.ratio, 1 / d.high, 1 / d.low
    return d.ratio, d.low, d.high


def apply_sequential(comparisons: pd.DataFrame, metrics: pd.DataFrame, sweep_dir: Path, *,
                     alpha: float, noise: float) -> pd.DataFrame:
    """The comparison table with the sequential rule's verdicts for an adaptive sweep."""
    record = read_manifest_field(sweep_dir, "adaptive")
    if not isinstance(record, dict) or not record.get("plan") or comparisons.empty:
        return comparisons
    plan = [int(n) for n in record["plan"]]
    logs = process_logs(metrics)
    df = comparisons.copy()
    tested = [i for i in df.index if (df.at[i, "group_hash"], df.at[i, "metric"]) in logs
              and (df.at[i, "baseline_hash"], df.at[i, "metric"]) in logs]
    for metric, rows in df.loc[tested].groupby("metric", sort=False):
        _judge(df, list(rows.index), logs, plan, alpha=alpha, noise=noise)
    return df


def _judge(df: pd.DataFrame, index: list[Any], logs: dict[tuple[str, str], list[float]], plan: list[int], *,
           alpha: float, noise: float) -> None:
    """One metric's comparisons, each at the last look both its sides reached, Holm step-down."""
    sides, kept = [], []
    for i in index:
        b = logs[(df.at[i, "baseline_hash"], df.at[i, "metric"])]
        a = logs[(df.at[i, "group_hash"], df.at[i, "metric"])]
        look = _look(plan, min(len(a), len(b)))
        if look and np.isfinite(a).all() and np.isfinite(b).all():
            sides.append((b, a, look))
            kept.append(i)
    if not kept:
        return
    better = df.at[kept[0], "better"]
    found = sequential.decide_family(sides, plan, better=better if better in ("lower", "higher") else None,
                                     alpha=alpha, noise=noise)
    for i, d in zip(kept, found):
        code = "inconclusive" if d.code == sequential.UNDECIDED else d.code
        ratio, low, high = _oriented(d, better)
        note = (f"sequential rule (trial=auto): look {d.look} of {len(plan)} at {d.n_cand} processes per side, "
                f"nominal level {d.level:.2g} (alpha {alpha}, Holm step-down over {len(kept)} comparisons)")
        df.loc[i, ["ratio", "ci_low", "ci_high", "verdict_code", "verdict", "p_adj"]] = [
            ratio, low, high, code, verdict_words(code, better), np.nan]
        if code == "inconclusive":
            note += "; " + _detectable(df, i, sides[kept.index(i)], d, plan, alpha=alpha, noise=noise, family=len(kept))
        df.at[i, "warnings"] = "; ".join(w for w in (str(df.at[i, "warnings"] or ""), note) if w)


def _detectable(df: pd.DataFrame, i: Any, side: tuple[list[float], list[float], int], d: sequential.Decision,
                plan: list[int], *, alpha: float, noise: float, family: int) -> str:
    """Fill the row's mde_pct / processes_needed / trials_needed; the words that say them."""
    n = d.n_cand
    b, a = np.asarray(side[0][:n]), np.asarray(side[1][:n])
    sd = math.sqrt((b.var(ddof=1) + a.var(ddof=1)) / 2)
    level = sequential.look_level(plan, d.look, alpha, family)
    mde = power.mde_pct(sd, n, level)
    need = sequential.max_trials_for(sd, noise, plan[0], alpha=alpha, family=family) if sd > 0 else None
    per = df.at[i, "n"] / max(df.at[i, "k"], 1) if "n" in df and "k" in df and pd.notna(df.at[i, "k"]) else 1.0
    df.loc[i, ["mde_pct", "processes_needed", "trials_needed"]] = [
        np.nan if mde is None else mde, np.nan if need is None else need,
        np.nan if need is None else math.ceil(need * per)]
    words = power.detect_words(mde, n, "process", level, need, noise)
    return words + (f" (adaptive.max_trials={need})" if need is not None and need > n else "")
