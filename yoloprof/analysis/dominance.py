"""The Pareto set and the best configuration per metric, decided within a mode and with the
comparisons' own statistics (`yoloprof.metrics.stats.compare_batch`, the same alpha, noise band
and correction as the comparison table).

Why: train and infer jobs are never compared, so neither is a Pareto point or a "best" across
modes. And a point estimate decides nothing inside the noise: configuration A dominates B only
when A is shown better than B beyond the noise band on at least one axis (verdict `improved`,
still significant after the correction over every dominance test of the mode) and shown not worse
than the band on every other axis (the lower end of the ratio's CI, oriented so that > 1 is
better, is at least 1 - noise). Two identical models dominate neither; a 0.3 MiB memory
difference inside the band does not keep a slower configuration on the set. Without a CI (a side
with one trial) nothing is decided and every complete configuration stays on the set, said in the
`decided` column. The family of the correction is the improvement tests made: each
configuration's candidate dominators (point ratios that could pass) are tested strongest first
until one dominates it, so a sweep of 500 configurations runs a few thousand tests, not 750,000.

"best" is the configuration with the best geometric mean within its mode; whether it beats the
runner-up is that pair's comparison, its p adjusted with the comparison table's correction over
ONE family: the table's tests plus every best-vs-runner-up test (`p_adj`), so "best" never says
significant where the table, which holds fewer tests, would not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from yoloprof.metrics.stats import adjust_pvalues, compare_batch

THROUGHPUT = "img_per_s"
DECISIVE = ("improved", "regressed", "within_noise")


def modes_of(ok: pd.DataFrame) -> dict[str, str]:
    """group_hash -> mode ("train" where a row does not say)."""
    if "mode" not in ok:
        return {str(g): "train" for g in ok["group_hash"]}
    mode = ok["mode"].astype(object).where(ok["mode"].notna(), "train")
    return dict(zip(ok["group_hash"].astype(str), mode.astype(str)))


def _axes(wide: pd.DataFrame, memory: str) -> list[tuple[str, str]]:
    """(metric, better) of this mode's axes: throughput, latency (p50 when every configuration
    has it, else the step time) and memory, those some configuration has."""
    lat = "p50_ms" if "p50_ms" in wide and wide["p50_ms"].notna().all() else "step_ms"
    axes = [(THROUGHPUT, "higher"), (lat, "lower"), (memory, "lower")]
    return [(m, b) for m, b in axes if m in wide and wide[m].notna().any()]


def _candidates(X: np.ndarray, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) pairs whose point ratios allow "i dominates j": every oriented ratio >= 1 - noise
    and one > 1 + noise (the CI holds the point ratio, so no other pair can pass the tests)."""
    logr = X[:, None, :] - X[None, :, :]  # log ratio i over j, oriented (> 0 = i better)
    ok = (logr >= np.log1p(-noise)).all(axis=2) & (logr > np.log1p(noise)).any(axis=2)
    np.fill_diagonal(ok, False)
    i, j = np.nonzero(ok)
    return i, j


def _test_pairs(pairs: list[tuple[int, int]], idx: np.ndarray, gh: np.ndarray, axes: list[tuple[str, str]],
                samples: dict, alpha: float, noise: float) -> list[list[dict[str, Any]]]:
    """compare_batch of every axis of every (i, j) pair: j the baseline, i the challenger."""
    tests = [(samples[(gh[idx[j]], m)], samples[(gh[idx[i]], m)], b) for i, j in pairs for m, b in axes]
    res = compare_batch(tests, alpha=alpha, noise=noise) if tests else []
    k = len(axes)
    return [res[n * k:(n + 1) * k] for n in range(len(pairs))]


def _dominates(res: list[dict[str, Any]], noise: float, alpha: float, p_adj: list[float | None] | None = None) -> bool:
    """Improved beyond the band on one axis (p, or its adjusted p, below alpha) and the CI's lower
    end at least 1 - noise on every axis."""
    ps = p_adj if p_adj is not None else [r["p_welch"] for r in res]
    improved = any(r["verdict_code"] == "improved" and q is not None and q < alpha for r, q in zip(res, ps))
    return improved and all(r["ci_low"] is not None and r["ci_low"] >= 1.0 - noise for r in res)


def _mode_front(out: pd.DataFrame, rows: np.ndarray, axes: list[tuple[str, str]], samples: dict, *,
                alpha: float, noise: float, correction: str) -> None:
    """Fill `pareto`, `dominated_by` and `decided` for the configurations `rows` of one mode.

    Which pairs are tested: for every configuration its candidate dominators (`_candidates`),
    strongest first (largest worst-axis margin), one per round, until one dominates it at the
    uncorrected level or none is left; then the correction runs over every improvement test made
    (the family) and a configuration is dominated when a tested pair still dominates it."""
    sub = out.iloc[rows]
    complete = sub[[m for m, _ in axes]].notna().all(axis=1).to_numpy() & (len(axes) >= 2)
    idx = rows[complete]
    out.loc[out.index[rows], "complete"] = complete
    if not len(idx):
        return
    X = np.column_stack([np.log(out[m].to_numpy(float)[idx]) * (1 if b == "higher" else -1) for m, b in axes])
    ci, cj = _candidates(X, noise)
    order = np.lexsort((-(X[ci] - X[cj]).min(axis=1), cj))  # per j, strongest candidate first
    ci, cj = ci[order], cj[order]
    starts = np.flatnonzero(np.r_[True, cj[1:] != cj[:-1]]) if len(cj) else np.zeros(0, int)
    ends = np.r_[starts[1:], len(cj)]
    live = {int(cj[s0]): [int(s0), int(e0)] for s0, e0 in zip(starts, ends)}  # j -> [next, end)
    gh = out["group_hash"].to_numpy()
    tested: list[tuple[tuple[int, int], list[dict[str, Any]]]] = []
    while live:
        pairs = [(int(ci[span[0]]), j) for j, span in live.items()]
        results = _test_pairs(pairs, idx, gh, axes, samples, alpha, noise)
        tested += list(zip(pairs, results))
        for (_, j), res in zip(pairs, results):
            live[j][0] += 1
            if _dominates(res, noise, alpha) or live[j][0] >= live[j][1]:
                del live[j]
    flat = [r["p_welch"] if r["verdict_code"] == "improved" else None for _, res in tested for r in res]
    adjusted = adjust_pvalues(flat, correction)
    k = len(axes)
    dominated_by: dict[int, str] = {}
    for n, ((i, j), res) in enumerate(tested):
        if j not in dominated_by and _dominates(res, noise, alpha, adjusted[n * k:(n + 1) * k]):
            dominated_by[j] = str(out["config"].iloc[idx[i]])
    decided = all(len(samples[(gh[g], m)]) >= 2 for g in idx for m, _ in axes)
    out.loc[out.index[idx], "pareto"] = [pos not in dominated_by for pos in range(len(idx))]
    out.loc[out.index[idx], "dominated_by"] = pd.Series([dominated_by.get(pos) for pos in range(len(idx))],
                                                        index=out.index[idx], dtype=object)
    out.loc[out.index[idx], "decided"] = "statistics" if decided else "undecided: fewer than 2 trials"


def pareto_within_modes(gm: pd.DataFrame, samples: dict, modes: dict[str, str], memory: str, *,
                        alpha: float, noise: float, correction: str) -> pd.DataFrame:
    """Every configuration with its mode, throughput/latency/memory geometric means, and whether
    it is on its mode's Pareto set (module docstring). attrs["axes"]: the axes, in order."""
    wide = gm.pivot_table(index=["group_hash", "config"], columns="metric", values="gmean", sort=False)
    out = wide.reset_index()
    out.insert(2, "mode", out["group_hash"].astype(str).map(modes).fillna("train"))
    out["pareto"], out["complete"], out["dominated_by"], out["decided"] = False, False, None, None
    out = out.astype({"dominated_by": object, "decided": object})
    axes_all: list[str] = []
    for mode in dict.fromkeys(out["mode"]):
        rows = np.flatnonzero((out["mode"] == mode).to_numpy())
        axes = _axes(wide.iloc[rows], memory)
        axes_all += [m for m, _ in axes if m not in axes_all]
        _mode_front(out, rows, axes, samples, alpha=alpha, noise=noise, correction=correction)
    keep = ["group_hash", "config", "mode", *axes_all, "pareto", "complete", "dominated_by", "decided"]
    out = out[keep]
    out.attrs["axes"] = axes_all
    return out


def best_within_modes(gm: pd.DataFrame, samples: dict, meta: dict, names: list[str], modes: dict[str, str],
                      table_p: list[float | None], *, alpha: float, noise: float, correction: str) -> pd.DataFrame:
    """Per mode and metric: the best configuration, the runner-up, the pair's comparison, and its
    p adjusted over one family with the comparison table's p-values `table_p` (module docstring)."""
    rows, tests = [], []
    gm = gm.assign(mode=gm["group_hash"].astype(str).map(modes).fillna("train"))
    for mode, gmode in gm.groupby("mode", sort=False):
        for m in names:
            g = gmode[gmode["metric"] == m]
            better = meta.get(m, (None, None))[0]
            if g.empty or better is None:
                continue
            g = g.sort_values("gmean", ascending=(better == "lower"), kind="stable")
            top = g.iloc[0]
            rows.append({"mode": mode, "metric": m, "better": better, "unit": meta.get(m, (None, None))[1],
                         "best": top["config"], "value": top["gmean"], "runner_up": None, "runner_up_value": None,
                         "margin": None, "ci_low": None, "ci_high": None, "p": None, "p_adj": None,
                         "correction": correction, "significant": None, "verdict": "only configuration"})
            if len(g) > 1:
                second = g.iloc[1]
                rows[-1].update(runner_up=second["config"], runner_up_value=second["gmean"])
                pair = (samples[(second["group_hash"], m)], samples[(top["group_hash"], m)], better)
                tests.append((len(rows) - 1, pair))
    results = compare_batch([t for _, t in tests], alpha=alpha, noise=noise) if tests else []
    family = [None if p is None or pd.isna(p) else float(p) for p in table_p] + [r["p_welch"] for r in results]
    adjusted = adjust_pvalues(family, correction)[len(table_p):]
    for (i, _), r, q in zip(tests, results, adjusted):
        _best_verdict(rows[i], r, q, alpha, correction)
    return pd.DataFrame(rows)


def _best_verdict(row: dict[str, Any], r: dict[str, Any], q: float | None, alpha: float, correction: str) -> None:
    verdict = r["verdict"]
    if r["verdict_code"] in DECISIVE and correction != "none" and (q is None or q >= alpha):
        verdict = f"inconclusive (significant alone but not after {correction} correction)"
    row.update(margin=r["ratio"], ci_low=r["ci_low"], ci_high=r["ci_high"], p=r["p_welch"], p_adj=q,
               verdict=verdict, significant=None if q is None else bool(q < alpha))
