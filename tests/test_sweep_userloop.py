"""Sweeps over a user's own function (`task._target_`), and the module-growth analysis."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

ASSETS = Path(__file__).resolve().parent / "assets"


@pytest.mark.slow
def test_sweep_over_a_user_function_yields_rows_and_verdicts(tmp_path, monkeypatch, capsys):
    import torch

    from yoloprof.sweep.app import main
    from yoloprof.profiles.rows import read_rows

    torch.set_num_threads(1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ASSETS))
    for var in ("YOLOPROF_SWEEP_ID", "YOLOPROF_LAUNCHER"):
        monkeypatch.delenv(var, raising=False)
    code = main(["-m", "+task._target_=user_loop.train", "+task.width=8,32", "+task.python_hotspots=false",
                 "+task.slow=0.25", "device=cpu", "analysis.html=false", "--json"])
    assert code == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    sweep = Path(doc["sweep_dir"])
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok", "ok"] and list(df["model"]) == ["user_loop.train"] * 2
    assert df["group_hash"].nunique() == 2  # the task's arguments tell the configurations apart
    # the profile was written into the job folder, whatever out_dir the function was given
    for r in df.itertuples():
        assert (sweep / r.profile_path).is_file() and len(r.step_ms_samples) == 3
    # exact model facts in the row: Linear(16,w) + Linear(w,w) + Linear(w,4)
    for w, params in zip((8, 32), df["params_total"]):
        assert params == (16 * w + w) + (w * w + w) + (w * 4 + 4)
    comparisons = pd.read_parquet(sweep / "analysis" / "comparisons.parquet")
    step = comparisons[comparisons["metric"] == "step_ms"]
    assert len(step) == 1 and step["verdict"].notna().all()
    # the swept task argument is an axis of the module-growth table, from the jobs' modules sections
    growth = pd.read_parquet(sweep / "analysis" / "module_growth.parquet")
    assert len(growth) and set(growth["axis"]) == {"task.width"}
    assert all(levels.tolist() == [8.0, 32.0] for levels in growth["levels"])


def _collected(levels: list[int], law: dict[str, tuple[float, float]]):
    """A fake sweep: one job per imgsz level whose module times follow ms = c * level**k."""
    from yoloprof.analysis.collect import Collected

    ok = pd.DataFrame({"job_id": [f"s/{i}" for i in range(len(levels))],
                       "group_hash": [f"g{i}" for i in range(len(levels))], "imgsz": levels,
                       "batch": [2] * len(levels), "overrides": [json.dumps([f"imgsz={v}"]) for v in levels],
                       "status": ["ok"] * len(levels)})
    profiles = {}
    for i, level in enumerate(levels):
        rows = [{"module": name, "type": "Conv", "depth": 1, "forward_ms": coef * level ** k, "backward_ms": 0.0}
                for name, (coef, k) in law.items()]
        root = sum(r["forward_ms"] for r in rows)
        rows.insert(0, {"module": "", "type": "Net", "depth": 0, "forward_ms": root, "backward_ms": 0.0})
        profiles[f"s/{i}"] = {"modules": {"rows": rows}}
    return Collected(sweep_dir=Path("."), rows=ok, ok=ok, failed=ok.iloc[0:0], profiles=profiles)


def test_module_growth_recovers_known_exponents():
    from yoloprof.analysis.configs import build_configs
    from yoloprof.analysis.module_growth import growth_notes, module_growth

    c = _collected([64, 128, 256], {"quad": (0.001, 2.0), "lin": (0.3, 1.0), "flat": (50.0, 0.0)})
    growth = module_growth(c, build_configs(c.ok))
    got = dict(zip(growth["module"], growth["exponent"]))
    assert list(growth["module"]) == ["quad", "lin", "flat"]  # fastest first
    # by hand: log(t(256)/t(64)) / log(256/64) for an exact power law
    assert got["quad"] == pytest.approx(math.log(256 ** 2 / 64 ** 2) / math.log(4))
    assert got["lin"] == pytest.approx(1.0) and got["flat"] == pytest.approx(0.0, abs=1e-9)
    assert growth.iloc[0]["ratio"] == pytest.approx(16.0)
    assert growth_notes(growth)[0].startswith("fastest-growing module along imgsz: quad (Conv)")


def test_module_growth_skips_tiny_modules_and_profiles_without_modules():
    from yoloprof.analysis.configs import build_configs
    from yoloprof.analysis.module_growth import MIN_SHARE, module_growth

    c = _collected([64, 128], {"big": (0.001, 2.0), "tiny": (0.001, -8.0)})
    growth = module_growth(c, build_configs(c.ok))
    assert list(growth["module"]) == ["big"]  # tiny is below MIN_SHARE of the model at 128
    assert 0.001 * 128 ** -8 < MIN_SHARE * 0.001 * 128 ** 2
    c.profiles.clear()
    assert module_growth(c, build_configs(c.ok)).empty


def test_growth_exponent_interval_is_the_slope_t_interval():
    """Per-job points with noise: the exponent and its 95% interval are scipy's linregress slope
    +- t(0.975, n-2) * stderr; two points give no exponent, only the ratio."""
    import numpy as np
    from scipy import stats

    from yoloprof.analysis.module_growth import fit_exponent

    rng = np.random.default_rng(3)
    levels = np.repeat([8.0, 16.0, 32.0], 2)
    ms = 0.02 * levels * np.exp(rng.normal(0, 0.05, levels.size))
    k, lo, hi, n = fit_exponent(levels, ms)
    ref = stats.linregress(np.log(levels), np.log(ms))
    half = stats.t.ppf(0.975, levels.size - 2) * ref.stderr
    assert n == 6 and k == pytest.approx(ref.slope) and lo == pytest.approx(ref.slope - half)
    assert hi == pytest.approx(ref.slope + half) and lo < 1.0 < hi  # linear, inside its interval
    assert fit_exponent(np.array([2.0, 4.0]), np.array([1.0, 4.1]))[:3] == (None, None, None)


def test_two_levels_one_trial_each_claims_no_exponent():
    from yoloprof.analysis.configs import build_configs
    from yoloprof.analysis.module_growth import growth_notes, module_growth

    c = _collected([64, 128], {"attn": (0.01, 1.0)})
    growth = module_growth(c, build_configs(c.ok))
    r = growth.iloc[0]
    assert r["module"] == "attn" and pd.isna(r["exponent"]) and r["points"] == 2
    assert r["ratio"] == pytest.approx(2.0)
    note = growth_notes(growth)[0]
    assert "no exponent from 2 point(s)" in note and "^" not in note
