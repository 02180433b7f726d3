"""Comparisons with the process as the unit of replication (DESIGN.md section 7; the method and
why it was chosen: docs/analysis.md "Statistics").

Each side is a list of processes, each process the list of its trials (a capture, a sweep job, a
sweep row's `<metric>_samples`). The summary of one process is the mean of the log of its trials;
the test is Welch's t on those process means (log scale, two-sided), so the variance it uses is
the variance of a process mean, which holds both levels: the between-process part and the
within-process part divided by the trials per process. For a balanced nested design this is
exactly the classical nested-ANOVA test of the treatment effect (the error term is the mean
square between processes), i.e. what a REML mixed model gives; it needs no iterative fit and it
holds its error rate from 2 processes per side, which a hierarchical bootstrap does not. The
within-process level is used to split the noise (between/within SD, and how much the process
means vary beyond what the trials predict: `inflation`) and to say what more would decide.

One process on a side: its mean's run-to-run variance is unknown from the data. With a stored
noise floor for this machine and workload (`yoloprof.metrics.noise_floor`), the variance of a process
mean is the floor's between-process part plus this process's own within-process part over its
trials, and the t quantile uses the floor's degrees of freedom (K-1 of its K processes); the
floor is returned with the result. Without one, when the OTHER side has two or more processes,
their spread serves as the floor (a prediction interval for a new process, assuming both sides
vary alike; a warning says so). With one process on each side and no floor the verdict is
`inconclusive` with NO_FLOOR_WORDS.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy import stats as sps

from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.metrics.decide import detect_words, units_to_decide, within_noise_words
from yoloprof.metrics.stats import (FULL_POWER_TRIALS, LOW_POWER, MW_MIN_TRIALS, _opt, _quiet, _side_stats,
                                    _side_warnings, classify, verdict_words)

NO_FLOOR_WORDS = "inconclusive: one process per side, run-to-run noise unknown"
MIN_PROCESSES = 2


def _groups(side: Sequence[Sequence[float]] | None) -> tuple[list[np.ndarray], int]:
    """Per process: its finite positive trials as logs (empty processes dropped), and how many
    values were dropped."""
    out, dropped = [], 0
    for g in side or []:
        arr = np.asarray([np.nan if v is None else v for v in np.ravel(np.asarray(g, dtype=object))], float)
        keep = np.isfinite(arr) & (arr > 0)
        dropped += int((~keep).sum())
        if keep.any():
            out.append(np.log(arr[keep]))
    return out, dropped


def _within_sd(groups: list[np.ndarray]) -> float | None:
    dfw = sum(g.size - 1 for g in groups)
    if dfw <= 0:
        return None
    return math.sqrt(sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / dfw)


def _level_stats(groups: list[np.ndarray]) -> dict[str, Any]:
    means = np.array([g.mean() for g in groups])
    within = _within_sd(groups)
    m = float(np.mean([g.size for g in groups])) if groups else math.nan
    sd = float(means.std(ddof=1)) if means.size >= 2 else None
    between = None
    if sd is not None:
        between = math.sqrt(max(0.0, sd ** 2 - ((within or 0.0) ** 2) / m))
    return {"means": means, "within_sd": within, "trials_per_process": m, "process_sd": sd,
            "between_sd": between,
            "inflation": (sd ** 2 / (within ** 2 / m)) if sd is not None and within else None}


def _floor_var(floor: dict[str, Any], within: float | None, m: float) -> float:
    """Variance of one process mean of this side from the floor's between-process part and the
    side's own within-process spread (the floor's when the side has none)."""
    f_within = floor.get("within_sd") or 0.0
    between2 = max(0.0, floor["sd"] ** 2 - f_within ** 2 / float(floor.get("trials") or 1.0))
    w = within if within is not None else f_within
    return between2 + w ** 2 / m


def _test(sb: dict, sa: dict, floor: dict | None, alpha: float) -> dict[str, Any] | None:
    """(diff of mean logs after-before, CI, p, df, SD of one process mean, method) or None."""
    mb, ma = sb["means"], sa["means"]
    diff = float(ma.mean() - mb.mean())
    if min(mb.size, ma.size) >= MIN_PROCESSES:
        const = np.ptp(mb) == 0 and np.ptp(ma) == 0
        if const:
            return {"diff": diff, "lo": diff, "hi": diff, "p": 1.0 if diff == 0 else 0.0,
                    "df": mb.size + ma.size - 2, "sd": 0.0, "method": "process means, Welch", "constant": True}
        with _quiet():
            res = sps.ttest_ind(ma, mb, equal_var=False)
            ci = res.confidence_interval(confidence_level=1 - alpha)
        sd = math.sqrt((mb.var(ddof=1) + ma.var(ddof=1)) / 2)
        return {"diff": diff, "lo": float(ci.low), "hi": float(ci.high), "p": float(res.pvalue),
                "df": float(res.df), "sd": sd, "method": "process means, Welch", "constant": False}
    method = "noise floor"
    if floor is None or floor.get("sd") is None or not floor.get("df"):
        floor, method = _other_side(sb if mb.size >= MIN_PROCESSES else sa), "other side's processes"
        if floor is None:
            return None
    vb = _floor_var(floor, sb["within_sd"], sb["trials_per_process"])
    va = _floor_var(floor, sa["within_sd"], sa["trials_per_process"])
    se = math.sqrt(vb / mb.size + va / ma.size)
    df = float(floor["df"])
    t = sps.t.ppf(1 - alpha / 2, df)
    p = float(2 * sps.t.sf(abs(diff) / se, df)) if se > 0 else (1.0 if diff == 0 else 0.0)
    return {"diff": diff, "lo": diff - t * se, "hi": diff + t * se, "p": p, "df": df,
            "sd": math.sqrt((vb + va) / 2), "method": method, "constant": False, "floor": floor}


def _other_side(st: dict[str, Any]) -> dict[str, Any] | None:
    """A floor from the side that has several processes (its process means' SD, df k-1): the
    single process of the other side is then judged like a new draw from the same run-to-run
    noise (a prediction interval), which assumes both sides vary alike."""
    if st["means"].size < MIN_PROCESSES or st["process_sd"] is None:
        return None
    return {"sd": st["process_sd"], "df": st["means"].size - 1, "within_sd": st["within_sd"],
            "trials": st["trials_per_process"], "processes": int(st["means"].size)}


def _mw(mb: np.ndarray, ma: np.ndarray) -> float | None:
    if min(mb.size, ma.size) < MW_MIN_TRIALS:
        return None
    with _quiet():
        return float(sps.mannwhitneyu(ma, mb, alternative="two-sided").pvalue)


def _base(better: str | None, alpha: float, noise: float, gb: list, ga: list) -> dict[str, Any]:
    tb, ta = [int(g.size) for g in gb], [int(g.size) for g in ga]
    return {"better": better, "alpha": alpha, "noise": noise, "unit": "process",
            "processes_before": len(gb), "processes_after": len(ga),
            "n_before": sum(tb), "n_after": sum(ta), "ratio": None, "ci_low": None, "ci_high": None,
            "ci_level": 1 - alpha, "p_welch": None, "p_mannwhitney": None, "mde_pct": None,
            "processes_needed": None, "trials_needed": None, "method": None, "floor": None,
            "verdict_code": "insufficient", "verdict": "needs at least one process per side",
            "low_power": False, "note": None, "warnings": []}


def compare_nested(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], *,
                   better: str | None = "lower", alpha: float = ALPHA, noise: float = NOISE,
                   floor: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compare two sides given as processes of trials: `before=[[trials of process 1], [trials of
    process 2], ...]`. Per-process means alone can be passed as one-trial processes
    (`[[m1], [m2], ...]`); they must then be geometric means (the test works on logs).

    `alpha` is the two-sided level of this one look (a sequential caller passes the alpha it
    spends here); `floor` is a stored noise floor (`yoloprof.metrics.noise_floor.find_floor`) used only
    when a side has a single process. Returns the keys of `compare_samples` (`n_*` count trials,
    `ratio`/`ci_*` oriented > 1 = better) plus `processes_before/after`, `processes_needed`,
    `method` ("process means, Welch", "noise floor", "other side's processes" or "none"), `floor`,
    `within_sd_*`, `between_sd_*`, `inflation_*` (process-mean variance over what the trials
    predict) and `note`."""
    if better not in ("lower", "higher", None):
        raise ValueError(f"better must be 'lower', 'higher' or None, not {better!r}")
    if not 0 < alpha < 1 or noise < 0:
        raise ValueError(f"need 0 < alpha < 1 and noise >= 0 (got alpha={alpha}, noise={noise})")
    (gb, db), (ga, da) = _groups(before), _groups(after)
    r = _base(better, alpha, noise, gb, ga)
    if not gb or not ga:
        return r
    sign = -1.0 if better == "lower" else 1.0
    sb, sa = _level_stats(gb), _level_stats(ga)
    r.update(_describe(gb, ga, sb, sa, better, db, da))
    r["ratio"] = float(math.exp(sign * (sa["means"].mean() - sb["means"].mean())))
    one = min(len(gb), len(ga)) < MIN_PROCESSES
    t = _test(sb, sa, floor if one else None, alpha)
    if t is None:
        r.update(verdict_code="inconclusive", verdict=NO_FLOOR_WORDS, method="none",
                 note="each side's trials share one process; they cannot show run-to-run noise")
        return r
    lo, hi = sorted((math.exp(sign * t["lo"]), math.exp(sign * t["hi"])))
    r.update(ci_low=lo, ci_high=hi, p_welch=t["p"], method=t["method"],
             p_mannwhitney=_mw(sb["means"], sa["means"]), floor=floor if t["method"] == "noise floor" else None)
    if t["method"] == "other side's processes":
        r["warnings"].append(f"one process on a side: its run-to-run noise is taken from the other side's "
                             f"{t['floor']['processes']} processes (assumes both sides vary alike); capture "
                             "it again for a test of its own")
    if t["constant"]:
        r["warnings"].append("no variation between processes on either side: the CI is the exact ratio")
    _decide(r, t, min(len(gb), len(ga)))
    return r


def _describe(gb: list, ga: list, sb: dict, sa: dict, better: str | None, db: int, da: int) -> dict[str, Any]:
    """Per-side figures and warnings from the trials (CV, outliers, slow first) and the split."""
    out: dict[str, Any] = {"warnings": []}
    higher = np.array([better == "higher"])
    for side, groups, st, dropped in (("before", gb, sb, db), ("after", ga, sa, da)):
        vals = np.exp(np.concatenate(groups))
        s = _side_stats(vals.reshape(1, -1), higher)
        out[f"gmean_{side}"] = float(np.exp(st["means"].mean()))
        out[f"cv_{side}"] = _opt(float(s["cv"][0]))
        out[f"outliers_{side}"] = np.flatnonzero(s["outliers"][0]).tolist()
        out[f"within_sd_{side}"] = st["within_sd"]
        out[f"between_sd_{side}"] = st["between_sd"]
        out[f"inflation_{side}"] = st["inflation"]
        first = [bool(_side_stats(np.exp(g).reshape(1, -1), higher)["slow_first"][0]) for g in groups]
        out["warnings"] += _side_warnings(side, vals, float(s["cv"][0]), s["outliers"][0], False, dropped)
        if any(first):
            out["warnings"].append(f"{side}: slow first trial in {sum(first)} of {len(groups)} process(es); "
                                   "consider more warm-up")
    return out


def _decide(r: dict[str, Any], t: dict[str, Any], k: int) -> None:
    alpha, noise, better = r["alpha"], r["noise"], r["better"]
    code = classify(r["ci_low"], r["ci_high"], t["p"], alpha=alpha, noise=noise)
    r["verdict_code"], r["verdict"] = code, verdict_words(code, better)
    if code == "within_noise":
        r["verdict"] = within_noise_words(r["ratio"], r["ci_low"], r["ci_high"], noise, better)
    if k < FULL_POWER_TRIALS and t["method"] == "process means, Welch":
        r.update(low_power=True, verdict=f"{r['verdict']} ({LOW_POWER})")
        r["warnings"].append(f"{LOW_POWER}: {k} processes on a side; use {FULL_POWER_TRIALS} or more")
    p_mw = r["p_mannwhitney"]
    if p_mw is not None and (t["p"] < alpha) != (p_mw < alpha):
        r["warnings"].append(f"Welch (p={t['p']:.3g}) and Mann-Whitney (p={p_mw:.3g}) on the process "
                             f"means disagree at alpha={alpha}")
    if code in ("inconclusive", "within_noise") and t["sd"] > 0:
        need, mde = units_to_decide(t["sd"], math.log(r["ratio"]), noise, alpha, k, t["df"], code)
        r.update(processes_needed=need, mde_pct=mde)
        per = r["n_before"] / max(r["processes_before"], 1)
        r["trials_needed"] = int(math.ceil(need * per)) if need else None
        r["note"] = (f"about {need} processes per side would decide (80% power)" if need else None)
        if code == "inconclusive":
            r["note"] = detect_words(mde, k, "process", alpha, need, noise)
    if t["method"] == "noise floor" and r["floor"]:
        f = r["floor"]
        r["warnings"].append(f"one process per side: judged against the stored run-to-run noise floor "
                             f"(process-mean SD {100 * f['sd']:.2f}% from {f.get('processes')} processes, "
                             f"{f.get('workload') or 'this workload'}, {f.get('measured_at') or 'date unknown'})")
