"""The stopping rule of adaptive sweeps (`trial=auto`): group-sequential tests with alpha spending.

An adaptive sweep looks at each comparison after every round of jobs and stops it once it is
decided. Testing at a fixed level at every look would inflate the error rate: with 20 looks at
alpha 0.05 on identical work, about a quarter of comparisons would be called different at some
look. The rule here keeps the family-wise error rate at or below alpha however early a comparison
stops (docs/sweeps.md "The stopping rule", proven by bench/bench_adaptive.py):

- **Looks at planned sizes.** Look k of a comparison uses the first `plan[k-1]` processes of each
  side (one process = one sweep job = one replicate; the unit of replication is the process, so
  the values are per-process means). The plan is fixed before the first job
  (`look_plan(min_trials, max_trials)`), so the information at each look is known in advance.
- **Lan-DeMets O'Brien-Fleming alpha spending** over those looks: by information fraction
  t = n/n_max the rule has spent alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)). Early looks spend
  almost nothing (a comparison stops early only on overwhelming evidence), the last look tests at
  nearly the fixed design's level, so power at the full size is close to the fixed design's.
  The two-sided boundaries c_1..c_K follow from the exact joint law of the look statistics
  (independent increments), computed by numerical integration (`boundaries`).
- **A family of comparisons** splits alpha as Holm does, step-down (`decide_family`): each open
  comparison is tested at alpha / (m - r), r the comparisons already called improved or regressed;
  a rejection passes its share on to the others, at the same look and later ones. This is the
  graphical (Bonferroni-based) procedure for group-sequential designs of Maurer & Bretz (2013,
  Stat Biopharm Res 5:311), which holds the family-wise rate under any dependence between the
  comparisons (they share their baseline configuration).
- **Repeated confidence intervals** (Jennison & Turnbull): at look k the interval on the ratio is
  exp(d +- t_{df}(1 - p_k/2) se), with p_k = 2(1 - Phi(c_k)) the look's nominal level, d the
  difference of mean logs and Welch's se and df. The verdict is `metrics.stats.classify` of that
  oriented interval, so words and noise band are the fixed analysis' own: improved / regressed
  (beyond the noise band) and equivalent (inside it) stop a comparison.

Pure functions on numbers: no files, no pandas, nothing printed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from yoloprof.config.stat_defaults import ALPHA, NOISE

# The verdict codes that end a comparison; others keep it running while looks remain.
STOPPING = ("improved", "regressed", "equivalent")
UNDECIDED = "undecided"     # more looks remain
MIN_LOOK_TRIALS = 2         # a look needs a variance on each side
_GRID = 401                 # integration points per look (boundaries within 1e-4 of 4001 points)
DESIGN_LOOKS = 200          # most looks whose boundaries max_trials_for computes
DESIGN_GRID = 101           # integration points per look for max_trials_for (levels within 1% of _GRID's)


def spent(t: float, alpha: float = ALPHA) -> float:
    """Alpha spent by information fraction t (0 < t <= 1): Lan-DeMets O'Brien-Fleming, two-sided."""
    from scipy.stats import norm

    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * norm.cdf(norm.isf(alpha / 2.0) / math.sqrt(min(t, 1.0))))


def _root(fn: Any, lo: float, hi: float, tol: float = 1e-9) -> float:
    """Bisection of a decreasing function (the crossing probability in c); scipy.optimize's import
    alone costs more than the whole recursion."""
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if fn(mid) > 0 else (lo, mid)
    return (lo + hi) / 2.0


def _pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float, points: int = _GRID) -> tuple[float, ...]:
    """Armitage-McPherson-Rowe recursion: the density of S_k = Z_k sqrt(t_k) on the continuation
    region, carried from look to look through the independent Gaussian increment."""
    from scipy.special import ndtr, ndtri

    out: list[float] = []
    xs = mass = None  # grid over the continuation region of S, and density x trapezoid weight there
    prev_t, prev_cum = 0.0, 0.0
    for t in fractions:
        cum = spent(t, alpha)
        inc = max(cum - prev_cum, 1e-300)
        if xs is None or mass is None:  # the first look (both are set together below)
            c = float(-ndtri(inc / 2.0))
            new_xs = np.linspace(-c * math.sqrt(t), c * math.sqrt(t), points)
            f = _pdf(new_xs / math.sqrt(t)) / math.sqrt(t)
        else:
            sd, grid_x, grid_mass = math.sqrt(t - prev_t), xs, mass

            def tail(c: float) -> float:  # P(cross at this look | not before), both sides (symmetric)
                return float(2.0 * np.dot(grid_mass, ndtr((grid_x - c * math.sqrt(t)) / sd))) - inc

            c = _root(tail, 0.0, 40.0) if tail(0.0) > 0 else 0.0
            new_xs = np.linspace(-c * math.sqrt(t), c * math.sqrt(t), points)
            f = _pdf((new_xs[:, None] - xs[None, :]) / sd) @ grid_mass / sd
        w = np.full(points, new_xs[1] - new_xs[0])
        w[0] = w[-1] = w[0] / 2.0  # trapezoid
        xs, mass = new_xs, w * f
        out.append(c)
        prev_t, prev_cum = t, cum
    return tuple(out)


def boundaries(fractions: Sequence[float], alpha: float = ALPHA) -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_K for looks at information fractions t_1 < ... < t_K <= 1:
    under no difference, P(|Z_j| < c_j for j < k, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1})."""
    fr = tuple(float(t) for t in fractions)
    if not fr or any(not 0 < t <= 1 for t in fr) or any(b <= a for a, b in zip(fr, fr[1:])):
        raise ValueError(f"information fractions must increase within (0, 1]: {fr}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1): {alpha}")
    return _boundaries(fr, float(alpha))


def look_plan(min_trials: int, max_trials: int, step: int = 1) -> tuple[int, ...]:
    """Processes per side at each look: min_trials, min_trials + step, ..., max_trials."""
    if min_trials < MIN_LOOK_TRIALS or max_trials < min_trials or step < 1:
        raise ValueError(f"need {MIN_LOOK_TRIALS} <= min_trials <= max_trials and step >= 1 "
                         f"(got {min_trials}, {max_trials}, {step})")
    plan = list(range(min_trials, max_trials + 1, step))
    return tuple(plan if plan[-1] == max_trials else plan + [max_trials])


def look_level(plan: Sequence[int], look: int, alpha: float = ALPHA, family: int = 1, points: int = _GRID) -> float:
    """The two-sided nominal level of look `look` (1-based) of `plan` when `family` comparisons
    share alpha (Holm's first step, alpha / family): 2 (1 - Phi(c_look)). `points` per look of the
    integration (a design's sample size needs less than a decision: DESIGN_GRID)."""
    from scipy.stats import norm

    fractions = tuple(k / plan[-1] for k in plan)
    return float(2.0 * norm.sf(_boundaries(fractions, alpha / max(1, family), points)[look - 1]))


def max_trials_for(sd: float, size: float, min_trials: int, *, alpha: float = ALPHA, family: int = 1,
                   power: float | None = None) -> int | None:
    """The processes per side (`adaptive.max_trials`) at which this design detects a change of
    `size` with `power` at its last look, for process means of log-SD `sd`: the smallest n_max
    whose last look's nominal level (O'Brien-Fleming spending over look_plan(min_trials, n_max),
    alpha / family) gives the fixed-design t test `power` (the sequential design rejects at least
    whenever its last look alone would). Beyond DESIGN_LOOKS looks the boundaries are not
    computed and the fixed design's n at alpha / family is returned (OBF's last level is within a
    few % of it there). `power` defaults to decide.POWER. None when out of reach (decide.MAX_UNITS)."""
    from yoloprof.metrics.decide import POWER, units_to_detect

    power = POWER if power is None else power
    level = alpha / max(1, family)
    n_fixed = float(units_to_detect(sd, size, level, power)[0])
    if not math.isfinite(n_fixed):
        return None
    n = max(int(n_fixed), min_trials)
    for _ in range(20):
        if n - min_trials + 1 > DESIGN_LOOKS:
            return n
        plan = look_plan(min_trials, n)
        need = max(int(units_to_detect(sd, size, look_level(plan, len(plan), alpha, family, DESIGN_GRID),
                                            power)[0]), min_trials)
        if need <= n:
            return n
        n = need
    return n


@dataclass(frozen=True)
class Decision:
    """One look at one comparison. `ratio`, `low`, `high` are candidate / baseline on the metric's
    own scale (geometric means), the look's repeated confidence interval at its nominal two-sided
    level p_k (`level`); the call of a difference uses the family's smaller level."""

    code: str          # improved | regressed | equivalent | undecided, or at the last look the
    #                    fixed analysis' within_noise | inconclusive
    ratio: float
    low: float
    high: float
    level: float
    look: int
    n_base: int
    n_cand: int

    @property
    def decided(self) -> bool:
        return self.code in STOPPING


def decide(base_logs: Sequence[float], cand_logs: Sequence[float], look: int, plan: Sequence[int], *,
           better: str | None = "lower", alpha: float = ALPHA, noise: float = NOISE,
           family: int = 1) -> Decision:
    """The verdict at look `look` (1-based) of `plan` (look_plan), from each side's per-process
    log values in trial order: the first plan[look-1] of each side are used (more may exist, e.g.
    a baseline still running for another comparison). `family` comparisons share alpha."""
    from scipy.stats import t as student

    from yoloprof.metrics.stats import classify

    if not 1 <= look <= len(plan):
        raise ValueError(f"look {look} is not in 1..{len(plan)}")
    n = int(plan[look - 1])
    b = np.asarray(list(base_logs)[:n], float)
    a = np.asarray(list(cand_logs)[:n], float)
    if len(b) < n or len(a) < n or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError(f"look {look} needs {n} finite values per side (got {len(b)} and {len(a)})")
    # a look's boundary depends only on the looks up to it: the whole plan's are computed (and
    # cached) once, and every look of the sweep reads its own
    level = look_level(plan, look, alpha)
    family_level = look_level(plan, look, alpha, family)
    vb, va = b.var(ddof=1) / n, a.var(ddof=1) / n
    d, se = float(a.mean() - b.mean()), math.sqrt(vb + va)
    df = (vb + va) ** 2 / (vb ** 2 / (n - 1) + va ** 2 / (n - 1)) if se > 0 else 1.0

    def half(p: float) -> float:  # an early look's level can be 1e-20: the interval is (0, inf) then
        return min(float(student.isf(p / 2.0, df)) * se, 700.0) if se > 0 else 0.0

    ratio, low, high = math.exp(d), math.exp(d - half(level)), math.exp(d + half(level))
    # different from 1 at the family's level (the error-controlled call), as the fixed analysis
    # calls a difference on its multiplicity-adjusted p; the noise band is read off the look's own
    # interval, as the fixed analysis reads it off its unadjusted one
    significant = abs(d) > half(family_level) if se > 0 else d != 0
    o_low, o_high = (1 / high, 1 / low) if better == "lower" else (low, high)  # > 1 is better
    code = classify(o_low, o_high, 0.0 if significant else 1.0, alpha=0.5, noise=noise)
    if code in ("improved", "regressed", "within_noise") and not significant:
        code = "inconclusive"
    if code not in STOPPING and look < len(plan):
        code = UNDECIDED
    return Decision(code, ratio, low, high, level, look, n, n)


REJECTING = ("improved", "regressed")


def decide_family(sides: Sequence[tuple[Sequence[float], Sequence[float], int]], plan: Sequence[int], *,
                  better: str | None = "lower", alpha: float = ALPHA, noise: float = NOISE,
                  family: int | None = None, rejected: int = 0) -> list[Decision]:
    """`decide` for a family of comparisons, each (base_logs, cand_logs, look), step-down: all at
    alpha / (m - rejected) first, then again with each new improved/regressed passing its share
    on, until no new one. `family` m defaults to len(sides) + rejected (comparisons decided
    improved/regressed earlier and no longer looked at)."""
    m = family if family is not None else len(sides) + rejected
    out: list[Decision] = []
    while True:
        share = max(1, m - rejected - sum(d.code in REJECTING for d in out))
        new = [decide(b, a, look, plan, better=better, alpha=alpha, noise=noise, family=share)
               for b, a, look in sides]
        if out and sum(d.code in REJECTING for d in new) == sum(d.code in REJECTING for d in out):
            return new
        out = new
        if not any(d.code in REJECTING for d in out):
            return out
