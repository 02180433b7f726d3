"""The error rate and power of `trial=auto` (metrics/sequential.py) under the sweep's own stopping.

Simulated sweeps of one baseline and K candidate configurations (K = 2, 5, 20), one value per
process (per job) drawn lognormal with a realistic run-to-run CV (3%, the spread of CPU capture
means measured in issue 23). Each sweep runs as the yoloprof sweeper runs it (sweep/adaptive.py):
min_trials of every configuration, then one trial more per round for every configuration in an
open comparison (the baseline while any is open), each comparison looked at with
`sequential.decide` and stopped when improved, regressed or equivalent, up to max_trials.

Printed, measured in this run:
- null (identical work): the family-wise share of sweeps with any improved/regressed verdict,
  against alpha (it must be at or below);
- power: candidates with real slowdowns (half 8%, half 4%), the adaptive sweep's share of them
  called regressed and its mean cost in jobs, against the fixed design at the same cost (the same
  number of jobs spread evenly over the configurations, compared by the project's fixed analysis:
  Welch on the logs, Holm across the family, the same noise band).

    python bench/bench_adaptive.py [--sims N]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yoloprof.config.stat_defaults import ALPHA, NOISE  # noqa: E402
from yoloprof.metrics import sequential as seq  # noqa: E402
from yoloprof.metrics.stats import adjust_pvalues, compare_batch  # noqa: E402

CV = 0.03
MIN_TRIALS, MAX_TRIALS = 3, 16


def adaptive_sweep(rng: np.random.Generator, effects: list[float], max_trials: int = 12,
                   noise: float = NOISE) -> tuple[list[str], int]:
    """(each candidate's final code, jobs run) for one simulated adaptive sweep."""
    k, plan = len(effects), seq.look_plan(MIN_TRIALS, max_trials)
    draws = [rng.normal(0.0, CV, max_trials)] + [rng.normal(math.log(1 + e), CV, max_trials) for e in effects]
    trials = [plan[0]] * (k + 1)
    codes = [seq.UNDECIDED] * k
    for look in range(1, len(plan) + 1):
        todo = [c for c in range(k) if codes[c] == seq.UNDECIDED]
        rejected = sum(codes[c] in seq.REJECTING for c in range(k))
        found = seq.decide_family([(draws[0], draws[c + 1], look) for c in todo], plan, better="lower",
                                  alpha=ALPHA, noise=noise, family=k, rejected=rejected)
        for c, d in zip(todo, found):
            codes[c] = d.code
        open_ = [c for c in range(k) if codes[c] == seq.UNDECIDED]
        if not open_ or look == len(plan):
            break
        for c in [0] + [c + 1 for c in open_]:
            trials[c] = plan[look]
    return codes, sum(trials)


def fixed_sweep(rng: np.random.Generator, effects: list[float], n: int) -> list[str]:
    """Each candidate's code in the fixed design with n processes per configuration."""
    base = np.exp(rng.normal(0.0, CV, n))
    cands = [np.exp(rng.normal(math.log(1 + e), CV, n)) for e in effects]
    results = compare_batch([(base, c, "lower") for c in cands], alpha=ALPHA, noise=NOISE)
    p_adj = adjust_pvalues([r["p_welch"] for r in results], "holm")
    return [r["verdict_code"] if p is not None and p < ALPHA else "inconclusive" for r, p in zip(results, p_adj)]


def null_rate(k: int, sims: int, seed: int, noise: float) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    wrong, jobs = 0, 0
    for _ in range(sims):
        codes, cost = adaptive_sweep(rng, [0.0] * k, MAX_TRIALS, noise)
        wrong += any(c in ("improved", "regressed") for c in codes)
        jobs += cost
    return wrong / sims, jobs / sims


def power(k: int, sims: int, seed: int) -> dict[str, float]:
    effects = [0.08 if i % 2 == 0 else 0.04 for i in range(k)]
    rng = np.random.default_rng(seed)
    hits, cost = np.zeros(k), 0
    for _ in range(sims):
        codes, jobs = adaptive_sweep(rng, effects, MAX_TRIALS)
        hits += [c == "regressed" for c in codes]
        cost += jobs
    mean_cost = cost / sims
    n_fixed = max(2, int(mean_cost // (k + 1)))  # the same jobs (rounded down: never more)
    rng = np.random.default_rng(seed + 1)
    fixed = np.zeros(k)
    for _ in range(sims):
        fixed += [c == "regressed" for c in fixed_sweep(rng, effects, n_fixed)]
    big, small = slice(0, k, 2), slice(1, k, 2)
    return {"cost": mean_cost, "n_fixed": n_fixed, "fixed_cost": n_fixed * (k + 1),
            "adaptive_8": float(hits[big].mean() / sims), "adaptive_4": float(hits[small].mean() / sims),
            "fixed_8": float(fixed[big].mean() / sims), "fixed_4": float(fixed[small].mean() / sims),
            "adaptive_all": float(hits.mean() / sims), "fixed_all": float(fixed.mean() / sims)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    print(f"trial=auto, Lan-DeMets O'Brien-Fleming over looks at {MIN_TRIALS}..{MAX_TRIALS} processes per side, "
          f"alpha {ALPHA}, noise band {NOISE}, process CV {CV}, {args.sims} simulated sweeps each")
    print("null (identical work): family-wise rate of any improved/regressed verdict; noise band 0 makes")
    print("every significant difference such a verdict (the rule's own type I error), 0.02 is the default")
    se = math.sqrt(ALPHA * (1 - ALPHA) / args.sims)
    for noise in (0.0, NOISE):
        for k in (2, 5, 20):
            rate, jobs = null_rate(k, args.sims, seed=k, noise=noise)
            print(f"  noise {noise}, K={k:2d} comparisons: {rate:.4f} (alpha {ALPHA}, 1 SE {se:.4f}), "
                  f"mean jobs {jobs:.1f} of at most {MAX_TRIALS * (k + 1)}")
    print("power: half the candidates 8% slower, half 4% slower; share called regressed")
    for k in (2, 5, 20):
        p = power(k, max(200, args.sims // 4), seed=100 + k)
        print(f"  K={k:2d}: adaptive {p['adaptive_all']:.3f} (8%: {p['adaptive_8']:.3f}, 4%: {p['adaptive_4']:.3f}) "
              f"at {p['cost']:.1f} jobs; fixed {p['fixed_all']:.3f} (8%: {p['fixed_8']:.3f}, 4%: {p['fixed_4']:.3f}) "
              f"at {p['fixed_cost']} jobs ({p['n_fixed']} per configuration); "
              f"ratio {p['adaptive_all'] / max(p['fixed_all'], 1e-9):.2f}")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
