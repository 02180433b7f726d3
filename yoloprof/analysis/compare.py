"""Stage 3, compare: every configuration against its baseline, per metric, with the statistics
of DESIGN.md section 7, then one multiple-comparison correction across the whole table.

After the correction a decisive verdict (improved, regressed, changed within noise) whose
adjusted p is no longer below alpha is downgraded to `inconclusive`, with a note: across many
comparisons some raw p-values fall below alpha by chance, and a verdict should survive that.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from yoloprof.analysis.configs import Configs, Plan
from yoloprof.analysis.tables import metric_meta, pooled_samples
from yoloprof.config.stats import ALPHA, CORRECTION, NOISE
from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.stats import adjust_pvalues, compare_batch, detectable_change

# Memory that belongs to the job: on CPU the process RSS peak includes whatever earlier jobs of the
# same process left behind, so CPU sweeps compare each job's own peak growth over its starting
# footprint (a sweep row column); on a GPU the allocator peak is reset per job and is the job's own.
MEM_ABSOLUTE, MEM_GROWTH = "peak_mem_mb", "peak_mem_growth_mib"
DECISIVE = ("improved", "regressed", "within_noise")
COLUMNS = ["config", "metric", "baseline_config", "baseline_value", "value", "unit", "better",
           "ratio", "ci_low", "ci_high", "p", "p_adj", "p_mannwhitney", "verdict", "verdict_code",
           "n_baseline", "n", "cv_baseline", "cv", "mde_pct", "trials_needed", "warnings",
           "group_hash", "baseline_hash"]


def _memory_metric(available: list[str], devices: list[str]) -> tuple[str, list[str]]:
    """(the memory metric to compare by default, notes saying why)."""
    cpu_only = bool(devices) and all(d == "cpu" for d in devices)
    if not cpu_only:
        return MEM_ABSOLUTE, []
    if MEM_GROWTH in available:
        return MEM_GROWTH, [f"CPU jobs: memory compared as {MEM_GROWTH} (each job's peak over its own starting "
                            f"footprint); {MEM_ABSOLUTE} (process RSS) also counts what earlier jobs left"]
    return MEM_ABSOLUTE, [f"CPU jobs without {MEM_GROWTH} in their rows: {MEM_ABSOLUTE} is the process RSS "
                          "peak, which also counts what earlier jobs in the same process left"]


def choose_metrics(metrics: pd.DataFrame, requested: list[str] | None, modes: list[str],
                   devices: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(metrics to compare, notes). A requested metric that no job has is a usage error listing
    the ones that exist; a default one that no job has is just noted."""
    available = sorted(metrics["metric"].unique())
    if requested:
        unknown = [m for m in requested if m not in available]
        if unknown:
            raise UsageError(f"no ok job has metric(s) {', '.join(unknown)}; available: {', '.join(available)}")
        return list(dict.fromkeys(requested)), []
    memory, notes = _memory_metric(available, devices or [])
    # the registry's "analyze" list, restricted to the sweep's modes (p50_ms only with inference)
    wanted = [memory if m == MEM_ABSOLUTE else m for m in registry.names("analyze", modes or ["train"])]
    missing = [m for m in wanted if m not in available]
    notes += [f"metric {m} is in no ok job's results; not compared" for m in missing]
    return [m for m in wanted if m in available], notes


def _missing_row(cfg: Configs, g: str, base: str, metric: str, meta: tuple, where: str) -> dict[str, Any]:
    return {"config": cfg.label(g), "metric": metric, "baseline_config": cfg.label(base),
            "unit": meta[1], "better": meta[0], "verdict": f"missing in {where}", "verdict_code": "missing",
            "warnings": "", "group_hash": g, "baseline_hash": base}


def _result_row(cfg: Configs, g: str, base: str, metric: str, meta: tuple, r: dict[str, Any]) -> dict[str, Any]:
    return {"config": cfg.label(g), "metric": metric, "baseline_config": cfg.label(base),
            "baseline_value": r["gmean_before"], "value": r["gmean_after"], "unit": meta[1],
            "better": meta[0], "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
            "p": r["p_welch"], "p_mannwhitney": r["p_mannwhitney"], "verdict": r["verdict"],
            "verdict_code": r["verdict_code"], "n_baseline": r["n_before"], "n": r["n_after"],
            "cv_baseline": r["cv_before"], "cv": r["cv_after"], "mde_pct": r["mde_pct"],
            "trials_needed": r["trials_needed"], "warnings": "; ".join(r["warnings"]),
            "group_hash": g, "baseline_hash": base}


def compare_configs(metrics: pd.DataFrame, cfg: Configs, plan: Plan, names: list[str], *,
                    alpha: float = ALPHA, noise: float = NOISE, correction: str = CORRECTION) -> pd.DataFrame:
    """The comparison table: one row per (configuration, metric), in configuration order."""
    samples = pooled_samples(metrics[metrics["metric"].isin(names)])
    meta = metric_meta(metrics)
    jobs: list[tuple[str, str, str]] = []
    rows: list[dict[str, Any]] = []
    for g, base in plan.pairs.items():
        for m in names:
            b, a = samples.get((base, m)), samples.get((g, m))
            if b is None or a is None:
                where = "both" if b is None and a is None else ("the baseline" if b is None else "this configuration")
                rows.append(_missing_row(cfg, g, base, m, meta[m], where))
            else:
                jobs.append((g, base, m))
                rows.append({})
    results = iter(compare_batch([(samples[(b, m)], samples[(g, m)], meta[m][0]) for g, b, m in jobs],
                                 alpha=alpha, noise=noise))
    jobs_it = iter(jobs)
    for i, row in enumerate(rows):
        if not row:
            g, base, m = next(jobs_it)
            rows[i] = _result_row(cfg, g, base, m, meta[m], next(results))
    df = _adjust(pd.DataFrame(rows, columns=COLUMNS), alpha, correction)
    # verdicts the correction made inconclusive still say what it would take to decide
    for i in np.flatnonzero(((df["verdict_code"] == "inconclusive") & df["mde_pct"].isna()).to_numpy()):
        g, base, m = df.at[i, "group_hash"], df.at[i, "baseline_hash"], df.at[i, "metric"]
        df.at[i, "mde_pct"], df.at[i, "trials_needed"] = detectable_change(
            samples[(base, m)], samples[(g, m)], alpha=alpha, noise=noise)
    return df


def _adjust(df: pd.DataFrame, alpha: float, correction: str) -> pd.DataFrame:
    if df.empty:
        return df
    df["p_adj"] = adjust_pvalues([None if pd.isna(p) else p for p in df["p"]], correction)
    df["p_adj"] = df["p_adj"].astype(float)
    lost = df["verdict_code"].isin(DECISIVE) & (df["p_adj"] >= alpha)
    if correction != "none" and lost.any():
        note = df.loc[lost, "p_adj"].map(
            lambda q: f"significant alone but not after {correction} correction (adjusted p={q:.3g})")
        df.loc[lost, "warnings"] = (df.loc[lost, "warnings"].fillna("") + "; " + note).str.lstrip("; ")
        df.loc[lost, ["verdict_code", "verdict"]] = ["inconclusive", "inconclusive"]
    order = {g: i for i, g in enumerate(df["group_hash"].drop_duplicates())}
    return df.sort_values(["group_hash"], key=lambda s: s.map(order), kind="stable", ignore_index=True)


def regressions(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Significant (after correction) regressions beyond the noise threshold."""
    return comparisons[comparisons["verdict_code"] == "regressed"]


def gmean_table(metrics: pd.DataFrame, cfg: Configs, names: list[str], alpha: float) -> pd.DataFrame:
    """Per configuration and metric: n, geometric mean and its CI (t on logs), for plots and the
    best/Pareto/scaling views."""
    m = metrics[metrics["metric"].isin(names) & (metrics["value"] > 0)].copy()
    m["log"] = np.log(m["value"])
    g = m.groupby(["group_hash", "metric"], sort=False)["log"].agg(["mean", "std", "count"]).reset_index()
    from scipy import stats as sps

    half = sps.t.ppf(1 - alpha / 2, np.maximum(g["count"] - 1, 1)) * g["std"] / np.sqrt(g["count"])
    half = half.where(g["count"] >= 2)
    g["gmean"], g["lo"], g["hi"] = np.exp(g["mean"]), np.exp(g["mean"] - half), np.exp(g["mean"] + half)
    g["config"] = g["group_hash"].map(cfg.table["config"])
    return g.rename(columns={"count": "n"})[["config", "group_hash", "metric", "n", "gmean", "lo", "hi"]]
