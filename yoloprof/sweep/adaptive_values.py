"""What a `trial=auto` look reads from the rows: each configuration's process values, and its
contended jobs, which are kept but not used and replaced (docs/sweeps.md "Contended jobs").

A job that ran while other processes used more than CONTENDED_CORES (metrics/contention.py) is
not a replicate of its configuration on this machine: it is left out of the values, and the next
round (or a replacement round at the same look) runs one more trial of its configuration in its
place, within the budget and at most `adaptive.replace_contended` times per configuration (unset:
as many times as its planned trials, max_trials: a machine busy throughout at most doubles the
sweep before it stops "contended").
"""

from __future__ import annotations

import math
from typing import Any

from yoloprof.metrics.contention import contended, job_words

CONTENDED = "contended"  # a comparison's code while a side lacks uncontended jobs at this look


def _usable(row: dict[str, Any]) -> bool:
    return row.get("status") == "ok" and row.get("group_hash") is not None


def process_values(rows: Any, metric: str) -> dict[str, list[float]]:
    """Per configuration (group_hash), the log of each ok, uncontended job's process mean of
    `metric`, in trial order."""
    from yoloprof.profiles.rows import OTHER_CPU

    out: dict[str, list[tuple[int, float]]] = {}
    samples = f"{metric}_samples"
    for row in rows.to_dict("records"):
        if not _usable(row) or contended(row.get(OTHER_CPU)):
            continue
        raw = row.get(samples)
        values = [float(v) for v in raw] if raw is not None and not isinstance(raw, float) else []
        value = sum(values) / len(values) if values else row.get(metric)
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            continue
        out.setdefault(str(row["group_hash"]), []).append((int(row.get("trial") or 0), math.log(value)))
    return {g: [v for _, v in sorted(vals)] for g, vals in out.items()}


def contended_jobs(rows: Any) -> dict[str, list[tuple[int, float, int | None]]]:
    """Per configuration (group_hash), its ok jobs that ran contended: (job_num, other cores, cores)."""
    from yoloprof.profiles.rows import CPU_CORES, OTHER_CPU

    out: dict[str, list[tuple[int, float, int | None]]] = {}
    for row in rows.to_dict("records"):
        if _usable(row) and contended(row.get(OTHER_CPU)):
            cores = row.get(CPU_CORES)
            out.setdefault(str(row["group_hash"]), []).append(
                (int(row.get("job_num") or 0), float(row[OTHER_CPU]),
                 int(cores) if isinstance(cores, (int, float)) and math.isfinite(cores) else None))
    return out


def shortfall(sides: tuple[str, ...], values: dict[str, list[float]],
              hit: dict[str, list[tuple[int, float, int | None]]], n: int) -> dict[str, Any] | None:
    """Where a comparison cannot be looked at with n values per side because of contended jobs:
    {"contended": their job numbers, "why": words naming them}; None where that is not what it lacks."""
    short = [s for s in sides if len(values.get(s, [])) < n]
    if not short or not all(hit.get(s) and len(values.get(s, [])) + len(hit[s]) >= n for s in short):
        return None
    jobs = sorted((j for s in short for j in hit[s]), key=lambda j: j[0])
    return {"contended": [j[0] for j in jobs], "why": f"{job_words(jobs)}: left out, run again"}


def limit(max_trials: int, replace: int | None = None) -> int:
    """The most contended jobs of one configuration that are replaced."""
    return max_trials if replace is None else max(0, int(replace))
