"""What to do when verdicts are undecided for lack of processes (the hint line under the
comparisons table, docs/analysis.md "One job per configuration").

A job is one process, the unit of replication of every verdict (analysis/tables.py): with one job
per configuration, a comparison sees one process per side and, without a stored noise floor, its
verdict is `inconclusive: one process per side`. More trials in the same process (`repeat=`) do
not help; more jobs per configuration do. The hint says so in the sweep's own spelling.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from yoloprof.metrics.nested import MIN_PROCESSES
from yoloprof.metrics.stats import FULL_POWER_TRIALS

UNDECIDED = ("inconclusive", "within_noise", "insufficient")  # verdict codes more processes can decide
# jobs per configuration suggested when no comparison says how many it needs: the processes per
# side below which a tested result is labelled low power
DEFAULT_JOBS = FULL_POWER_TRIALS
MOST_JOBS = 20  # a larger estimate is shown as this (trial=auto finds the real number)


def _count(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(math.ceil(number)) if math.isfinite(number) else None


def short_of_processes(comparisons: pd.DataFrame) -> pd.DataFrame:
    """The undecided comparisons with fewer than MIN_PROCESSES processes (jobs) on a side."""
    needed = {"verdict_code", "k", "k_baseline"}
    if comparisons.empty or not needed <= set(comparisons.columns):
        return comparisons.iloc[0:0]
    k = comparisons[["k", "k_baseline"]].apply(pd.to_numeric, errors="coerce").min(axis=1)
    return comparisons[comparisons["verdict_code"].isin(UNDECIDED) & (k < MIN_PROCESSES)]


def jobs_to_suggest(short: pd.DataFrame) -> int:
    """Jobs per configuration: the most any undecided comparison estimates (`processes_needed`),
    at least DEFAULT_JOBS, at most MOST_JOBS."""
    estimates = [n for n in map(_count, short.get("processes_needed", pd.Series(dtype=float))) if n]
    return min(max([DEFAULT_JOBS, *estimates]), MOST_JOBS)


def rerun_hint(comparisons: pd.DataFrame) -> str | None:
    """One line (under 100 columns with its `hint: `) counting the undecided comparisons and naming
    the sweep settings that would decide them: `trial=auto` (adaptive rounds, docs/sweeps.md) or
    `trial=range(0,N)` (N jobs per configuration; `repeat=` would add trials in the same process,
    which do not count). None when none is undecided for lack of processes."""
    short = short_of_processes(comparisons)
    if short.empty:
        return None
    n = jobs_to_suggest(short)
    return (f"{len(short)} of {len(comparisons)} verdicts need more jobs per configuration: rerun with "
            f"trial=auto or trial=range(0,{n})")
