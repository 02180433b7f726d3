"""Contended jobs in an analysis: left out of every verdict, and said (docs/analysis.md
"Contended jobs").

A job whose row says other processes used more than CONTENDED_CORES while it ran
(metrics/contention.py) measured a shared machine, not the configuration: its times are slower by
an amount that depends on what else ran, and falling on one side more than the other reads as a
change. The comparisons, the drift check, the sequential verdicts of a `trial=auto` sweep, best and
Pareto use the other jobs only; a comparison whose side has no other job is withheld
(`inconclusive`, saying why), one that lost some says how many. A warning names the jobs and the
share ("jobs 1, 2 ran while other processes used 0.9-1.6 of 2 cores"). The tables written keep
every job; the rows' `other_cpu_cores` marks them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from yoloprof.metrics.contention import contended, job_words, rule_words
from yoloprof.profiles.rows import CPU_CORES, OTHER_CPU


def contended_jobs(ok: pd.DataFrame) -> pd.DataFrame:
    """The ok rows that ran contended: job_id, job_num, group_hash, other cores, machine cores."""
    cols = ["job_id", "job_num", "group_hash", OTHER_CPU, CPU_CORES]
    if ok.empty or OTHER_CPU not in ok or "job_id" not in ok:
        return pd.DataFrame(columns=cols)
    hit = ok[[contended(v) for v in ok[OTHER_CPU]]]
    return hit.reindex(columns=cols).reset_index(drop=True)


def judged(metrics: pd.DataFrame, hit: pd.DataFrame) -> pd.DataFrame:
    """The long metrics table without the contended jobs: what verdicts rest on."""
    if hit.empty or "job_id" not in metrics:
        return metrics
    return metrics[~metrics["job_id"].isin(set(hit["job_id"]))].reset_index(drop=True)


def warnings_for(hit: pd.DataFrame) -> list[str]:
    """One line naming the contended jobs and the other processes' share."""
    if hit.empty:
        return []
    jobs = [(_num(r["job_num"], r["job_id"]), r[OTHER_CPU], _cores(r[CPU_CORES])) for _, r in hit.iterrows()]
    words = job_words(jobs)
    return [f"{words}: left out of the verdicts ({rule_words()})"] if words else []


def apply_contention(comparisons: pd.DataFrame, kept: pd.DataFrame, hit: pd.DataFrame) -> pd.DataFrame:
    """Withhold the comparisons whose side lost every job to contention; note the ones that lost some."""
    if hit.empty or comparisons.empty:
        return comparisons
    out = comparisons.copy()
    dropped = hit.groupby("group_hash")["job_id"].nunique().to_dict()
    have = kept.groupby("group_hash")["job_id"].nunique().to_dict() if not kept.empty else {}
    for i in out.index:
        sides = [(out.at[i, "group_hash"], out.at[i, "config"]), (out.at[i, "baseline_hash"], out.at[i, "baseline_config"])]
        lost = [(g, label) for g, label in sides if dropped.get(g)]
        if not lost:
            continue
        empty = [label for g, label in lost if not have.get(g)]
        note = "; ".join(f"{dropped[g]} contended job(s) of {label} left out" for g, label in lost)
        if empty:
            out.loc[i, ["verdict_code", "verdict"]] = [
                "inconclusive", f"inconclusive: withheld, every job of {' and '.join(map(str, empty))} ran contended"]
        previous = str(out.at[i, "warnings"]) if "warnings" in out and pd.notna(out.at[i, "warnings"]) else ""
        out.at[i, "warnings"] = "; ".join(w for w in (previous, note) if w)
    return out


def _num(job_num: Any, job_id: Any) -> str:
    try:
        return str(int(job_num))
    except (TypeError, ValueError):
        return str(job_id)


def _cores(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
