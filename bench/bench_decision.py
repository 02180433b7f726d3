"""What does a decision cost, and is it right? Simulated A/B comparisons with realistic
process-level noise, decided by yoloprof's statistics, against an oracle that knows the variances.

Model (log scale): trial j of process i of a side = mu + b_i + w_ij, b_i ~ N(0, between^2) (the
process's own allocator, layout, frequency, load: run-to-run noise), w_ij ~ N(0, within^2);
`--trials` trials per process. Each process costs `--startup-s` plus `--trial-s` per trial.

Printed, each figure measured in this run:
1. False-positive rate (improved or regressed, or p < alpha for the plain tests) of IDENTICAL work:
   the old pooled test (every trial an independent sample: one process per side, Welch on its
   trials), the nested test (Welch on process means) at 3 and 5 processes per side, the
   sequential A/B rule of `compare --run-a/--run-b` (ABBA, alpha split over the looks, stop on improved,
   regressed or equivalent), and one process per side judged by a noise floor measured from
   `--calibrate` processes.
2. Cost of deciding a real slowdown (`--effect`, default 8%): processes and seconds the sequential
   rule used, the share called regressed (power) within `--max-runs`, against the oracle's fixed
   design (the fewest processes per side that reach 80% power knowing between and within).

    python bench/bench_decision.py [--reps 4000] [--between 0.04] [--within 0.015] [--trials 5]
        [--effect 0.08] [--max-runs 20] [--alpha 0.05] [--noise 0.02] [--calibrate 5] [--real 12]

3. With `--real N`: N identical tiny real captures in fresh processes compared in all pairs (the
   issue's experiment): the old trial-level test, one process per side without and with a floor
   learned from the other captures, and 3 vs 3 processes.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yoloprof.metrics.stats import compare_batch  # noqa: E402
from yoloprof.sweep.ab import DECIDED, look_alphas, look_schedule  # noqa: E402


def processes(rng: np.random.Generator, reps: int, k: int, m: int, between: float, within: float,
              shift: float = 0.0) -> np.ndarray:
    """reps x k x m trial values (ms around 50)."""
    b = rng.normal(0, between, (reps, k, 1))
    w = rng.normal(0, within, (reps, k, m))
    return 50.0 * np.exp(shift + b + w)


def gmeans(x: np.ndarray) -> np.ndarray:
    return np.exp(np.log(x).mean(axis=-1))


def rate(results: list[dict], codes=("improved", "regressed")) -> float:
    return float(np.mean([r["verdict_code"] in codes for r in results]))


def p_rate(results: list[dict], alpha: float) -> float:
    return float(np.mean([(r["p_welch"] or 1.0) < alpha for r in results]))


def fixed(rng, a: argparse.Namespace, k: int, shift: float) -> list[dict]:
    A = processes(rng, a.reps, k, a.trials, a.between, a.within)
    B = processes(rng, a.reps, k, a.trials, a.between, a.within, shift)
    return compare_batch(list(zip(gmeans(A), gmeans(B), ["lower"] * a.reps)), alpha=a.alpha, noise=a.noise)


def pooled(rng, a: argparse.Namespace, shift: float) -> list[dict]:
    A = processes(rng, a.reps, 1, a.trials, a.between, a.within).reshape(a.reps, -1)
    B = processes(rng, a.reps, 1, a.trials, a.between, a.within, shift).reshape(a.reps, -1)
    return compare_batch(list(zip(A, B, ["lower"] * a.reps)), alpha=a.alpha, noise=a.noise)


def sequential(rng, a: argparse.Namespace, shift: float) -> dict:
    """The A/B rule, vectorised over reps: at each scheduled look, the still-running reps are
    compared at its look's alpha (`look_alphas`); a rep stops at its first decided look or at the last one."""
    per_side = a.max_runs // 2
    sched = look_schedule(per_side)
    levels = look_alphas(sched, a.alpha)
    A = gmeans(processes(rng, a.reps, per_side, a.trials, a.between, a.within))
    B = gmeans(processes(rng, a.reps, per_side, a.trials, a.between, a.within, shift))
    final = [""] * a.reps
    used = np.full(a.reps, per_side)
    running = np.ones(a.reps, bool)
    for look, level in zip(sched, levels):
        idx = np.flatnonzero(running)
        res = compare_batch([(A[i, :look], B[i, :look], "lower") for i in idx], alpha=level, noise=a.noise)
        for i, r in zip(idx, res):
            final[i] = r["verdict_code"]
            if r["verdict_code"] in DECIDED or look == sched[-1]:
                running[i] = False
                used[i] = look
    return {"codes": final, "used": used, "schedule": sched, "levels": levels}


def with_floor(rng, a: argparse.Namespace, shift: float) -> float:
    """One process per side against a floor from `--calibrate` identical processes."""
    from yoloprof.metrics.nested import compare_nested
    from yoloprof.metrics.noise_floor import estimate_floor

    hits, reps = 0, min(a.reps, 1500)
    for _ in range(reps):
        cal = processes(rng, 1, a.calibrate, a.trials, a.between, a.within)[0]
        floor = estimate_floor(cal.tolist())
        A = processes(rng, 1, 1, a.trials, a.between, a.within)[0]
        B = processes(rng, 1, 1, a.trials, a.between, a.within, shift)[0]
        r = compare_nested(A.tolist(), B.tolist(), alpha=a.alpha, noise=a.noise, floor=floor)
        hits += r["verdict_code"] in ("improved", "regressed")
    return hits / reps


def unbalanced(rng, a: argparse.Namespace) -> float:
    """Identical work, 3 against 4 processes of 1-8 trials each (drawn at random): p < alpha."""
    from yoloprof.metrics.nested import compare_nested

    def side(k: int) -> list[list[float]]:
        return [list(50.0 * np.exp(rng.normal(0, a.between) + rng.normal(0, a.within, rng.integers(1, 9))))
                for _ in range(k)]
    reps = min(a.reps, 2000)
    return sum((compare_nested(side(3), side(4), alpha=a.alpha, noise=0.0)["p_welch"] or 1.0) < a.alpha
               for _ in range(reps)) / reps


def one_vs_many(rng, a: argparse.Namespace, k: int) -> float:
    """Identical work, 1 process against k, no stored floor (the k give the spread): p < alpha."""
    from yoloprof.metrics.nested import compare_nested

    reps = min(a.reps, 2000)
    hits = 0
    for _ in range(reps):
        many = processes(rng, 1, k, a.trials, a.between, a.within)[0].tolist()
        one = processes(rng, 1, 1, a.trials, a.between, a.within)[0].tolist()
        hits += (compare_nested(many, one, alpha=a.alpha, noise=0.0)["p_welch"] or 1.0) < a.alpha
    return hits / reps


def oracle_processes(a: argparse.Namespace) -> int:
    """Fewest processes per side for 80% power to call the effect regressed (CI beyond the band):
    a z-test knowing the variance of a process mean, between^2 + within^2 / trials."""
    sd = math.sqrt(a.between ** 2 + a.within ** 2 / a.trials)
    gap = math.log1p(a.effect) - math.log1p(a.noise)
    z = sps.norm.ppf(1 - a.alpha / 2) + sps.norm.ppf(0.8)
    return max(2, math.ceil(2 * (z * sd / gap) ** 2))


def real(a: argparse.Namespace) -> None:
    """`--real N`: N identical tiny inference captures, each in a fresh worker process, compared
    in all pairs: the old trial-level test, the nested rule without a floor (one process per side)
    and with a floor learned from the other N-2 captures, and disjoint triples 3 vs 3."""
    import itertools

    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.metrics.nested import compare_nested
    from yoloprof.metrics.noise_floor import estimate_floor
    from yoloprof.metrics.stats import compare_samples
    from yoloprof.sweep.ab import settings_runner

    s = CaptureSettings(mode="infer", device="cpu", imgsz=a.imgsz, warmup=3, runs=10, repeat=5, trace=False)
    run, t0 = settings_runner(s), time.perf_counter()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trials = [run(i, Path(tmp) / str(i))["metrics"]["step_ms"]["samples"] for i in range(a.real)]
    wall = time.perf_counter() - t0
    means = [float(gmeans(np.array(t))) for t in trials]
    within = np.mean([np.var(np.log(t), ddof=1) for t in trials]) / len(trials[0])
    print(f"\nreal: {a.real} captures (infer, cpu, imgsz {a.imgsz}, warmup 3, runs 10, repeat 5) in "
          f"fresh processes, {wall:.0f} s; capture means {min(means):.3f}-{max(means):.3f} ms; variance of "
          f"the log means = {np.var(np.log(means), ddof=1) / within:.1f}x what the trials predict")
    pairs = list(itertools.combinations(range(a.real), 2))
    old = sum(compare_samples(trials[i], trials[j], alpha=a.alpha, noise=a.noise)["verdict_code"]
              in ("improved", "regressed") for i, j in pairs)
    bare = sum(compare_nested([trials[i]], [trials[j]], alpha=a.alpha, noise=a.noise)["verdict_code"]
               in ("improved", "regressed") for i, j in pairs)
    floored = 0
    for i, j in pairs:
        floor = estimate_floor([t for k, t in enumerate(trials) if k not in (i, j)])
        floored += compare_nested([trials[i]], [trials[j]], alpha=a.alpha, noise=a.noise,
                                  floor=floor)["verdict_code"] in ("improved", "regressed")
    print(f"  {len(pairs)} pairs called improved/regressed: old trial-level test {old} ({old / len(pairs):.0%}); "
          f"one process per side, no floor {bare}; with a floor from the other {a.real - 2}: {floored} "
          f"({floored / len(pairs):.0%})")
    triples = [trials[k:k + 3] for k in range(0, a.real - 2, 3)]
    tp = list(itertools.combinations(range(len(triples)), 2))
    nested = sum(compare_nested(triples[i], triples[j], alpha=a.alpha, noise=a.noise)["verdict_code"]
                 in ("improved", "regressed") for i, j in tp)
    print(f"  3 vs 3 processes (disjoint triples), {len(tp)} pairs: improved/regressed {nested}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--between", type=float, default=0.04)
    ap.add_argument("--within", type=float, default=0.015)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--effect", type=float, default=0.08)
    ap.add_argument("--max-runs", type=int, default=20)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--calibrate", type=int, default=5)
    ap.add_argument("--startup-s", type=float, default=3.5)
    ap.add_argument("--trial-s", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--real", type=int, default=0, help="also N real captures in fresh processes (e.g. 12)")
    ap.add_argument("--imgsz", type=int, default=96, help="with --real: the captures' image size")
    a = ap.parse_args(argv)
    def rng_(name: str, k: int = 0) -> np.random.Generator:
        """A generator per figure, so that adding a figure does not change the others."""
        return np.random.default_rng([a.seed, zlib.crc32(name.encode()), k])
    t0 = time.perf_counter()
    infl = (a.between ** 2 + a.within ** 2 / a.trials) / (a.within ** 2 / a.trials)
    print(f"noise: between-process SD {a.between:.1%}, within {a.within:.1%}, {a.trials} trials/process; "
          f"process-mean variance = {infl:.1f}x what the trials predict")
    print(f"\n1. identical work, {a.reps} pairs, alpha {a.alpha}, noise band {a.noise:.0%}")
    old = pooled(rng_("pooled"), a, 0.0)
    print(f"  old pooled test, 1 process/side ({a.trials} trials): p<alpha {p_rate(old, a.alpha):6.1%}, "
          f"improved/regressed {rate(old):6.1%}")
    for k in (3, 5):
        r = fixed(rng_("fixed", k), a, k, 0.0)
        print(f"  nested, {k} processes/side:               p<alpha {p_rate(r, a.alpha):6.1%}, "
              f"improved/regressed {rate(r):6.1%}")
    print(f"  nested, 3 vs 4 processes of 1-8 trials:  p<alpha {unbalanced(rng_('unbalanced'), a):6.1%}")
    print("  1 process against 2 / 3 / 5, no floor:   p<alpha "
          + " / ".join(f"{one_vs_many(rng_('one_vs_many', k), a, k):.1%}" for k in (2, 3, 5)))
    seq = sequential(rng_("sequential0"), a, 0.0)
    fp = np.mean([c in ("improved", "regressed") for c in seq["codes"]])
    print(f"  sequential A/B (looks {seq['schedule']} at alpha {', '.join(f'{x:.4f}' for x in seq['levels'])}):"
          f" improved/regressed "
          f"{fp:6.1%}, mean processes/side {seq['used'].mean():.1f}")
    strict = sequential(rng_("sequential_band0"), argparse.Namespace(**{**vars(a), "noise": 0.0}), 0.0)
    fp0 = np.mean([c in ("improved", "regressed") for c in strict["codes"]])
    print(f"  sequential A/B with a 0% band (a stop whenever any look's p < its alpha): {fp0:6.1%}")
    print(f"  one process/side, floor from {a.calibrate} processes: improved/regressed "
          f"{with_floor(rng_('floor'), a, 0.0):6.1%}")
    shift = math.log1p(a.effect)
    print(f"\n2. a {a.effect:.0%} slowdown, sequential A/B up to {a.max_runs} processes")
    seq = sequential(rng_("sequential1"), a, shift)
    power = np.mean([c == "regressed" for c in seq["codes"]])
    used = seq["used"]
    cost = lambda n: 2 * n * (a.startup_s + a.trials * a.trial_s)  # noqa: E731
    n_or = oracle_processes(a)
    print(f"  called regressed: {power:.1%}; processes/side used: mean {used.mean():.2f}, median "
          f"{np.median(used):.0f}; seconds: mean {cost(used.mean()):.1f}")
    print(f"  oracle (knows the variances, fixed design, 80% power): {n_or} processes/side, {cost(n_or):.1f} s; "
          f"sequential / oracle = {used.mean() / n_or:.2f}x processes")
    fixed_max = fixed(rng_("fixed_max"), a, a.max_runs // 2, shift)
    print(f"  fixed design at the maximum ({a.max_runs // 2}/side, alpha {a.alpha}): called regressed "
          f"{rate(fixed_max, ('regressed',)):.1%}")
    if a.real:
        real(a)
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
