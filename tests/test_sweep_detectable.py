"""A `trial=auto` sweep that stops undecided says what it could have seen and what would decide it;
with a known noise floor its last look follows from the floor within the budget (issue 36 item 9).
Fake captures with run-to-run noise (tests/helpers/fake_sweep.py), in-process: no real capture."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import yoloprof.capturing.builtin.capture_entry as capture_api
import yoloprof.metrics.noise_floor as noise_floor
from helpers.fake_sweep import noisy_capture
from yoloprof.defs import files
from yoloprof.metrics import sequential
from yoloprof.sweep.app import main

QUIET = ["device=cpu", "workers=0", "launch.isolation=inprocess", "analysis.enabled=false"]


def _sweep(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", noisy_capture)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["trial=auto", "hydra.sweep.dir=S", "precision=float32,bfloat16", *QUIET, *args]) == 0
    return json.loads((tmp_path / "S" / files.MANIFEST).read_text())["adaptive"]


@pytest.mark.slow
def test_an_undecided_8_percent_slowdown_names_the_detectable_change_and_the_processes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_SLOW", "bfloat16:1.08")
    monkeypatch.setenv("FAKE_PROCESS_CV", "0.10")
    record = _sweep(tmp_path, monkeypatch, ["adaptive.min_trials=2", "adaptive.max_trials=3"])
    [(cand, d)] = record["comparisons"].items()
    assert record["stopped"] == "max_trials" and not d["decided"], d
    # the reference: the same figures from the jobs' process values, computed here with scipy
    n, level = d["n_cand"], sequential.look_level(record["plan"], d["look"], 0.05)
    assert n == 3
    df = pd.read_parquet(tmp_path / "S" / files.RESULTS)
    logs = {p: np.log([np.mean(s) for s in g.sort_values("trial")["step_ms_samples"]])[:n]
            for p, g in df.groupby("precision")}
    sd = math.sqrt((np.var(logs["float32"], ddof=1) + np.var(logs["bfloat16"], ddof=1)) / 2)
    df_t, se = 2 * n - 2, sd * math.sqrt(2 / n)
    tc = sps.t.ppf(1 - level / 2, df_t)
    power = sps.nct.sf(tc, df_t, math.log1p(d["mde_pct"] / 100) / se) + sps.nct.cdf(-tc, df_t, math.log1p(d["mde_pct"] / 100) / se)
    assert power == pytest.approx(0.8, abs=1e-4)
    assert d["processes_needed"] > n
    assert f"could detect >= {d['mde_pct']:.1f}%" in d["detectable"]
    assert f"about {d['processes_needed']} per side would detect 2%" in d["detectable"]
    assert f"adaptive.max_trials={d['processes_needed']}" in d["detectable"]
    said = " ".join(capsys.readouterr().err.split()) + " ".join(capsys.readouterr().out.split())
    assert "precision=bfloat16 undecided against precision=float32: could detect" in said


@pytest.mark.slow
def test_a_known_noise_floor_sets_max_trials_within_the_budget(tmp_path, monkeypatch):
    floor = {"sd": 0.006, "df": 4, "processes": 5, "within_sd": 0.002, "trials": 3.0}
    monkeypatch.setattr(noise_floor, "find_floor", lambda profile, metric, *a, **k: dict(floor))
    record = _sweep(tmp_path, monkeypatch, ["adaptive.min_trials=2"])
    expected = sequential.max_trials_for(0.006, 0.02, 2)
    assert record["design"]["from"] == "noise floor" and record["design"]["max_trials"] == expected
    assert record["plan"][-1] == expected != 12


def test_the_budget_caps_the_floor_s_max_trials():
    """Round 1 took 2 s per job for 2 configurations (4 s a round); about 21 s are left of a 30 s
    budget: 5 more rounds."""
    from types import SimpleNamespace

    from yoloprof.sweep.adaptive import AUTO_MAX_TRIALS, Rounds

    state = Rounds.__new__(Rounds)
    state.s = SimpleNamespace(budget_s=30.0, min_trials=3)
    state.configs, state.job_s = [["a"], ["b"]], [2.0]
    state.started = __import__("time").monotonic() - 9.0
    assert state._cap()[0] == 3 + 5
    state.s = SimpleNamespace(budget_s=None, min_trials=3)
    assert state._cap()[0] == AUTO_MAX_TRIALS


def test_the_analysis_of_an_adaptive_sweep_says_what_an_inconclusive_comparison_could_have_seen(tmp_path):
    """analysis/adaptive_verdicts.py on a comparison table of one inconclusive pair (3 processes of
    3 trials per side, plan 2..3): the MDE at the last look's level reaches 80% power by scipy's
    noncentral t, and the needed processes become trials at 3 per process."""
    from yoloprof.analysis.adaptive_verdicts import apply_sequential

    (tmp_path / files.MANIFEST).write_text(json.dumps({"adaptive": {"plan": [2, 3]}}))
    values = {"b": [10.0, 10.9, 9.6], "c": [10.5, 9.9, 11.2]}
    metrics = pd.DataFrame([{"group_hash": g, "metric": "step_ms", "job_id": f"{g}{j}", "job_order": j, "value": v}
                            for g, vs in values.items() for j, v in enumerate(vs)])
    comparisons = pd.DataFrame([{"group_hash": "c", "baseline_hash": "b", "metric": "step_ms", "better": "lower",
                                 "n": 9, "k": 3, "warnings": "", "ratio": 1.0, "ci_low": 0.9, "ci_high": 1.1,
                                 "verdict_code": "inconclusive", "verdict": "inconclusive", "p_adj": 0.5,
                                 "mde_pct": np.nan, "processes_needed": np.nan, "trials_needed": np.nan}])
    row = apply_sequential(comparisons, metrics, tmp_path, alpha=0.05, noise=0.02).iloc[0]
    assert row["verdict_code"] == "inconclusive"
    sd = math.sqrt((np.var(np.log(values["b"]), ddof=1) + np.var(np.log(values["c"]), ddof=1)) / 2)
    level, se = sequential.look_level([2, 3], 2, 0.05), sd * math.sqrt(2 / 3)
    tc, nc = sps.t.ppf(1 - level / 2, 4), math.log1p(row["mde_pct"] / 100) / se
    assert sps.nct.sf(tc, 4, nc) + sps.nct.cdf(-tc, 4, nc) == pytest.approx(0.8, abs=1e-4)
    assert row["processes_needed"] == sequential.max_trials_for(sd, 0.02, 2) and \
        row["trials_needed"] == 3 * row["processes_needed"]
    assert f"could detect >= {row['mde_pct']:.1f}%" in row["warnings"]
