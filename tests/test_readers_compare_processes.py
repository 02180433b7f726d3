"""compare with the process as the unit: several captures per side, one per side with and without
a noise floor, and what it says when it cannot decide."""

from __future__ import annotations

import pytest
from helpers.profiles import gpu_train_profile

from yoloprof.metrics.nested import NO_FLOOR_WORDS
from yoloprof.readers.compare import calibrate_command, compute_compare, regressions

RUNS = [(100.0, 101.0, 99.0), (103.0, 102.0, 104.0), (98.0, 97.5, 98.5)]


def _side(scale: float) -> list[dict]:
    return [gpu_train_profile(tuple(scale * x for x in r)) for r in RUNS]


def test_one_capture_per_side_says_what_would_decide() -> None:
    before = gpu_train_profile((100.0, 100.5, 99.5))
    before["env"]["argv"] = ["infer", "--device", "cpu", "--project", "runs/x", "--json", "--runs", "5"]
    r = compute_compare(before, gpu_train_profile((130.0, 130.5, 129.5)))
    step = next(m for m in r["metrics"] if m["metric"] == "step_ms")
    assert step["verdict"] == NO_FLOOR_WORDS and regressions(r) == []
    assert step["decide"] == "yoloprof calibrate --processes 5 -- yoloprof infer --device cpu --runs 5"
    assert sum(step["decide"] in n for n in r["notes"]) == 1  # said once, not per metric
    assert calibrate_command({"env": {}}).endswith("<the capture command of this profile>")


def test_several_captures_per_side_and_a_floor() -> None:
    r = compute_compare(_side(1.0), _side(1.3))
    step = next(m for m in r["metrics"] if m["metric"] == "step_ms")
    assert step["verdict_code"] == "regressed" and step["method"] == "process means, Welch"
    assert r["processes"] == [3, 3] and r["deltas"] == []
    floor = {"sd": 0.02, "df": 6, "within_sd": 0.01, "trials": 3, "processes": 7}
    one = compute_compare(_side(1.0)[0], _side(1.3)[0], floors={"step_ms": floor})
    step = next(m for m in one["metrics"] if m["metric"] == "step_ms")
    assert step["verdict_code"] == "regressed" and step["floor"] == floor
    assert step["ratio"] == pytest.approx(1 / 1.3)


def test_a_side_of_different_workloads_is_warned_about() -> None:
    side = _side(1.0)
    side[1]["config"] = {**side[1]["config"], "batch": 32}
    r = compute_compare(side, _side(1.0))
    assert any("not all the same workload" in w for w in r["warnings"])
