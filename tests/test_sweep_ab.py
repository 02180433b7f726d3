"""The one-command A/B (sweep/ab.py), `yoloprof calibrate` and the noise floor in `compare`: with
deterministic fake sides, a fake capture command, and one small run of real captures in fresh
processes."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.ab_work import tiny_work
from helpers.paths import REPO, run_main
from yoloprof.errors import ProfileError, UsageError
from yoloprof.metrics.nested import NO_FLOOR_WORDS
from yoloprof.profiles.model import empty_profile, metric
from yoloprof.sweep import ab

FAKE = REPO / "tests" / "helpers" / "fake_capture.py"


def _fake_side(scale: float, seed: int, order: list[str], label: str, between: float = 0.03):
    rng = np.random.default_rng(seed)

    def run(index: int, out_dir: Path) -> dict:
        order.append(label)
        p = empty_profile("infer", {"batch": 1}, {"hostname": "h"})
        vals = 50.0 * scale * np.exp(rng.normal(0, between) + rng.normal(0, 0.01, 3))
        p["metrics"] = {"step_ms": metric(list(vals), "ms", "lower")}
        return p
    return run


def test_schedule_and_order() -> None:
    assert ab.abba_order(6) == list("ABBAAB")
    assert ab.look_schedule(10) == [3, 5, 8, 10] and ab.look_schedule(4) == [3, 4]
    assert ab.look_schedule(3) == [3] and ab.look_schedule(2) == [2]


def test_a_clear_regression_stops_at_the_first_look(tmp_path: Path) -> None:
    order: list[str] = []
    run = ab.run_ab(_fake_side(1.0, 1, order, "A"), _fake_side(1.3, 2, order, "B"), tmp_path, max_runs=20)
    assert run["stopped"] == "decided" and "".join(order) == "ABBAAB" == run["order"]
    assert run["alphas"] == pytest.approx([0.05 * n / 26 for n in (3, 5, 8, 10)])
    assert sum(run["alphas"]) == pytest.approx(0.05)
    assert run["alpha_per_look"] == pytest.approx(0.05 * 3 / 26) and len(run["looks"]) == 1
    res = ab.ab_compare(run)
    step = next(m for m in res["metrics"] if m["metric"] == "step_ms")
    assert step["verdict_code"] == "regressed" and res["alpha"] == pytest.approx(0.05 * 3 / 26)
    assert step["before"]["processes"] == step["after"]["processes"] == 3


def test_identical_sides_run_to_the_maximum_and_are_not_called_different(tmp_path: Path) -> None:
    order: list[str] = []
    run = ab.run_ab(_fake_side(1.0, 3, order, "A"), _fake_side(1.0, 4, order, "B"), tmp_path, max_runs=12)
    assert run["stopped"] in ("max runs", "decided") and len(order) <= 12
    assert all(k["verdict_code"] not in ("improved", "regressed") for k in run["looks"])
    assert [k["per_side"] for k in run["looks"]] == ab.look_schedule(6)[:len(run["looks"])]


def test_budget_ends_the_run_with_one_last_look(tmp_path: Path, monkeypatch) -> None:
    clock = [0.0]

    def tick(scale: float, seed: int, label: str):
        inner = _fake_side(scale, seed, [], label, between=0.2)  # too noisy to decide early

        def run(index: int, out_dir: Path) -> dict:
            clock[0] += 10.0
            return inner(index, out_dir)
        return run

    monkeypatch.setattr(ab.time, "monotonic", lambda: clock[0])
    run = ab.run_ab(tick(1.0, 5, "A"), tick(1.0, 6, "B"), tmp_path, max_runs=20, budget_s=45)
    assert run["stopped"] == "budget" and run["processes"] == [2, 2]
    assert [k["per_side"] for k in run["looks"]] == [2] and run["looks"][0]["alpha"] == pytest.approx(0.05 * 3 / 26)


def test_bad_budgets_and_failing_commands(tmp_path: Path) -> None:
    side = _fake_side(1.0, 1, [], "A")
    with pytest.raises(UsageError, match="--max-runs"):
        ab.run_ab(side, side, tmp_path, max_runs=3)
    with pytest.raises(UsageError, match="--budget-s"):
        ab.run_ab(side, side, tmp_path, budget_s=0)
    with pytest.raises(UsageError, match="'nope_ms' is not in both"):
        ab.run_ab(side, side, tmp_path, metric="nope_ms")
    run = ab.command_runner(f"{sys.executable} {FAKE} 1.0 --fail")
    with pytest.raises(ProfileError, match="refused on purpose"):
        run(0, tmp_path / "x")


def test_compare_runs_both_sides_from_the_command_line(tmp_path: Path) -> None:
    a, b = f"{sys.executable} {FAKE} 1.0", f"{sys.executable} {FAKE} 1.25"
    res = run_main("compare", "--run-a", a, "--run-b", b, "--max-runs", "8", "--metric", "step_ms", "--json",
                   "--fail-on-regression")
    assert res.returncode == 4, res.stderr
    out = json.loads(res.stdout)
    assert out["ab"]["stopped"] == "decided" and out["ab"]["order"] == "ABBAAB"
    assert out["metrics"][0]["verdict_code"] == "regressed"
    assert run_main("compare", "--run-a", a).returncode == 2  # both sides, or none


def test_calibrate_then_compare_one_process_per_side(tmp_path: Path) -> None:
    store = tmp_path / "floors.json"
    res = run_main("calibrate", "--processes", "4", "--noise-file", str(store), "--json", "--",
                   sys.executable, str(FAKE), "1.0")
    assert res.returncode == 0, res.stderr
    cal = json.loads(res.stdout)
    sd = cal["metrics"]["step_ms"]["sd"]
    assert 0.005 < sd < 0.1 and cal["metrics"]["step_ms"]["processes"] == 4
    one, two = tmp_path / "one", tmp_path / "two"
    for d, scale in ((one, "1.0"), (two, "1.5")):
        assert FAKE.is_file()
        import subprocess

        subprocess.run([sys.executable, str(FAKE), scale, "--project", str(d), "--json"], check=True)
    pa, pb = str(one / "infer" / "profile.json"), str(two / "infer" / "profile.json")
    text = run_main("compare", pa, pb, "--noise-file", str(store), "--metric", "step_ms")
    assert text.returncode == 0 and "regressed" in text.stdout and "noise floor" in text.stdout, text.stdout
    none = json.loads(run_main("compare", pa, pb, "--json", "--noise-file", str(tmp_path / "no.json")).stdout)
    assert none["metrics"][0]["verdict"] == NO_FLOOR_WORDS
    # learned from earlier identical captures instead of running any
    learned = run_main("calibrate", "--from", pa, pa, pa, "--noise-file", str(tmp_path / "l.json"))
    assert learned.returncode == 0 and "run-to-run noise floor" in learned.stdout
    assert run_main("calibrate", "--from", pa, pb).returncode == 2  # fewer than 3 captures


@pytest.mark.slow
def test_identical_real_captures_in_fresh_processes_are_not_called_different(tmp_path: Path) -> None:
    """Four tiny identical inference captures, A B B A in fresh worker processes: neither the
    nested comparison (2 per side) nor one capture against another judged by the noise floor
    the four show calls them improved or regressed (alpha 0.01 keeps a valid test's chance of a
    false alarm here below 1%)."""
    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.readers.compare import compute_compare
    from yoloprof.sweep.calibrate import calibrate_profiles

    s = CaptureSettings(mode="infer", device="cpu", imgsz=32, warmup=1, warmup_max=1, runs=3, repeat=2, trace=False,
                        modules=False)
    run = ab.run_ab(ab.settings_runner(s), ab.settings_runner(s), tmp_path, max_runs=4, alpha=0.01)
    assert run["order"] == "ABBA" and len(run["looks"]) == 1
    res = ab.ab_compare(run, metrics=["step_ms", "p50_ms"])
    assert all(m["verdict_code"] not in ("improved", "regressed") for m in res["metrics"]), res["metrics"]
    a, b = run["profiles"]["A"], run["profiles"]["B"]
    cal = calibrate_profiles(a + b, "test", tmp_path / "floors.json")
    assert math.isfinite(cal["metrics"]["step_ms"]["sd"])
    one = compute_compare(a[0], b[0], metrics=["step_ms"], alpha=0.01, noise_file=tmp_path / "floors.json")
    assert one["metrics"][0]["method"] == "noise floor"
    assert one["metrics"][0]["verdict_code"] not in ("improved", "regressed")
    # the Python API with two callables (the same one: identical work), same forkserver
    import yoloprof

    res = yoloprof.ab(tiny_work, tiny_work, max_runs=4, alpha=0.01, warmup=1, trials=3, calls=5)
    assert res["ab"]["order"] == "ABBA" and res["metrics"][0]["after"]["processes"] == 2
    assert res["metrics"][0]["verdict_code"] not in ("improved", "regressed")
