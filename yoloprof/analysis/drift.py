"""Drift: does a metric of one configuration trend with job order or time, and could that trend,
rather than the configurations, explain a verdict?

Jobs of a long sweep can inherit state from earlier jobs (heap, caches, allocator pools, a warming
machine), so the same work measured later reads differently. When configurations run in blocks
(all of A, then all of B) such a trend turns into a difference between A and B.

Method (per comparison and metric; one value per job: the mean of the log of its trials):
- Fit log(value) = a_config + b * x by least squares, with one intercept per configuration and
  one common slope b, over the jobs of the baseline and of the compared configuration (the slope
  comes only from variation inside each configuration, so a real difference between them is not
  mistaken for a trend). x is the job's position in the sweep (ok jobs in job order) and, as a
  second fit, its start time in hours. The slope's p-value is the two-sided t test with n - 3
  degrees of freedom; a trend is significant when p < alpha / 2 for either fit (Bonferroni over
  the two). Needs at least MIN_JOBS jobs per side.
- The trend's share of the comparison is b * (mean x of the configuration - mean x of the
  baseline): what the trend alone predicts for log(value / baseline value). The drift-adjusted
  effect is the observed difference of mean logs minus that share.
- A decisive verdict (improved, regressed, changed within noise) is **explained by drift** when
  the trend is significant and the adjusted effect lies inside the noise band (|adjusted| <=
  log(1 + noise)) or has the opposite sign: the verdict becomes `drift` (flagged, never a
  regression). A significant trend that moves the comparison by more than half the noise band
  without explaining it adds a warning. Interleaved sweeps (trials outermost) give both sides the
  same mean position, so a trend then adds noise but no bias.
- Per configuration and metric (at least MIN_JOBS jobs), the same fit alone gives the drift table
  (slope in % per 100 jobs and % per hour, p-values Holm-corrected across the table); each
  significant one is a warning.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from yoloprof.metrics.stats import adjust_pvalues

MIN_JOBS = 3            # jobs per side (per configuration for the drift table)
DECISIVE = ("improved", "regressed", "within_noise")
DRIFT_COLUMNS = ["config", "metric", "n_jobs", "pct_per_100_jobs", "p_order", "pct_per_hour", "p_time",
                 "p_adj", "significant", "group_hash"]


def job_values(metrics: pd.DataFrame, ok: pd.DataFrame) -> pd.DataFrame:
    """One row per (job, metric): group, mean log value, job position, start time in hours."""
    m = metrics[metrics["value"] > 0]
    per_job = (m.assign(logv=np.log(m["value"].to_numpy(float)))
               .groupby(["job_id", "metric"], sort=False)
               .agg(group_hash=("group_hash", "first"), order=("job_order", "first"), y=("logv", "mean"))
               .reset_index())
    hours = pd.Series(np.nan, index=ok["job_id"].to_numpy())
    if "started_at" in ok and ok["started_at"].notna().any():
        t = pd.to_datetime(ok["started_at"], utc=True)
        hours = pd.Series(((t - t.min()).dt.total_seconds() / 3600.0).to_numpy(float), index=ok["job_id"].to_numpy())
    per_job["hours"] = per_job["job_id"].map(hours).astype(float)
    return per_job


def _fit(x: np.ndarray, y: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """(common slope, two-sided p) of y ~ intercept per group + slope * x; nan when it cannot be
    fitted (too few jobs, no spread of x inside the groups)."""
    if np.isnan(x).any() or len(x) - len(np.unique(g)) - 1 < 1:
        return math.nan, math.nan
    xc, yc = x.astype(float).copy(), y.astype(float).copy()
    for k in np.unique(g):
        sel = g == k
        xc[sel] -= xc[sel].mean()
        yc[sel] -= yc[sel].mean()
    sxx = float(xc @ xc)
    if sxx <= 0:
        return math.nan, math.nan
    b = float(xc @ yc) / sxx
    df = len(x) - len(np.unique(g)) - 1
    rss = float(((yc - b * xc) ** 2).sum())
    if rss <= 0:
        return b, (0.0 if b != 0 else 1.0)
    se = math.sqrt(rss / df / sxx)
    return b, float(2 * sps.t.sf(abs(b / se), df))


def pair_drift(jobs: pd.DataFrame, base: str, group: str, alpha: float) -> dict[str, Any] | None:
    """The drift check of one comparison (jobs of one metric); None when either side has fewer
    than MIN_JOBS jobs."""
    sel = jobs[jobs["group_hash"].isin([base, group])]
    n = sel["group_hash"].value_counts()
    if n.get(base, 0) < MIN_JOBS or n.get(group, 0) < MIN_JOBS:
        return None
    g, y = sel["group_hash"].to_numpy(), sel["y"].to_numpy(float)
    fits = {}
    for name in ("order", "hours"):
        x = sel[name].to_numpy(float)
        b, p = _fit(x, y, g)
        if not math.isnan(p):
            fits[name] = (b, p, x)
    if not fits:
        return None
    name, (b, p, x) = min(fits.items(), key=lambda kv: kv[1][1])
    is_g = g == group
    share = b * (x[is_g].mean() - x[~is_g].mean())
    raw = y[is_g].mean() - y[~is_g].mean()
    return {"slope": b, "p": p, "by": name, "share": share, "raw": raw, "adjusted": raw - share,
            "significant": p < alpha / 2}


def _oriented(log_diff: float, better: Any) -> float:
    """A log difference (value / baseline) as the table's ratio (> 1 better)."""
    return math.exp(-log_diff) if better == "lower" else math.exp(log_diff)


def apply_drift(cmp: pd.DataFrame, jobs: pd.DataFrame, *, alpha: float, noise: float) -> pd.DataFrame:
    """The comparison table with drift columns (`drift_pct`: the trend's share of the comparison
    in %, `drift_p`, `drift_adj_ratio`) and verdicts that drift explains flagged as `drift`."""
    cmp = cmp.copy()
    for col in ("drift_pct", "drift_p", "drift_adj_ratio"):
        cmp[col] = np.nan
    band = math.log1p(noise)
    by_metric = {m: g for m, g in jobs.groupby("metric", sort=False)}
    for i, r in enumerate(cmp.to_dict("records")):
        if r["metric"] not in by_metric or r["verdict_code"] == "missing":
            continue
        d = pair_drift(by_metric[r["metric"]], r["baseline_hash"], r["group_hash"], alpha)
        if d is None:
            continue
        adj_ratio = _oriented(d["adjusted"], r["better"])
        cmp.iloc[i, cmp.columns.get_loc("drift_pct")] = _pct(d["share"])
        cmp.iloc[i, cmp.columns.get_loc("drift_p")] = d["p"]
        cmp.iloc[i, cmp.columns.get_loc("drift_adj_ratio")] = adj_ratio
        if not d["significant"]:
            continue
        unit = "per job" if d["by"] == "order" else "per hour"
        slope = _pct(d["slope"])
        size = f"{slope:+.3g}% {unit}" if not math.isnan(slope) else f"more than a float holds {unit} (jobs seconds " \
            "apart: an extrapolation)"
        trend = f"{r['metric']} trends by {size} within these configurations (p={d['p']:.2g})"
        explained = abs(d["adjusted"]) <= band or (d["raw"] * d["adjusted"] < 0)
        if explained and r["verdict_code"] in DECISIVE:
            note = (f"drift explains this verdict: {trend}, which predicts {_pct(d['share']):+.1f}% "
                    f"between the sides from job order alone; drift-adjusted ratio {adj_ratio:.3f}; "
                    f"measure interleaved (trials outermost) or in fresh processes")
            cmp.iloc[i, cmp.columns.get_loc("verdict")] = f"drift (not {r['verdict']})"
            cmp.iloc[i, cmp.columns.get_loc("verdict_code")] = "drift"
        elif abs(d["share"]) > band / 2:
            note = f"{trend}; it accounts for {_pct(d['share']):+.1f}% of this comparison " \
                   f"(drift-adjusted ratio {adj_ratio:.3f})"
        else:
            continue
        old = cmp.iloc[i, cmp.columns.get_loc("warnings")]
        cmp.iloc[i, cmp.columns.get_loc("warnings")] = "; ".join(x for x in (old, note) if isinstance(x, str) and x)
    return cmp


# A log change past this has no percentage a float holds (exp overflows near 709).
MAX_LOG_CHANGE = 700.0


def _pct(log_change: float) -> float:
    """A trend's slope on the log scale as a % change; NaN when it is none (no fit) or beyond what
    a float holds: jobs a fraction of a second apart give a per-hour slope of thousands of e-folds,
    which is an extrapolation, not a measurement."""
    if math.isnan(log_change) or abs(log_change) > MAX_LOG_CHANGE:
        return math.nan
    return 100 * math.expm1(log_change)


def drift_table(jobs: pd.DataFrame, labels: dict[str, str], *, alpha: float) -> pd.DataFrame:
    """Per configuration and metric: the trend against job order and time (see module doc)."""
    rows = []
    for (g, m), sel in jobs.groupby(["group_hash", "metric"], sort=False):
        if len(sel) < MIN_JOBS:
            continue
        y, grp = sel["y"].to_numpy(float), np.zeros(len(sel))
        b_o, p_o = _fit(sel["order"].to_numpy(float), y, grp)
        b_t, p_t = _fit(sel["hours"].to_numpy(float), y, grp)
        rows.append({"config": labels.get(g, g), "metric": m, "n_jobs": len(sel),
                     "pct_per_100_jobs": _pct(100 * b_o), "p_order": p_o, "pct_per_hour": _pct(b_t),
                     "p_time": p_t, "group_hash": g})
    df = pd.DataFrame(rows, columns=[c for c in DRIFT_COLUMNS if c not in ("p_adj", "significant")])
    if df.empty:
        return pd.DataFrame(columns=DRIFT_COLUMNS)
    best = np.fmin(df["p_order"].to_numpy(float), df["p_time"].to_numpy(float))
    best = np.minimum(1.0, 2 * best)  # two fits per row: Bonferroni, then Holm across the table
    df["p_adj"] = adjust_pvalues([None if math.isnan(p) else float(p) for p in best], "holm")
    df["p_adj"] = df["p_adj"].astype(float)
    df["significant"] = df["p_adj"] < alpha
    return df[DRIFT_COLUMNS]


def drift_warnings(table: pd.DataFrame) -> list[str]:
    out = []
    for r in table[table["significant"]].to_dict("records"):
        by_time = not (r["p_order"] <= r["p_time"]) if not math.isnan(r["p_time"]) else False
        rate = f"{r['pct_per_hour']:+.2f}% per hour" if by_time else f"{r['pct_per_100_jobs']:+.2f}% per 100 jobs"
        out.append(f"drift: {r['config']} / {r['metric']} changes by {rate} ({r['n_jobs']} jobs, adjusted "
                   f"p={r['p_adj']:.2g}): later jobs measure differently")
    return out
