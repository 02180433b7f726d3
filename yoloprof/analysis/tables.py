"""Stage 2, read: tidy long tables from every ok job (metrics, phases, categories, kernels, ops).

Metrics come from the job's profile.json when it has them (every metric, with its `better`) and
otherwise from the row's headline columns, so a sweep whose profiles were deleted still compares.
One value per trial: a job with `repeat=N` contributes its N samples, a `trial` axis contributes
one job per trial. Later stages group them by group_hash and job: a job is one process (it runs
in its own worker), the unit of replication of every verdict (`process_samples`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from yoloprof.analysis.collect import Collected
from yoloprof.defs import metrics as registry
from yoloprof.profiles.rows import METRICS as ROWS_METRICS

ROW_METRICS = ROWS_METRICS  # the headline metrics every row carries (profiles/rows.py)
# Unit and direction of a metric when no profile says it (the profile's own entry wins): the
# metric registry (yoloprof.defs.metrics), so rows and profiles agree (MiB for memory).
TOP_N = 20
METRIC_COLUMNS = ["job_id", "job_order", "group_hash", "metric", "trial", "value", "unit", "better", "source"]


def _row_metrics(ok: pd.DataFrame) -> pd.DataFrame:
    """Headline metrics from the rows, vectorised: `<m>_samples` exploded, else the value."""
    frames = []
    for m in ROW_METRICS:
        if m not in ok:
            continue
        samples = ok[f"{m}_samples"] if f"{m}_samples" in ok else pd.Series([None] * len(ok), index=ok.index)
        vals = [list(s) if s is not None and len(s) else ([v] if pd.notna(v) else [])
                for s, v in zip(samples.tolist(), ok[m].tolist())]
        df = pd.DataFrame({"job_id": ok["job_id"].values, "job_order": np.arange(len(ok)),
                           "group_hash": ok["group_hash"].values, "value": vals})
        df = df.explode("value").dropna(subset=["value"])
        df["trial"] = df.groupby("job_id").cumcount()
        df["metric"], df["unit"], df["better"], df["source"] = m, registry.unit(m), registry.better(m), "row"
        frames.append(df)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)
    return out.astype({"value": float})[METRIC_COLUMNS]


def _profile_metrics(ok: pd.DataFrame, profiles: dict[str, dict]) -> pd.DataFrame:
    recs: list[tuple] = []
    groups = dict(zip(ok["job_id"], ok["group_hash"]))
    order = {j: i for i, j in enumerate(ok["job_id"])}
    for job_id, prof in profiles.items():
        for name, entry in (prof.get("metrics") or {}).items():
            if not isinstance(entry, dict):
                continue
            samples = entry.get("samples") or ([entry["value"]] if entry.get("value") is not None else [])
            better = entry.get("better", registry.better(name))
            for i, v in enumerate(samples):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    recs.append((job_id, order[job_id], groups[job_id], name, i, float(v), entry.get("unit"), better, "profile"))
    return pd.DataFrame.from_records(recs, columns=METRIC_COLUMNS)


def metrics_table(c: Collected) -> pd.DataFrame:
    """One row per (job, metric, trial). Profile values take precedence over row values."""
    rows = _row_metrics(c.ok)
    prof = _profile_metrics(c.ok, c.profiles)
    if prof.empty:
        return rows
    have = pd.MultiIndex.from_frame(prof[["job_id", "metric"]].drop_duplicates())
    keep = ~pd.MultiIndex.from_frame(rows[["job_id", "metric"]]).isin(have)
    return pd.concat([prof, rows[keep]], ignore_index=True)


def _section(c: Collected, key: str, sort_by: str | None = None, top: int | None = None) -> pd.DataFrame:
    """A profile list section (phases, categories, kernels, ops) as one long table over all jobs;
    with `sort_by`, only each job's `top` largest entries (the parquet stays small on big sweeps)."""
    groups = dict(zip(c.ok["job_id"], c.ok["group_hash"]))
    recs: list[dict[str, Any]] = []
    for job_id, prof in c.profiles.items():
        recs += [{"job_id": job_id, "group_hash": groups[job_id], **x}
                 for x in (prof.get(key) or []) if isinstance(x, dict)]
    df = pd.DataFrame.from_records(recs) if recs else pd.DataFrame(columns=["job_id", "group_hash"])
    if sort_by and sort_by in df and top:
        df = df.sort_values(["job_id", sort_by], ascending=[True, False], kind="stable")
        df = df.groupby("job_id", sort=False).head(top).reset_index(drop=True)
    return df


def read_tables(c: Collected) -> dict[str, pd.DataFrame]:
    """All tidy tables of the read stage, keyed by the name of their parquet file."""
    tables = {
        "metrics": metrics_table(c),
        "phases": _section(c, "phases"),
        "categories": _section(c, "categories"),
        "kernels": _section(c, "kernels", "ms_per_step", TOP_N),
        "ops": _section(c, "ops", "self_ms_per_step", TOP_N),
    }
    for name in ("phases", "categories", "kernels", "ops"):
        df = tables[name]
        for col in df.columns:
            if df[col].dtype == object and df[col].map(lambda v: isinstance(v, (dict, list))).any():
                df[col] = df[col].map(lambda v: v if not isinstance(v, (dict, list)) else str(v))
    return tables


def pooled_samples(metrics: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """(group_hash, metric) -> every trial's value, in job then trial order (so a slow first
    trial stays first). For figures that describe a configuration (geometric means, plots);
    verdicts use `process_samples`, never trials pooled across processes."""
    m = metrics.sort_values(["group_hash", "metric", "job_order", "trial"], kind="stable")
    return {k: g.to_numpy(float) for k, g in m.groupby(["group_hash", "metric"], sort=False)["value"]}


def process_samples(metrics: pd.DataFrame) -> dict[tuple[str, str], list[np.ndarray]]:
    """(group_hash, metric) -> one array of trial values per job (= per process), jobs in job
    order and trials in trial order: the input of `yoloprof.metrics.nested.compare_nested`."""
    m = metrics.sort_values(["group_hash", "metric", "job_order", "trial"], kind="stable")
    out: dict[tuple[str, str], list[np.ndarray]] = {}
    if m.empty:
        return out
    # split at the boundaries of the sorted keys (a pandas groupby over every job is 100x slower)
    g, name = m["group_hash"].to_numpy(object), m["metric"].to_numpy(object)
    job, vals = m["job_order"].to_numpy(), m["value"].to_numpy(float)
    new_key = np.r_[True, (g[1:] != g[:-1]) | (name[1:] != name[:-1])]
    starts = np.flatnonzero(new_key | np.r_[True, job[1:] != job[:-1]])
    for start, chunk in zip(starts, np.split(vals, starts[1:])):
        out.setdefault((g[start], name[start]), []).append(chunk)
    return out


def process_means(metrics: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """(group_hash, metric) -> each job's (process's) geometric mean over its trials: the values
    Welch's test takes when both sides have several processes (the nested test on process means),
    for the dominance and best tests, which need a decision from processes, never pooled trials."""
    return {k: np.array([np.exp(np.log(x[x > 0]).mean()) for x in groups if (x > 0).any()])
            for k, groups in process_samples(metrics).items()}


def metric_meta(metrics: pd.DataFrame) -> dict[str, tuple[str | None, str | None]]:
    """metric -> (better, unit), the first non-null seen, falling back to the headline table."""
    out = {}
    for name, g in metrics.groupby("metric", sort=False):
        better = g["better"].dropna()
        unit = g["unit"].dropna()
        out[name] = (better.iloc[0] if len(better) else registry.better(name), unit.iloc[0] if len(unit) else registry.unit(name))
    return out
