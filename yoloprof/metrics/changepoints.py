"""Change points in a performance series: E-Divisive means with a permutation test.

The series is one value per *process* (a stored capture's row mean; docs/history.md), ordered by
commit; several captures of one commit are several values of one group, and a change can only
fall between groups (commits).

Method (Matteson & James 2014, "E-Divisive", with the energy exponent 2, the "means" case that
Hunter/Otava use): for a segment, the divergence of a split into left/right is
``q(k) = n_l n_r / n * (mean_l - mean_r)^2`` (the between-segment sum of squares, which is what
the energy statistic becomes at exponent 2), maximised over the allowed splits. Its significance
is a permutation test of that *maximum*: the values of the segment are shuffled, the maximum
recomputed, and p = (1 + #{shuffles at least as large}) / (1 + shuffles). Because the test is of
the maximum, it accounts for the split having been chosen as the best one; a t-test of the
chosen split (Otava's shortcut) does not, which is why Otava needs p < 0.001. At exponent 2,
cumulative sums give every split of a shuffle in O(n), so hundreds of shuffles cost what one
exponent-1 statistic costs. A significant split is kept and both sides are searched again
(binary segmentation), so a series without any change is flagged with probability alpha.

Where exactly: with one capture per commit, a 2-sigma step cannot be placed at its exact commit
more than about 62% of the time by any method (docs/history.md, bench/bench_history.py), so each
change point also carries a *location set*: the shortest run of commits around the best split
holding `LOCATION_LEVEL` of the posterior mass of the split (flat prior, one change in the
segment, the pooled within-segment variance).

Shuffles are drawn from a generator seeded by the segment, so the same series always gives the
same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from yoloprof.config.stat_defaults import ALPHA as INTERVAL_ALPHA  # the analysis' level, for the effect intervals

ALPHA = 0.01  # per-series false-alarm rate of the search (the first test guards a flat series)
PERMUTATIONS = 199
MIN_SIZE = 2  # fewest values on each side of a split
LOCATION_LEVEL = 0.90
_FIRST, _BATCH = 20, 100


@dataclass
class Split:
    """One significant split: `cut` = number of values before it (index of the first value after),
    `p` the permutation p-value, `location` (first, last) the cuts of its location set."""

    cut: int
    p: float
    location: tuple[int, int]


def _cuts(groups: np.ndarray, lo: int, hi: int, min_size: int) -> np.ndarray:
    """Allowed cuts inside [lo, hi): between groups, at least min_size values on each side."""
    idx = np.arange(lo + 1, hi)
    idx = idx[groups[idx] != groups[idx - 1]]
    return idx[(idx - lo >= min_size) & (hi - idx >= min_size)]


def _q(Y: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """q(k) for each row of Y (shuffles x values) at each cut (relative to the segment start)."""
    n = Y.shape[1]
    csum = np.cumsum(Y, axis=1)
    left = csum[:, cuts - 1]
    total = csum[:, -1:]
    nl, nr = cuts.astype(float), (n - cuts).astype(float)
    diff = left / nl - (total - left) / nr
    return diff * diff * (nl * nr / n)


def _shuffles(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """`size` random orders of n positions (drawn from the positions, not the values, so that every
    series of one length sees the same orders: see `screen`)."""
    return rng.permuted(np.broadcast_to(np.arange(n), (size, n)), axis=1)


def _permutation_p(y: np.ndarray, cuts: np.ndarray, observed: float, alpha: float, permutations: int,
                   rng: np.random.Generator) -> float:
    """(1 + exceedances) / (1 + permutations); stops early once p can no longer reach alpha."""
    limit = alpha * (permutations + 1) - 1
    exceed, done = 0, 0
    tol = observed * (1 - 1e-9)
    while done < permutations:  # a small first batch: a flat segment is usually settled there
        size = min(_FIRST if done == 0 else _BATCH, permutations - done)
        Y = y[_shuffles(rng, size, y.size)]
        exceed += int((_q(Y, cuts).max(axis=1) >= tol).sum())
        done += size
        if exceed > limit:  # not significant whatever the rest give: the estimate so far
            return (1 + exceed) / (1 + done)
    return (1 + exceed) / (permutations + 1)


def _location(q: np.ndarray, cuts: np.ndarray, n: int, ss_total: float, level: float) -> tuple[int, int]:
    """The shortest run of cuts around the best one with `level` of the split's posterior mass:
    log p(k) = q(k) / (2 s^2) - log(n_l n_r / n) / 2 (means integrated out under flat priors),
    with s^2 the pooled within variance at the best split."""
    best = int(np.argmax(q))
    s2 = max((ss_total - q[best]) / max(n - 2, 1), 1e-300)
    nl = cuts.astype(float)
    logp = q / (2 * s2) - 0.5 * np.log(nl * (n - nl) / n)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    a = b = best
    mass = w[best]
    while mass < level and (a > 0 or b < len(w) - 1):
        left = w[a - 1] if a > 0 else -1.0
        right = w[b + 1] if b < len(w) - 1 else -1.0
        if left >= right:
            a -= 1
            mass += left
        else:
            b += 1
            mass += right
    return int(cuts[a]), int(cuts[b])


def screen(series: Sequence[tuple[np.ndarray, np.ndarray]], *, alpha: float = ALPHA,
           permutations: int = PERMUTATIONS, min_size: int = MIN_SIZE, seed: int = 0) -> list[bool]:
    """For many series at once, which may hold a change: False where `find_splits` (same alpha,
    shuffles and seed) would stop at its first test after the first batch of shuffles, which is
    decided here for all series of one length and grouping together (the shuffles depend only on
    the segment, so the answer is the same as series by series). True = search it."""
    out = [True] * len(series)
    buckets: dict[tuple[int, bytes], list[int]] = {}
    for i, (y, g) in enumerate(series):
        buckets.setdefault((len(y), np.flatnonzero(np.diff(g)).tobytes()), []).append(i)
    limit = alpha * (permutations + 1) - 1
    for (n, _), members in buckets.items():
        cuts = _cuts(np.asarray(series[members[0]][1]), 0, n, min_size)
        if cuts.size == 0:
            for i in members:
                out[i] = False
            continue
        Y = np.stack([series[i][0] for i in members]).astype(float)
        Y -= Y.mean(axis=1, keepdims=True)
        tol = _q(Y, cuts).max(axis=1) * (1 - 1e-9)
        live = (Y * Y).sum(axis=1) > 0
        exceed = np.zeros(len(members), int)
        rng = np.random.default_rng([seed, 0, n])  # the stream find_splits draws for [0, n)
        done = 0
        for size in (_FIRST, _BATCH):  # the first two batches, as _permutation_p draws them
            size = min(size, permutations - done)
            if size <= 0 or not live.any():
                break
            idx = _shuffles(rng, size, n)
            rows = np.flatnonzero(live)
            shuffled = _q(Y[rows][:, idx].reshape(-1, n), cuts).max(axis=1).reshape(len(rows), -1)
            exceed[rows] += (shuffled >= tol[rows, None]).sum(axis=1)
            done += size
            live &= exceed <= limit
        for i, keep in zip(members, live):
            out[i] = bool(keep)
    return out


def find_splits(values: ArrayLike, groups: ArrayLike | None = None, *, alpha: float = ALPHA,
                permutations: int = PERMUTATIONS, min_size: int = MIN_SIZE, seed: int = 0,
                level: float = LOCATION_LEVEL) -> list[Split]:
    """Significant splits of `values` (already on the scale to test: log of the metric), in order.
    `groups` (non-decreasing, e.g. the commit's position) restricts splits to group boundaries."""
    y = np.asarray(values, dtype=float)
    g = np.arange(y.size) if groups is None else np.asarray(groups)
    assert g.shape == y.shape and (np.diff(g) >= 0).all(), "groups must be non-decreasing, one per value"
    found: list[Split] = []
    stack = [(0, y.size)]
    while stack:
        lo, hi = stack.pop()
        cuts = _cuts(g, lo, hi, min_size)
        if cuts.size == 0:
            continue
        seg = y[lo:hi] - y[lo:hi].mean()
        ss_total = float(seg @ seg)
        if ss_total <= 0:
            continue
        q = _q(seg[None, :], cuts - lo)[0]
        best = int(np.argmax(q))
        rng = np.random.default_rng([seed, lo, hi])
        p = _permutation_p(seg, cuts - lo, float(q[best]), alpha, permutations, rng)
        if p > alpha:
            continue
        a, b = _location(q, cuts - lo, hi - lo, ss_total, level)
        found.append(Split(cut=int(cuts[best]), p=p, location=(a + lo, b + lo)))
        stack += [(lo, int(cuts[best])), (int(cuts[best]), hi)]
    return sorted(found, key=lambda s: s.cut)


class StepEffect(TypedDict):
    """One step's size (step_effects): the ratio always, its interval and p where computable."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_welch: float | None


def step_effects(pairs: Sequence[tuple[ArrayLike, ArrayLike]], alpha: float = INTERVAL_ALPHA) -> list[StepEffect]:
    """The size of each step between two segments of log values (before, after): the ratio
    after/before of geometric means, its (1 - alpha) interval from Welch's t, and Welch's p, for
    all steps at once. The t distribution comes from `scipy.special` (stdtr, stdtrit: what
    scipy.stats.t uses), whose import costs a fraction of scipy.stats' on a command's start-up.
    No interval where a side has fewer than 2 values or both are constant."""
    if not pairs:
        return []
    from scipy import special

    stats = np.array([[np.mean(b), np.var(b, ddof=1) if len(b) > 1 else np.nan, len(b),
                       np.mean(a), np.var(a, ddof=1) if len(a) > 1 else np.nan, len(a)]
                      for b, a in ((np.asarray(b, float), np.asarray(a, float)) for b, a in pairs)])
    mb, vb, nb, ma, va, na = stats.T
    diff = ma - mb
    eb, ea = vb / nb, va / na
    se = np.sqrt(eb + ea)
    ok = np.isfinite(se) & (se > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = (eb + ea) ** 2 / (eb ** 2 / (nb - 1) + ea ** 2 / (na - 1))  # Welch-Satterthwaite
        p = 2 * special.stdtr(df, -np.abs(diff / se))
        half = special.stdtrit(df, 1 - alpha / 2) * se
    return [{"ratio": math.exp(d), "ci_low": math.exp(d - h) if k else None,
             "ci_high": math.exp(d + h) if k else None, "p_welch": float(q) if k else None}
            for d, h, q, k in zip(diff, half, p, ok)]


# ---- what a search that found nothing could have found (docs/history.md "When nothing is found")
NULL_DRAWS = 4000        # Gaussian series drawn for the scan's critical value (seeded: deterministic)
MAX_PER_COMMIT = 100     # beyond this many captures per commit, the asked size is "out of reach"


def min_attainable_p(groups: ArrayLike, min_size: int = MIN_SIZE) -> float:
    """The smallest p the exact permutation test of the maximum can give for this layout, reached
    when the values split into two perfectly separated clusters at an allowed cut c: the orders
    in which some allowed cut separates the same clusters are those at cut c and, when n - c is
    also allowed, the mirrored ones at n - c, so p_min = min over c of (1 + [n - c allowed]) / C(n, c).
    1.0 when no cut is allowed."""
    g = np.asarray(groups)
    n = g.size
    cuts = set(_cuts(g, 0, n, min_size).tolist())
    if not cuts:
        return 1.0
    return min((1 + (n - c in cuts)) / math.comb(n, c) for c in cuts)


@lru_cache(maxsize=32)
def min_captures(alpha: float = ALPHA, min_size: int = MIN_SIZE) -> int:
    """The fewest captures (one per commit) for which the search can reach p <= alpha at all."""
    n = 2 * min_size
    while min_attainable_p(np.arange(n), min_size) > alpha:
        n += 1
    return n


@lru_cache(maxsize=256)
def _scan_critical(n: int, cuts: tuple[int, ...], alpha: float) -> float:
    """The (1 - alpha) quantile of max over the cuts of the pooled two-sample |t| of iid Gaussian
    series of length n: the search's first test, on the t scale (q(k) / SS_total = R_k is the
    statistic the permutation test ranks, t_k^2 = (n - 2) R_k / (1 - R_k))."""
    rng = np.random.default_rng([n, len(cuts), 17])
    Y = rng.standard_normal((NULL_DRAWS, n))
    Y -= Y.mean(axis=1, keepdims=True)
    r = _q(Y, np.asarray(cuts)).max(axis=1) / (Y * Y).sum(axis=1)
    return float(np.sqrt((n - 2) * np.quantile(r, 1 - alpha) / (1 - np.quantile(r, 1 - alpha))))


@lru_cache(maxsize=256)
def _step_factors(n: int, cuts: tuple[int, ...], commits: int, alpha: float, power: float) -> tuple[float, np.ndarray]:
    """(k0, k[r-1] for r = 1..MAX_PER_COMMIT): the smallest step (difference of mean logs) the
    search finds with `power` is k * sd, k0 for this layout, k[r-1] for `commits` commits of r
    captures each. At the allowed cut c nearest the middle the pooled t is noncentral with
    nc = step sqrt(c (n - c) / n) / sd, against the scan's critical |t| (the maximum over the other
    cuts only adds power: conservative); the same critical value serves every r (more captures
    per commit only lower it: conservative again). Depends on the layout only, so it is cached."""
    from yoloprof.metrics.decide import nc_for_power

    tcrit = _scan_critical(n, cuts, alpha)
    arr = np.asarray(cuts)
    c = int(arr[np.argmin(np.abs(arr - n / 2))])
    r = np.arange(1, MAX_PER_COMMIT + 1)
    m, cr = commits * r, r * (commits // 2)
    nc = nc_for_power(np.full(r.size + 1, tcrit), np.append(n - 2, m - 2), power)
    return float(nc[0] / math.sqrt(c * (n - c) / n)), nc[1:] / np.sqrt(cr * (m - cr) / m)


@lru_cache(maxsize=1024)
def _layout(n: int, edges: bytes, min_size: int) -> tuple[int, tuple[int, ...], float]:
    """(commits, allowed cuts, smallest attainable p) of a series of n values whose commit changes
    after the positions in `edges` (np.flatnonzero(np.diff(groups)) as bytes): many series share one."""
    changes = np.frombuffer(edges, dtype=np.intp)
    g = np.zeros(n, int)
    g[changes + 1] = 1
    g = np.cumsum(g)
    return int(changes.size + 1), tuple(_cuts(g, 0, n, min_size).tolist()), min_attainable_p(g, min_size)


class Detectable(TypedDict):
    """What a search that found no change could have found (`detectable`)."""

    captures: int
    too_few: bool               # the permutation test cannot reach alpha with this layout
    need_captures: int | None   # fewest captures (one per commit) that can reach it
    step_pct: float | None      # smallest step in the middle of the series found with 80% power
    size: float                 # the asked size (fraction)
    per_commit: int | None      # captures per commit that would find a step of `size` (None: > MAX_PER_COMMIT)
    words: str


def detectable(groups: ArrayLike, sd: float | None, size: float, *, alpha: float = ALPHA,
               power: float = 0.8, min_size: int = MIN_SIZE) -> Detectable:
    """The smallest step this series' search could have found (alpha, `power`), for a step at the
    allowed cut nearest the middle (steps near the ends need more), from the series' noise `sd`
    (SD of the log values); and the captures per commit with which a step of `size` would be found
    on as many commits (the critical value of this series' own scan, which more captures per
    commit only lower: conservative). Or, below the length at which the permutation test can reach
    alpha at all, "too few captures"."""
    g = np.asarray(groups)
    n = g.size
    commits, cuts, p_min = _layout(n, np.flatnonzero(np.diff(g)).tobytes(), min_size)
    need = min_captures(alpha, min_size)
    out: Detectable = {"captures": n, "too_few": False, "need_captures": need, "step_pct": None,
                       "size": size, "per_commit": None, "words": ""}
    if not cuts:
        out["too_few"] = True
        out["words"] = (f"too few commits for the change-point test: {n} capture(s) of {commits} commit(s), "
                        "and a change can only fall between commits")
        return out
    if p_min > alpha:
        out["too_few"] = True
        out["words"] = (f"too few captures for the change-point test: {n}, need at least {need} "
                        f"(below that the permutation test cannot reach p <= {alpha:g})")
        return out
    if sd is None or not sd > 0:
        out["words"] = "no change point; smallest detectable step n/a (no spread between captures)"
        return out
    k0, k = _step_factors(n, cuts, commits, alpha, power)
    out["step_pct"] = 100 * math.expm1(k0 * sd)
    per = n / max(commits, 1)
    reach = np.flatnonzero(k * sd <= math.log1p(size))
    out["per_commit"] = int(reach[0]) + 1 if reach.size else None
    seen = (f"no change point; could detect a step >= {out['step_pct']:.1f}% in the middle of the series "
            f"(alpha {alpha:g}, {power:.0%} power) with {per:.3g} capture(s) per commit on {commits} commits")
    r = out["per_commit"]
    out["words"] = seen + (f"; more than {MAX_PER_COMMIT} captures per commit would be needed for {size:.0%}" if r is None
                           else f", enough for {size:.0%}" if r <= per
                           else f"; about {r} captures per commit would detect {size:.0%}")
    return out
