"""Contended jobs in sweeps and comparisons (docs/analysis.md "Contended jobs"): a job that ran
while other processes used more than CONTENDED_CORES is kept, left out of every verdict, replaced
by `trial=auto`, and named in a warning. Fake captures whose contention the test sets; the real
capture with a real CPU hog is tests/test_sweep_adaptive.py's identical-work sweep."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_sweep import noisy_capture
from yoloprof.analysis.run import analyze
from yoloprof.config.stat_defaults import CONTENDED_CORES
from yoloprof.defs import files
from yoloprof.readers.compare import compute_compare
from yoloprof.sweep.app import main

QUIET = ["device=cpu", "workers=0", "launch.isolation=inprocess", "analysis.html=false"]
BUSY = 1.6  # other processes' cores in a contended fake job (of 2)

# the rule at its own threshold (tests/conftest.py turns it off for the rest of the suite)
pytestmark = pytest.mark.usefixtures("contention_rule")


def _busy_when(rule):
    """noisy_capture with a `contention` block: BUSY cores where rule(settings), else 0.05."""
    def capture(settings, out_dir, *, progress=False):
        profile = noisy_capture(settings, out_dir)
        other = BUSY if rule(settings) else 0.05
        profile["contention"] = {"cores": 2, "other_cores": other, "own_cores": 1.0, "seconds": 1.0,
                                 "trials": [other] * settings.repeat}
        (out_dir / files.PROFILE).write_text(json.dumps(profile), encoding="utf-8")
        return profile
    return capture


def _sweep(tmp_path, monkeypatch, rule, args):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", _busy_when(rule))
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["trial=auto", "hydra.sweep.dir=S", *QUIET, *args]) == 0
    sweep = tmp_path / "S"
    return sweep, json.loads((sweep / files.MANIFEST).read_text())["adaptive"], pd.read_parquet(sweep / files.RESULTS)


def test_trial_auto_replaces_contended_jobs_and_the_analysis_leaves_them_out(tmp_path, monkeypatch):
    """A 10% slowdown (bfloat16), with the first two bfloat16 jobs contended: they are kept in the
    rows, the look at 2 per side waits for two replacements (a round at the same look), and the
    verdicts rest on the uncontended jobs only."""
    monkeypatch.setenv("FAKE_SLOW", "bfloat16:1.10")
    monkeypatch.setenv("FAKE_PROCESS_CV", "0.01")
    sweep, record, rows = _sweep(tmp_path, monkeypatch, lambda s: s.precision == "bfloat16" and s.trial < 2,
                                 ["precision=float32,bfloat16", "adaptive.min_trials=2", "adaptive.max_trials=4"])
    rows = rows.set_index("job_num")
    busy = sorted(rows.index[rows["other_cpu_cores"] > CONTENDED_CORES])
    assert len(busy) == 2 and set(rows.loc[busy, "precision"]) == {"bfloat16"}
    assert record["rounds"][0]["jobs"] == [0, 1, 2, 3]
    assert record["rounds"][1]["replaces"] == busy and record["rounds"][1]["look"] == 1
    assert set(rows.loc[record["rounds"][1]["jobs"], "precision"]) == {"bfloat16"}
    [(cand, decision)] = record["comparisons"].items()
    assert decision["code"] == "regressed"
    analysis = pd.read_parquet(sweep / "analysis" / "comparisons.parquet")
    step = analysis[analysis["metric"] == "step_ms"].iloc[0]
    assert step["verdict_code"] == "regressed" and "2 contended job(s) of" in step["warnings"]
    # the processes compared: the uncontended ones, as many as the rows hold minus the two
    assert step["k"] + step["k_baseline"] == len(rows) - 2
    result = analyze(sweep)
    [said] = [w for w in result.warnings if "other processes" in w]
    assert said.startswith(f"jobs {busy[0]}, {busy[1]} ran while other processes used 1.6 of 2 cores: left out")


@pytest.mark.parametrize("replace, replaced", [(None, 3), (0, 0)])
def test_a_machine_busy_throughout_stops_the_sweep_and_withholds_every_verdict(tmp_path, monkeypatch, replace,
                                                                               replaced):
    """Every job contended: replacements up to the limit (adaptive.replace_contended, unset:
    max_trials), then the sweep stops "contended"; the analysis runs and decides nothing."""
    limit = [] if replace is None else [f"adaptive.replace_contended={replace}"]
    sweep, record, rows = _sweep(tmp_path, monkeypatch, lambda s: True,
                                 ["imgsz=64,96", "adaptive.min_trials=2", "adaptive.max_trials=3", *limit])
    assert record["stopped"] == "contended"
    assert len(rows) == 2 * (2 + replaced)  # two configurations: min_trials + the replacement limit
    [(cand, decision)] = record["comparisons"].items()
    assert decision["code"] == "contended" and "ran while other processes used 1.6 of 2 cores" in decision["why"]
    analysis = pd.read_parquet(sweep / "analysis" / "comparisons.parquet")
    assert len(analysis) and set(analysis["verdict_code"]) == {"inconclusive"}
    assert analysis["verdict"].str.contains("withheld").all()


def _profile(step_ms, other=None):
    from yoloprof.profiles.model import metric

    out = {"kind": "train", "config": {}, "env": {"device_name": "cpu"},
           "metrics": {"step_ms": metric(step_ms, "ms", "lower")}, "verdict": {}}
    if other is not None:
        out["contention"] = {"cores": 2, "other_cores": other, "own_cores": 1.0, "seconds": 2.0, "trials": []}
    return out


def test_compare_leaves_contended_captures_out_and_withholds_when_a_side_has_none_left():
    base = [_profile([10.0, 10.1, 9.9], 0.02), _profile([10.2, 10.0, 10.1], 0.0), _profile([9.9, 10.0, 10.1])]
    slow = [_profile([11.0, 11.1, 10.9], 0.01), _profile([11.2, 11.0, 11.1], 0.03), _profile([30.0, 31.0, 29.0], 1.2)]
    result = compute_compare(base, slow)
    [row] = result["metrics"]
    assert row["after"]["processes"] == 2 and row["verdict_code"] == "regressed"  # the 3x one is left out
    assert result["warnings"][0].startswith("profile after 3 ran while other processes used 1.2 of 2 cores: left out")
    # one capture each, the after one contended: no verdict rests on it
    result = compute_compare(_profile([10.0, 10.1, 9.9], 0.0), _profile([30.0, 31.0, 29.0], 1.2))
    assert result["metrics"][0]["verdict_code"] in ("inconclusive", None)
    assert "withheld" in result["warnings"][0]


@pytest.mark.parametrize("other, contended", [(None, False), (0.25, False), (0.26, True), (float("nan"), False)])
def test_the_rule_and_the_row(other, contended):
    from yoloprof.metrics.contention import contended as rule
    from yoloprof.profiles.rows import row_from_profile

    assert rule(other) is contended
    profile = _profile([10.0], other)
    row = row_from_profile(profile, {})
    assert (row["other_cpu_cores"], row["cpu_cores"]) == ((other, 2) if other is not None else (None, None))


def test_the_gate_leaves_contended_captures_out_of_its_baseline_and_withholds_on_a_contended_new_one(tmp_path):
    """`yoloprof gate` (CI): a stored capture that ran contended is not baseline; a new capture
    that ran contended is never called regressed (exit 0, withheld), an uncontended one is."""
    import datetime as dt

    import numpy as np

    from helpers.paths import run_main
    from helpers.profiles import cpu_train_profile
    from yoloprof.profiles import store
    from yoloprof.profiles.io import write_profile

    rng = np.random.default_rng(4)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(10):  # 8 calm captures at 10 ms, 2 contended ones at 20 ms
        busy = i in (3, 7)
        store.append(tmp_path, {"status": "ok", "config_key": "k", "cpu_model": "A", "device_name": "A",
                                "threads": 1, "torch_version": "2.5", "cuda_version": "none", "mode": "train",
                                "batch": 2, "imgsz": 128, "device": "cpu", "started_at": t0 + dt.timedelta(minutes=i),
                                "step_ms": (20.0 if busy else 10.0) * float(np.exp(rng.normal(0, 0.01))),
                                "other_cpu_cores": BUSY if busy else 0.02, "cpu_cores": 2})
    for name, other in (("calm", 0.02), ("busy", BUSY)):
        new = cpu_train_profile(step_ms=13.0)  # 30% slower than the calm history
        new["env"].update(cpu_model="A", device_name="A", torch="2.5", threads=1)
        new["contention"] = {"cores": 2, "other_cores": other, "own_cores": 1.0, "seconds": 3.0, "trials": []}
        write_profile(tmp_path / f"{name}.json", new)
    proc = run_main("gate", str(tmp_path), str(tmp_path / "calm.json"), "--json")
    assert proc.returncode == 4, proc.stderr
    out = json.loads(proc.stdout)
    [j] = out["judgements"]
    assert j["baseline_n"] == 8 and j["baseline_mean"] == pytest.approx(10, rel=0.02)
    assert any("2 stored capture(s) of this configuration ran contended" in n for n in out["notes"])
    proc = run_main("gate", str(tmp_path), str(tmp_path / "busy.json"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["judgements"][0]["verdict_code"] == "inconclusive" and "withheld" in out["judgements"][0]["verdict"]
    assert any("ran while other processes used 1.6 of 2 cores" in n for n in out["notes"])


def test_the_threshold_can_be_set_and_a_bad_one_is_a_usage_error(monkeypatch):
    from yoloprof.errors import UsageError
    from yoloprof.metrics.contention import contended

    assert contended(0.3) and not contended(0.25)
    monkeypatch.setenv("YOLOPROF_CONTENDED_CORES", "inf")
    assert not contended(1.9)
    monkeypatch.setenv("YOLOPROF_CONTENDED_CORES", "0.5")
    assert not contended(0.3) and contended(0.6)
    for bad in ("-1", "many", "nan"):
        monkeypatch.setenv("YOLOPROF_CONTENDED_CORES", bad)
        with pytest.raises(UsageError, match="YOLOPROF_CONTENDED_CORES"):
            contended(0.3)
