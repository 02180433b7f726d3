"""Recommendations: each rule on a case where it must fire and one where it must not, its
evidence and what-if checked against the inputs by hand (the plugin's rules on its own sample
trace: tests/test_readers_capture.py)."""

from __future__ import annotations

import pytest

from helpers.profiles import cpu_train_profile, gpu_train_profile
from yoloprof.readers.advice import recommendations


def _detail(loader_ms=0.0, total_ms=100.0, util=80.0, eligible=60.0, tc=0.0) -> dict:
    return {"breakdown": {"mean": {"total_ms": total_ms, "dataloader_ms": loader_ms}},
            "gpu": {"overall": [{"device": 0, "gpu_util_pct": util}]},
            "tensor_cores": {"eligible_pct": eligible, "tensorcore_pct": tc, "eligible_ops": ["aten::mm"]}}


def _v100(profile: dict, major: int = 7) -> dict:
    profile["env"]["devices"] = [{"name": "V100", "computeMajor": major, "computeMinor": 0}]
    profile["verdict"] = {"bound": "device", "why": "device-bound"}
    return profile


def _rules(profile, detail) -> dict:
    return {r["rule"]: r for r in recommendations(profile, detail)["recommendations"]}


def test_dataloader_fires_above_five_percent_with_its_what_if():
    p = _v100(gpu_train_profile(step_samples=(100.0, 100.0)))
    r = _rules(p, _detail(loader_ms=20.0))["dataloader"]
    assert r["evidence"]["dataloader_share_pct"] == pytest.approx(20.0)
    assert r["what_if"]["predicted_step_ms"] == pytest.approx(80.0) and r["what_if"]["speedup"] == pytest.approx(1.25)
    assert "dataloader" not in _rules(p, _detail(loader_ms=5.0))  # at the threshold: no


def test_dataloader_from_the_phase_without_a_trace():
    p = _v100(cpu_train_profile(step_ms=50.0))
    p["phases"] = [{"phase": "dataload", "wall_ms_per_step": 10.0}]
    assert _rules(p, None)["dataloader"]["evidence"]["dataloader_share_pct"] == pytest.approx(20.0)
    p["phases"] = [{"phase": "dataload", "wall_ms_per_step": 1.0}]
    assert "dataloader" not in _rules(p, None)


def test_low_utilization_fires_below_half():
    p = _v100(gpu_train_profile())
    r = _rules(p, _detail(util=23.0))["low_utilization"]
    assert r["evidence"]["gpu_util_pct"] == {0: 23.0} and r["what_if"] is None and "sweep" in r["what_if_na"]
    assert "low_utilization" not in _rules(p, _detail(util=50.0))
    assert recommendations(p, None)["skipped"]["low_utilization"].startswith("needs the trace")


def test_amp_fires_only_on_tensor_core_hardware_without_tensor_core_kernels():
    assert "amp" in _rules(_v100(gpu_train_profile()), _detail(eligible=60.0, tc=0.0))
    assert "amp" not in _rules(_v100(gpu_train_profile()), _detail(eligible=60.0, tc=30.0))  # AMP already on
    assert "amp" not in _rules(_v100(gpu_train_profile(), major=6), _detail(eligible=60.0))  # Pascal
    assert "amp" not in _rules(_v100(gpu_train_profile()), _detail(eligible=0.0))


def test_launches_fires_on_a_host_bound_verdict_with_the_what_if_of_half_the_launches():
    p = gpu_train_profile(step_samples=(100.0, 100.0))
    p["verdict"] = {"bound": "host", "why": "host-bound"}
    r = _rules(p, None)["launches"]
    assert r["what_if"]["change"] == {"remove_launches": 250}
    assert r["what_if"]["predicted_step_ms"] < 100.0
    p["verdict"] = {"bound": "device", "why": "device-bound"}
    assert "launches" not in _rules(p, None)


def test_communication_fires_on_a_communication_bound_verdict():
    p = gpu_train_profile()
    p["categories"].append({"category": "communication", "device_ms_per_step": 30.0, "pct": 30.0})
    p["verdict"] = {"bound": "communication", "why": "collectives"}
    r = _rules(p, None)["communication"]
    assert r["what_if"]["change"]["remove_category"] == "communication"
    p["verdict"] = {"bound": "device", "why": "device-bound"}
    assert "communication" not in _rules(p, None)


def test_each_advice_names_the_tune_knobs_that_test_it_and_summary_shows_the_command(tmp_path, capsys):
    """Host-bound -> `launches`, tested by compile and the fused optimizer; `summary` says how, and
    `tune --from` puts those knobs first."""
    import json

    from yoloprof.cli import main
    from yoloprof.sweep.tune_cli import advised_knobs
    from yoloprof.sweep.tune_knobs import advice_first

    p = gpu_train_profile(step_samples=(100.0, 100.0))
    p["verdict"] = {"bound": "host", "why": "host-bound"}
    r = _rules(p, None)["launches"]
    assert r["knobs"] == [{"knob": "compile", "level": "reduce-overhead"}, {"knob": "optimizer_impl", "level": "fused"}]
    assert r["try"] == "yoloprof tune --knobs compile,optimizer_impl"
    assert _rules(_v100(gpu_train_profile()), _detail(loader_ms=20.0))["dataloader"]["try"] is None
    path = tmp_path / "p.json"
    path.write_text(json.dumps(p))
    assert main(["summary", str(path)]) == 0
    assert "try: yoloprof tune --knobs compile,optimizer_impl" in capsys.readouterr().out
    assert advice_first(["precision", "threads", "compile", "optimizer_impl"], advised_knobs(str(path))) == [
        "compile", "optimizer_impl", "precision", "threads"]
