"""Pareto set and "best" within a mode, decided with the comparisons' statistics: worked cases
from known truths, and the best's adjusted p recomputed by a hand-rolled Holm over one family
(the comparison table's p-values plus the best-vs-runner-up ones). The whole analysis runs it in
tests/test_analysis_stages.py (test_pareto_and_best_and_scaling)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from yoloprof.analysis.dominance import best_within_modes, pareto_within_modes
from yoloprof.metrics.stats import compare_samples

META = {"step_ms": ("lower", "ms"), "img_per_s": ("higher", "img/s"), "peak_mem_mb": ("lower", "MiB")}


def _data(table, trials=5, seed=0):
    """gm table and samples from {config: (mode, step ms, memory MiB)}: 1% step noise, 0.01%
    memory noise, batch 4."""
    rng = np.random.default_rng(seed)
    rows, samples, modes = [], {}, {}
    for name, (mode, step, mem) in table.items():
        s = rng.lognormal(np.log(step), 0.01, trials)
        vals = {"step_ms": s, "img_per_s": 4000.0 / s, "peak_mem_mb": rng.lognormal(np.log(mem), 1e-4, trials)}
        modes[name] = mode
        for m, v in vals.items():
            samples[(name, m)] = v
            rows.append({"config": name, "group_hash": name, "metric": m, "n": trials,
                         "gmean": float(np.exp(np.log(v).mean()))})
    return pd.DataFrame(rows), samples, modes


def _front(gm, samples, modes):
    p = pareto_within_modes(gm, samples, modes, "peak_mem_mb", alpha=0.05, noise=0.02, correction="holm")
    return p.set_index("config")


def test_identical_models_are_both_on_the_set():
    p = _front(*_data({"a": ("train", 50.0, 500.0), "b": ("train", 50.0, 500.0)}))
    assert p["pareto"].all() and set(p["decided"]) == {"statistics"}


def test_a_memory_difference_inside_the_noise_keeps_no_slower_config():
    # b: 10% faster with 0.3 MiB more; a point-estimate front would keep a for its memory
    p = _front(*_data({"a": ("train", 55.0, 500.0), "b": ("train", 50.0, 500.3)}))
    assert p.loc["a", "peak_mem_mb"] < p.loc["b", "peak_mem_mb"]
    assert not p.loc["a", "pareto"] and p.loc["b", "pareto"] and p.loc["a", "dominated_by"] == "b"


def test_modes_are_never_mixed():
    # the infer configuration is worse on every axis than both train ones, never dominated by them
    gm, samples, modes = _data({"t1": ("train", 50.0, 500.0), "t2": ("train", 40.0, 400.0),
                                "i1": ("infer", 80.0, 900.0)})
    p = _front(gm, samples, modes)
    assert p.loc["i1", "pareto"] and p.loc["t2", "pareto"] and not p.loc["t1", "pareto"]
    best = best_within_modes(gm, samples, META, list(META), modes, [], alpha=0.05, noise=0.02,
                             correction="holm").set_index(["mode", "metric"])
    assert best.loc[("infer", "step_ms"), "best"] == "i1"
    assert best.loc[("infer", "step_ms"), "verdict"] == "only configuration"
    assert best.loc[("train", "step_ms"), "best"] == "t2"


def test_one_trial_decides_nothing():
    p = _front(*_data({"a": ("train", 55.0, 500.0), "b": ("train", 50.0, 400.0)}, trials=1))
    assert p["pareto"].all() and p["decided"].str.startswith("undecided").all()


def _holm(ps):
    """Holm step-down by hand: sorted p(1..m), adjusted = running max of (m - k + 1) p(k), capped at 1."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - k) * ps[i]))
        out[i] = running
    return out


def test_best_significance_is_one_family_with_the_table():
    gm, samples, modes = _data({"a": ("train", 50.0, 500.0), "b": ("train", 49.0, 500.0),
                                "c": ("train", 50.5, 500.0)}, trials=4)
    # the comparison table of this sweep: b and c against a, two metrics
    table_p = [compare_samples(samples[("a", m)], samples[(g, m)], better=META[m][0])["p_welch"]
               for g in ("b", "c") for m in ("step_ms", "img_per_s")]
    best = best_within_modes(gm, samples, META, ["step_ms", "img_per_s"], modes, table_p, alpha=0.05,
                             noise=0.02, correction="holm")
    raw = [float(p) for p in best["p"]]
    assert np.allclose(best["p_adj"].to_numpy(float), _holm(table_p + raw)[len(table_p):])
    assert (best["significant"] == (best["p_adj"] < 0.05)).all()
    assert (best["p_adj"] >= best["p"]).all()
