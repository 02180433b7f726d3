"""The value a job returns to a search sweeper (Hydra's Optuna sweeper), from its row.

Hydra's Optuna sweeper tells the sampler the float each job returns and marks a trial failed when
the return value is not a float; failed trials are never proposed as the best. A job that failed,
has no value for the metric, or went over the memory cap (`search.max_peak_mem_mib`, MiB against
`peak_mem_mb`) therefore returns a one-line reason instead of a number: "maximise img_per_s with
peak memory under N MiB" is a search whose infeasible points can never win. The sweep file sets
`hydra.sweeper.max_failure_rate: 1.0`, so infeasible trials do not stop the search.
"""

from __future__ import annotations

import math
from typing import Any


def objective(row: dict[str, Any], search: dict[str, Any]) -> float | str:
    """`row[metric]` as a float, or the reason the point is infeasible."""
    metric = str(search.get("metric"))  # set whenever a search sweeper runs (sweep/job.py)
    if row.get("status") != "ok":
        return f"infeasible: the job {row.get('status')} ({row.get('error') or 'no error text'})"
    value = row.get(metric)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return f"infeasible: the job has no {metric} value"
    cap, peak = search.get("max_peak_mem_mib"), row.get("peak_mem_mb")
    if cap is not None and (peak is None or peak > cap):
        return f"infeasible: peak memory {peak} MiB is above the cap of {cap} MiB"
    return float(value)
