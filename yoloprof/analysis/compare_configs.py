"""Stage 3, compare: every configuration against its baseline, per metric, with the statistics
of DESIGN.md section 7, then one multiple-comparison correction across the whole table.

The unit of replication is the job (one process): each job's trials become one process mean, and
the test is Welch's on those (`yoloprof.metrics.nested`); `n`/`n_baseline` count trials and
`k`/`k_baseline` processes. Comparisons with two or more jobs per side are tested in batches of
equal job counts (`compare_batch` on the per-job geometric means is exactly the nested test, and
vectorised); a side with one job goes through `compare_nested` and, with no noise floor, is
`inconclusive: one process per side, run-to-run noise unknown`.

After the correction a decisive verdict (improved, regressed, changed within noise) whose
adjusted p is no longer below alpha is downgraded to `inconclusive`, with a note: across many
comparisons some raw p-values fall below alpha by chance, and a verdict should survive that.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from yoloprof.analysis.configs import Configs, Plan
from yoloprof.analysis.tables import metric_meta, process_samples
from yoloprof.config.stat_defaults import ALPHA, CORRECTION, NOISE
from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics.nested import compare_nested
from yoloprof.metrics.stats import adjust_pvalues, compare_batch, detectable_change

# Memory that belongs to the job: on CPU the process RSS peak includes whatever earlier jobs of the
# same process left behind, so CPU sweeps compare each job's own peak growth over its starting
# footprint (a sweep row column); on a GPU the allocator peak is reset per job and is the job's own.
MEM_ABSOLUTE, MEM_GROWTH = "peak_mem_mb", "peak_mem_growth_mib"
DECISIVE = ("improved", "regressed", "within_noise")
COLUMNS = ["config", "metric", "baseline_config", "baseline_value", "value", "unit", "better",
           "ratio", "ci_low", "ci_high", "p", "p_adj", "p_mannwhitney", "verdict", "verdict_code",
           "n_baseline", "n", "k_baseline", "k", "cv_baseline", "cv", "mde_pct", "trials_needed",
           "processes_needed", "warnings", "group_hash", "baseline_hash"]


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


def _result_row(cfg: Configs, g: str, base: str, metric: str, meta: tuple, r: dict[str, Any],
                groups: tuple[list[np.ndarray], list[np.ndarray]]) -> dict[str, Any]:
    gb, ga = groups
    nb, na = sum(x.size for x in gb), sum(x.size for x in ga)
    need = r.get("processes_needed", r.get("trials_needed"))
    per = na / max(len(ga), 1)
    return {"config": cfg.label(g), "metric": metric, "baseline_config": cfg.label(base),
            "baseline_value": r["gmean_before"], "value": r["gmean_after"], "unit": meta[1],
            "better": meta[0], "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
            "p": r["p_welch"], "p_mannwhitney": r["p_mannwhitney"], "verdict": r["verdict"],
            "verdict_code": r["verdict_code"], "n_baseline": nb, "n": na, "k_baseline": len(gb), "k": len(ga),
            "cv_baseline": r["cv_before"], "cv": r["cv_after"], "mde_pct": r["mde_pct"],
            "trials_needed": None if need is None else int(np.ceil(need * per)), "processes_needed": need,
            "warnings": "; ".join(r["warnings"]), "group_hash": g, "baseline_hash": base}


def _gmeans(groups: list[np.ndarray]) -> np.ndarray:
    """Each process's geometric mean (the exp of its mean log trial): Welch on their logs is the
    nested test on process means."""
    return np.array([np.exp(np.log(x[x > 0]).mean()) for x in groups if (x > 0).any()])


# compare_batch speaks of trials; here its values are process means
_PROCESS_WORDS = (("outlier trial(s)", "outlier process mean(s)"), ("slow first trial", "slow first job"),
                  ("trials on a side", "processes on a side"), ("trials per side", "processes per side"))


def _per_process(text: str) -> str:
    for old, new in _PROCESS_WORDS:
        text = text.replace(old, new)
    return text


FloorFor = Callable[[str, str], "dict[str, Any] | None"]


def profile_floors(metrics: pd.DataFrame, profiles: dict[str, dict], noise_file: Any = None) -> FloorFor:
    """(group_hash, metric) -> the stored run-to-run noise floor of the machine and workload of
    that configuration's first job (yoloprof.metrics.noise_floor), or None; the store is read once."""
    from yoloprof.metrics.noise_floor import find_floor, load_floors

    first = dict(metrics.drop_duplicates("group_hash")[["group_hash", "job_id"]].itertuples(index=False))
    store: dict[str, Any] = {}

    def floor_for(group: str, metric: str) -> dict[str, Any] | None:
        job = first.get(group)
        prof = profiles.get(job) if job is not None else None
        if not prof:
            return None
        if not store:
            store.update(load_floors(noise_file))
        return find_floor(prof, metric, noise_file, store)
    return floor_for


def _decide_all(samples: dict, jobs: list[tuple[str, str, str]], meta: dict, alpha: float,
                noise: float, floor_for: FloorFor | None = None) -> list[dict[str, Any]]:
    """Every comparison's result, in `jobs` order: batched Welch on process means where both
    sides have two or more processes, compare_nested one by one elsewhere."""
    out: list[dict[str, Any]] = [{}] * len(jobs)
    batch = [i for i, (g, b, m) in enumerate(jobs) if min(len(samples[(b, m)]), len(samples[(g, m)])) >= 2]
    res = compare_batch([(_gmeans(samples[(jobs[i][1], jobs[i][2])]), _gmeans(samples[(jobs[i][0], jobs[i][2])]),
                          meta[jobs[i][2]][0]) for i in batch], alpha=alpha, noise=noise)
    for i, r in zip(batch, res):
        r["warnings"] = [_per_process(w) for w in r["warnings"]]
        out[i] = r
    for i, (g, b, m) in enumerate(jobs):
        if not out[i]:
            floor = (floor_for(b, m) or floor_for(g, m)) if floor_for else None
            out[i] = compare_nested(samples[(b, m)], samples[(g, m)], better=meta[m][0], alpha=alpha,
                                    noise=noise, floor=floor)
    return out


def compare_configs(metrics: pd.DataFrame, cfg: Configs, plan: Plan, names: list[str], *,
                    alpha: float = ALPHA, noise: float = NOISE, correction: str = CORRECTION,
                    floor_for: FloorFor | None = None) -> pd.DataFrame:
    """The comparison table: one row per (configuration, metric), in configuration order.
    `floor_for` (`profile_floors`) supplies noise floors for sides of a single job."""
    samples = process_samples(metrics[metrics["metric"].isin(names)])
    meta = metric_meta(metrics)
    jobs: list[tuple[str, str, str]] = []
    rows: list[dict[str, Any]] = []
    for g, base in plan.pairs.items():
        for m in names:
            b, a = samples.get((base, m)), samples.get((g, m))
            if b is None or a is None:
                where = "both" if b is None and a is None else ("the baseline" if b is None else "this configuration")
                rows.append(_missing_row(cfg, g, base, m, meta.get(m, (registry.better(m), registry.unit(m))), where))
            else:
                jobs.append((g, base, m))
                rows.append({})
    results = iter(_decide_all(samples, jobs, meta, alpha, noise, floor_for))
    jobs_it = iter(jobs)
    for i, row in enumerate(rows):
        if not row:
            g, base, m = next(jobs_it)
            rows[i] = _result_row(cfg, g, base, m, meta[m], next(results), (samples[(base, m)], samples[(g, m)]))
    df = _adjust(pd.DataFrame(rows, columns=COLUMNS), alpha, correction)
    # verdicts the correction made inconclusive still say what it would take to decide
    for i in np.flatnonzero(((df["verdict_code"] == "inconclusive") & df["mde_pct"].isna()
                             & df["p"].notna()).to_numpy()).tolist():
        g, base, m = df.at[i, "group_hash"], df.at[i, "baseline_hash"], df.at[i, "metric"]
        mde, need = detectable_change(_gmeans(samples[(base, m)]), _gmeans(samples[(g, m)]), alpha=alpha, noise=noise)
        df.at[i, "mde_pct"], df.at[i, "processes_needed"] = mde, need
        df.at[i, "trials_needed"] = None if need is None else int(np.ceil(need * df.at[i, "n"] / max(df.at[i, "k"], 1)))
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
