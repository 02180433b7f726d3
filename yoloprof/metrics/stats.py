"""Statistics for `compare` and `analyze` (DESIGN.md section 7).

One value per independent unit. `compare` and `analyze` decide with the process as the unit
(`yoloprof.metrics.nested.compare_nested`, which calls the helpers here on process means); the
functions below treat every value they get as independent, so give them one value per process
(its geometric mean), never the trials of one process. The effect is the ratio of geometric means, because timings are
multiplicative (a 10% speed-up is the same change at 5 ms and at 500 ms) and log-normal-ish; its
confidence interval and p-value come from Welch's t-test on the log values (scipy), with
Mann-Whitney U as a rank-based cross-check that does not trust the log-normal model.

Orientation: the reported ratio is turned so that > 1 means *better*: for a `lower`-is-better
metric it is before/after, for a `higher`-is-better one after/before; a metric with no direction
(`better=None`) keeps after/before and its verdict words are `increased`/`decreased`.

Verdict, with the CI [L, U] and noise threshold d, checked in this order:
  improved  L > 1+d        regressed  U < 1-d        equivalent  1-d <= L and U <= 1+d
  changed, within noise    significant (p < alpha) but the CI crosses an edge of the +-d band; the
                           words say so in full (`within_noise_words`: direction, interval, why)
  inconclusive             anything else; we then report the smallest change this n could detect
                           and the trials per side needed to detect a change of d
Two trials per side (the `--repeat 2` minimum) are tested like more, but the result is labelled
low power (`low_power`, a warning and "(low power)" in the verdict words): with df <= 2 the CI is
wide, yet Welch's test keeps its false-positive rate at or below alpha (a simulation test holds it).
Fewer than 2 trials on either side gives no verdict at all, only the point ratio.

Power math (no statsmodels; one home, metrics/decide.py): the smallest detectable change is the
difference of mean logs at which the exact power of the two-sided t-test (noncentral t,
`scipy.stats.nct`) at Welch's df is 80%; the trials needed are the smallest n per side with 80%
exact power for a change of d (the search starts at the normal approximation
``n = 2 ((z[1-alpha/2] + z[power]) s / log(1+d))^2``), s the pooled SD of the log values.

Instability warnings (flag, never drop): CV above 10%; values beyond 1.5 IQR of the quartiles
(Tukey fences); a slow first trial: with at least 3 trials, the first is slower than every other
trial (higher for lower-is-better or undirected metrics, lower for higher-is-better ones) and the
gap to the nearest of the rest exceeds 1.5 IQR of the rest or 10% of that value (warm-up effects
such as allocator growth, cudnn autotuning or page faults typically show up like this).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
from scipy import stats as sps

from yoloprof.config.stat_defaults import ALPHA, CORRECTION, CORRECTIONS, NOISE
from yoloprof.metrics.decide import (MIN_TRIALS, mde_log, units_to_detect,  # MIN_TRIALS: callers read it here too
                                     within_noise_words)

FULL_POWER_TRIALS = 3   # below this per side, a tested result is labelled low power
MW_MIN_TRIALS = 5
CV_WARN = 0.10
SLOW_FIRST_FRACTION = 0.10
NEEDS_TRIALS = f"needs at least {MIN_TRIALS} trials per side"
LOW_POWER = "low power"

# verdict_code -> words shown to a person; the codes are stable for JSON/CSV consumers.
VERDICT_WORDS = {
    "improved": "improved",
    "regressed": "regressed",
    "equivalent": "equivalent",
    "within_noise": "changed, within noise",
    "inconclusive": "inconclusive",
    "insufficient": NEEDS_TRIALS,
}
_UNDIRECTED_WORDS = {"improved": "increased", "regressed": "decreased"}


def _clean(values: Iterable[float] | None) -> tuple[np.ndarray, int]:
    """Finite, positive values only (the log scale has no room for zero or negative timings),
    and how many were dropped for that reason."""
    arr = np.asarray([] if values is None else list(values), dtype=float).ravel()
    keep = np.isfinite(arr) & (arr > 0)
    return arr[keep], int((~keep).sum())


def _rowwise_iqr_fences(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q1, q3 = np.percentile(X, [25, 75], axis=1)
    return q1, q3, q3 - q1


def _side_stats(X: np.ndarray, higher: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row CV, geometric mean, Tukey outlier mask and slow-first flag for k rows of n trials,
    all at once: scipy's per-call overhead (~1 ms) would dominate a 1000-comparison sweep."""
    k, n = X.shape
    nan = np.full(k, np.nan)
    out = {"cv": nan.copy(), "gmean": nan.copy(), "outliers": np.zeros((k, n), bool),
           "slow_first": np.zeros(k, bool)}
    if n == 0:
        return out
    out["gmean"] = np.exp(np.log(X).mean(axis=1))
    if n >= 2:
        out["cv"] = X.std(axis=1, ddof=1) / X.mean(axis=1)
    if n >= 4:
        q1, q3, iqr = _rowwise_iqr_fences(X)
        out["outliers"] = (X < (q1 - 1.5 * iqr)[:, None]) | (X > (q3 + 1.5 * iqr)[:, None])
    if n >= FULL_POWER_TRIALS:  # a "slow first" needs at least two others to compare with
        rest = X[:, 1:]
        _, _, iqr = _rowwise_iqr_fences(rest)
        nearest = np.where(higher, rest.min(axis=1), rest.max(axis=1))
        gap = np.where(higher, nearest - X[:, 0], X[:, 0] - nearest)
        out["slow_first"] = (gap > 0) & ((gap > 1.5 * iqr) | (gap > SLOW_FIRST_FRACTION * np.abs(nearest)))
    return out


def outlier_indices(values: Sequence[float]) -> list[int]:
    """Indices outside Tukey's fences (1.5 IQR beyond the quartiles); for flagging only."""
    X = np.asarray(values, dtype=float).reshape(1, -1)
    return np.flatnonzero(_side_stats(X, np.array([False]))["outliers"][0]).tolist()


def slow_first_trial(values: Sequence[float], better: str | None) -> bool:
    """True when trial 0 looks like a warm-up casualty (rule in the module docstring)."""
    X = np.asarray(values, dtype=float).reshape(1, -1)
    return bool(_side_stats(X, np.array([better == "higher"]))["slow_first"][0])


def _side_warnings(side: str, values: np.ndarray, cv: float, outliers: np.ndarray,
                   slow_first: bool, dropped: int) -> list[str]:
    out: list[str] = []
    if dropped:
        out.append(f"{side}: ignored {dropped} non-positive or non-finite value(s)")
    if math.isfinite(cv) and cv > CV_WARN:
        out.append(f"{side}: unstable, CV {cv * 100:.1f}% > {CV_WARN * 100:.0f}%")
    idx = np.flatnonzero(outliers)
    if idx.size:
        shown = ", ".join(f"#{i}={values[i]:.4g}" for i in idx)
        out.append(f"{side}: outlier trial(s) beyond 1.5 IQR (kept): {shown}")
    if slow_first:
        out.append(f"{side}: slow first trial ({values[0]:.4g}); consider more warm-up")
    return out


def _welch(LB: np.ndarray, LA: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
    """Row-wise (p, ci_low, ci_high, df) of mean(log after) - mean(log before). Rows where both
    sides are constant give Welch nothing to work with: their CI collapses onto the exact
    difference (p = 1 if equal, else 0)."""
    diff = LA.mean(axis=1) - LB.mean(axis=1)
    const = (np.ptp(LB, axis=1) == 0) & (np.ptp(LA, axis=1) == 0)
    with _quiet():
        res = sps.ttest_ind(LA, LB, axis=1, equal_var=False)
        ci = res.confidence_interval(confidence_level=1 - alpha)
    p, lo, hi, df = (np.array(x, dtype=float) for x in (res.pvalue, ci.low, ci.high, res.df))
    p[const] = np.where(diff[const] == 0, 1.0, 0.0)
    lo[const], hi[const] = diff[const], diff[const]
    df[const] = LB.shape[1] + LA.shape[1] - 2
    return p, lo, hi, df


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Constant or tiny rows make scipy warn about precision loss; those rows are handled above."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _mannwhitney(B: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Row-wise two-sided U test p. Exact when the smaller side has <= 8 trials and the row has no
    ties (scipy's own 'auto' rule, applied per row); NaN below MW_MIN_TRIALS per side."""
    k = B.shape[0]
    p = np.full(k, np.nan)
    if min(B.shape[1], A.shape[1]) < MW_MIN_TRIALS:
        return p
    both = np.sort(np.concatenate([B, A], axis=1), axis=1)
    tied = (np.diff(both, axis=1) == 0).any(axis=1)
    small = min(B.shape[1], A.shape[1]) <= 8
    for exact in (True, False):
        rows = np.flatnonzero((~tied & small) if exact else (tied | (not small)))
        if rows.size:
            with _quiet():
                res = sps.mannwhitneyu(A[rows], B[rows], axis=1, alternative="two-sided",
                                       method="exact" if exact else "asymptotic")
            p[rows] = res.pvalue
    return p


def _power(LB: np.ndarray, LA: np.ndarray, df: np.ndarray, alpha: float,
           noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (smallest detectable change in %, trials per side to detect a change of `noise`),
    by the one home of these figures (metrics/decide.py): exact noncentral-t power at Welch's df."""
    s = np.sqrt((LB.var(axis=1, ddof=1) + LA.var(axis=1, ddof=1)) / 2)
    se = s * math.sqrt(1 / LB.shape[1] + 1 / LA.shape[1])
    mde = np.expm1(mde_log(se, df, alpha)) * 100
    need = np.full(s.shape, float(MIN_TRIALS))
    live = s > 0
    if noise > 0 and live.any():
        need[live] = units_to_detect(s[live], noise, alpha)
    elif noise <= 0:
        need[:] = np.nan
    return mde, need


def classify(ci_low: float, ci_high: float, p: float, *, alpha: float, noise: float) -> str:
    """The verdict code from an oriented CI on the ratio scale and the p-value."""
    if ci_low > 1 + noise:
        return "improved"
    if ci_high < 1 - noise:
        return "regressed"
    if ci_low >= 1 - noise and ci_high <= 1 + noise:
        return "equivalent"
    if p < alpha:
        return "within_noise"
    return "inconclusive"


def verdict_words(code: str, better: str | None) -> str:
    if better is None and code in _UNDIRECTED_WORDS:
        return _UNDIRECTED_WORDS[code]
    return VERDICT_WORDS[code]


def _opt(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _compare_group(B: np.ndarray, A: np.ndarray, betters: list[str | None], dropped: list[tuple[int, int]],
                   alpha: float, noise: float) -> list[dict[str, Any]]:
    """All comparisons with the same (n_before, n_after), as arrays; then one dict per row."""
    higher = np.array([b == "higher" for b in betters])
    sign = np.array([-1.0 if b == "lower" else 1.0 for b in betters])
    sb, sa = _side_stats(B, higher), _side_stats(A, higher)
    nb, na = B.shape[1], A.shape[1]
    tested = min(nb, na) >= MIN_TRIALS
    if tested:
        LB, LA = np.log(B), np.log(A)
        p, lo, hi, df = _welch(LB, LA, alpha)
        p_mw = _mannwhitney(B, A)
        lo, hi = np.sort(np.exp(sign[:, None] * np.stack([lo, hi], axis=1)), axis=1).T
        # power figures only where the verdict will be inconclusive (the noncentral t is costly)
        mde, need = np.full(len(betters), np.nan), np.full(len(betters), np.nan)
        incon = ~((lo > 1 + noise) | (hi < 1 - noise) | ((lo >= 1 - noise) & (hi <= 1 + noise)) | (p < alpha))
        if incon.any():
            mde[incon], need[incon] = _power(LB[incon], LA[incon], df[incon], alpha, noise)
    out = []
    for i, better in enumerate(betters):
        notes = (_side_warnings("before", B[i], sb["cv"][i], sb["outliers"][i], sb["slow_first"][i], dropped[i][0])
                    + _side_warnings("after", A[i], sa["cv"][i], sa["outliers"][i], sa["slow_first"][i], dropped[i][1]))
        has_both = nb > 0 and na > 0
        r: dict[str, Any] = {
            "better": better, "alpha": alpha, "noise": noise, "n_before": nb, "n_after": na,
            "cv_before": _opt(sb["cv"][i]), "cv_after": _opt(sa["cv"][i]),
            "gmean_before": _opt(sb["gmean"][i]), "gmean_after": _opt(sa["gmean"][i]),
            "ratio": (float((sa["gmean"][i] / sb["gmean"][i]) ** sign[i]) if has_both else None),
            "ci_low": None, "ci_high": None, "ci_level": 1 - alpha, "p_welch": None,
            "p_mannwhitney": None, "mde_pct": None, "trials_needed": None,
            "outliers_before": np.flatnonzero(sb["outliers"][i]).tolist(),
            "outliers_after": np.flatnonzero(sa["outliers"][i]).tolist(),
            "verdict_code": "insufficient", "verdict": NEEDS_TRIALS, "low_power": False, "warnings": notes,
        }
        if tested:
            _fill_test(r, float(p[i]), float(lo[i]), float(hi[i]), float(p_mw[i]),
                       float(mde[i]), float(need[i]), constant=bool(np.ptp(B[i]) == 0 and np.ptp(A[i]) == 0))
        out.append(r)
    return out


def _fill_test(r: dict[str, Any], p: float, lo: float, hi: float, p_mw: float, mde: float,
               need: float, *, constant: bool) -> None:
    alpha, noise = r["alpha"], r["noise"]
    r.update(p_welch=p, ci_low=lo, ci_high=hi, p_mannwhitney=_opt(p_mw))
    if constant:
        r["warnings"].append("no variation on either side: the CI is the exact ratio")
    if math.isfinite(p_mw) and (p < alpha) != (p_mw < alpha):
        r["warnings"].append(f"Welch (p={p:.3g}) and Mann-Whitney (p={p_mw:.3g}) disagree at "
                             f"alpha={alpha}: the log-normal assumption may not hold")
    code = classify(lo, hi, p, alpha=alpha, noise=noise)
    r.update(verdict_code=code, verdict=verdict_words(code, r["better"]))
    if code == "within_noise" and r["ratio"] is not None:
        r["verdict"] = within_noise_words(r["ratio"], lo, hi, noise, r["better"])
    if min(r["n_before"], r["n_after"]) < FULL_POWER_TRIALS:
        r.update(low_power=True, verdict=f"{r['verdict']} ({LOW_POWER})")
        r["warnings"].append(f"{LOW_POWER}: {min(r['n_before'], r['n_after'])} trials on a side; the "
                             f"interval is wide, use {FULL_POWER_TRIALS} or more trials per side")
    if code == "inconclusive":
        r.update(mde_pct=_opt(mde), trials_needed=int(need) if math.isfinite(need) else None)


def compare_batch(pairs: Sequence[tuple[Iterable[float], Iterable[float], str | None]], *,
                  alpha: float = ALPHA, noise: float = NOISE) -> list[dict[str, Any]]:
    """`compare_samples` for many (before, after, better) triples at once, in input order.
    Comparisons with equal trial counts are stacked and tested in one scipy call each."""
    if not 0 < alpha < 1 or noise < 0:
        raise ValueError(f"need 0 < alpha < 1 and noise >= 0 (got alpha={alpha}, noise={noise})")
    groups: dict[tuple[int, int], list[int]] = {}
    cleaned = []
    for i, (before, after, better) in enumerate(pairs):
        if better not in ("lower", "higher", None):
            raise ValueError(f"better must be 'lower', 'higher' or None, not {better!r}")
        (b, db), (a, da) = _clean(before), _clean(after)
        cleaned.append((b, a, better, (db, da)))
        groups.setdefault((b.size, a.size), []).append(i)
    results: list[dict[str, Any]] = [{}] * len(cleaned)
    for (nb, na), idx in groups.items():
        B = np.array([cleaned[i][0] for i in idx]).reshape(len(idx), nb)
        A = np.array([cleaned[i][1] for i in idx]).reshape(len(idx), na)
        rows = _compare_group(B, A, [cleaned[i][2] for i in idx], [cleaned[i][3] for i in idx], alpha, noise)
        for i, r in zip(idx, rows):
            results[i] = r
    return results


def detectable_change(before: Iterable[float], after: Iterable[float], *, alpha: float = ALPHA,
                      noise: float = NOISE) -> tuple[float | None, int | None]:
    """(smallest change in % detectable at these trial counts, trials per side needed to detect a
    change of `noise`) with 80% power; None when either side has fewer than MIN_TRIALS usable trials."""
    (b, _), (a, _) = _clean(before), _clean(after)
    if min(b.size, a.size) < MIN_TRIALS:
        return None, None
    lb, la = np.log(b)[None, :], np.log(a)[None, :]
    df = np.array([_welch(lb, la, alpha)[3][0]])
    mde, need = _power(lb, la, df, alpha, noise)
    return _opt(float(mde[0])), int(need[0]) if math.isfinite(need[0]) else None


def compare_samples(before: Iterable[float], after: Iterable[float], *, better: str | None = "lower",
                    alpha: float = ALPHA, noise: float = NOISE) -> dict[str, Any]:
    """Compare two sets of per-trial values; see the module docstring for every rule used."""
    return compare_batch([(before, after, better)], alpha=alpha, noise=noise)[0]


def adjust_pvalues(pvalues: Sequence[float | None], method: str = CORRECTION) -> list[float | None]:
    """Family-wise (Holm) or false-discovery (Benjamini-Hochberg) adjustment; None/NaN entries
    (comparisons without a test) stay None and are not counted in the family."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; use {', '.join(CORRECTIONS)}")
    vals = np.array([np.nan if p is None else float(p) for p in pvalues], dtype=float)
    ok = np.isfinite(vals)
    adj = vals.copy()
    if ok.any() and method == "bh":
        adj[ok] = sps.false_discovery_control(vals[ok], method="bh")
    elif ok.any() and method == "holm":
        adj[ok] = _holm(vals[ok])
    return [None if not math.isfinite(x) else float(x) for x in adj]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment (scipy has none): sorted ascending, the i-th smallest
    (i = 0..m-1) becomes max over j <= i of min(1, (m - j) * p_(j)), i.e. monotone non-decreasing."""
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(stepped)
    return out


def mean_ci(values: Iterable[float], alpha: float = ALPHA) -> dict[str, Any]:
    """Mean, its two-sided (1-alpha) Student-t confidence interval, sample std and CV, and the
    Tukey outliers, of one set of samples (`yoloprof.timeit`). CI and CV need two samples."""
    x, _ = _clean(values)
    n = int(x.size)
    mean = float(x.mean()) if n else None
    std = float(x.std(ddof=1)) if n >= 2 else None
    ci = None
    if mean is not None and std is not None:  # n >= 2
        half = float(sps.t.ppf(1 - alpha / 2, n - 1)) * std / math.sqrt(n)
        ci = (mean - half, mean + half)
    return {"n": n, "mean": mean, "std": std, "ci": ci, "alpha": alpha,
            "cv": (std / mean) if std is not None and mean else None,
            "outliers": outlier_indices(x.tolist()) if n >= 4 else []}
