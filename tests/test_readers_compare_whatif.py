"""Unit tests of compare (verdicts, trial rules, trace mode) and what-if (the two-clock model)."""

from __future__ import annotations

import math

import pytest
from helpers.profiles import GPU_KERNELS, cpu_train_profile, gpu_train_profile

from yoloprof.errors import UsageError
from yoloprof.profiles.model import metric
from yoloprof.metrics.nested import NO_FLOOR_WORDS
from yoloprof.readers.compare import compute_compare, regressions
from yoloprof.readers.what_if import compute_what_if


def _row(result: dict, name: str) -> dict:
    return next(r for r in result["metrics"] if r["metric"] == name)


BEFORE_RUNS = [(100.0, 101.0, 99.0), (100.5, 99.5, 100.0), (99.0, 100.0, 101.0), (101.0, 100.0, 100.5),
               (99.5, 100.5, 99.0)]


def _runs(scale: float) -> list[dict]:
    """Five captures (one process each) of three trials."""
    return [gpu_train_profile(tuple(scale * x for x in r)) for r in BEFORE_RUNS]


def test_compare_detects_a_regression() -> None:
    before, after = _runs(1.0), _runs(1.1)
    r = compute_compare(before, after)
    step = _row(r, "step_ms")
    assert step["verdict"] == "regressed" and (step["before"]["processes"], step["before"]["n"]) == (5, 15)
    # ratio oriented so > 1 is better: before/after of the geometric means for a lower-is-better metric
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    assert step["ratio"] == pytest.approx(1 / 1.1)
    assert step["ratio"] == pytest.approx(gm([gm(x) for x in BEFORE_RUNS]) / gm([gm([1.1 * v for v in x]) for x in BEFORE_RUNS]))
    assert step["ci"][0] < step["ratio"] < step["ci"][1] < 0.98
    assert step["p_mwu"] is not None  # 5 processes per side: Mann-Whitney cross-check
    assert "step_ms" in regressions(r) and "img_per_s" in regressions(r)
    assert r["bound"] == {"before": "host", "after": "host"}


def test_compare_improvement_is_not_a_regression() -> None:
    r = compute_compare(_runs(1.1), _runs(1.0))
    assert _row(r, "step_ms")["verdict"] == "improved"
    assert regressions(r) == []


def test_compare_single_runs_have_no_verdict() -> None:
    r = compute_compare(cpu_train_profile(50.0), cpu_train_profile(60.0))
    step = _row(r, "step_ms")
    assert step["verdict"] == NO_FLOOR_WORDS and step["decide"].startswith("yoloprof calibrate")
    assert step["change_pct"] == pytest.approx(20.0)
    assert regressions(r) == []
    ms = next(d for d in r["deltas"] if d["metric"] == "ms_per_image")
    assert ms["before"] == pytest.approx(25.0) and ms["after"] == pytest.approx(30.0)


def test_compare_unknown_metric_lists_valid() -> None:
    with pytest.raises(UsageError) as exc:
        compute_compare(cpu_train_profile(), cpu_train_profile(), metrics=["nope"])
    assert "step_ms" in str(exc.value)


def test_compare_two_traces_gives_deltas_without_significance() -> None:
    a, b = gpu_train_profile(), gpu_train_profile()
    for p, scale in ((a, 1.0), (b, 1.5)):
        p["kind"] = "trace"
        p["trace"]["per_step"] = [{"step": i, "step_ms": 100.0 * scale + i, "device_busy_ms": 60.0} for i in range(3)]
        p["categories"] = [{**c, "device_ms_per_step": c["device_ms_per_step"] * scale} for c in p["categories"]]
        p["metrics"]["step_ms"] = metric([100.0 * scale], "ms", "lower")  # a trace: one value
    r = compute_compare(a, b)
    assert all(m["verdict"] is None for m in r["metrics"])
    step = _row(r, "step_ms")
    assert step["ratio"] == pytest.approx(100.0 / 150.0, rel=0.02)  # oriented: slower = below 1
    assert any("not a trial" in n for n in r["notes"])
    gemm = next(c for c in r["categories"] if c["category"] == "gemm/conv")
    assert gemm["delta_ms"] == pytest.approx(20.0)
    assert [s["step_ms"] for s in r["per_step"]["after"]] == [150.0, 151.0, 152.0]


def test_what_if_remove_launches_host_bound() -> None:
    p = gpu_train_profile((100.0, 100.0, 100.0), util=60.0)
    step, device, launches = 100.0, 60.0, 500.0
    for n in (100, 300, 500):
        r = compute_what_if(p, remove_launches=n)
        expected = max(step - n * step / launches, device)  # never below the device bound
        assert r["predicted_step_ms"] == pytest.approx(expected)
    assert r["bound_after"] == "device"
    assert any("H = the whole step" in a for a in r["assumptions"])


def test_what_if_remove_category() -> None:
    p = gpu_train_profile((100.0, 100.0, 100.0), util=60.0)
    r = compute_what_if(p, remove_category="elementwise")
    dc = sum(k[4] for k in GPU_KERNELS if k[1] == "elementwise")
    nc = sum(k[5] for k in GPU_KERNELS if k[1] == "elementwise")
    assert r["predicted_step_ms"] == pytest.approx(max(100.0 - nc * 100.0 / 500.0, 60.0 - dc))
    with pytest.raises(UsageError) as exc:
        compute_what_if(p, remove_category="attention")
    assert "gemm/conv" in str(exc.value)


def test_what_if_device_bound_gain_is_device_time() -> None:
    p = gpu_train_profile((100.0, 100.0, 100.0), util=95.0)
    r = compute_what_if(p, remove_category="gemm/conv")
    # host clock (100 ms) still binds: removing device work cannot beat the host bound
    assert r["predicted_step_ms"] == pytest.approx(max(100.0 - 100 * 100.0 / 500.0, 95.0 - 40.0))


def test_what_if_cpu_profile() -> None:
    p = cpu_train_profile(50.0)
    self_ms = 30 + 6 + 2 + 1 + 1
    ops = 60 + 57 + 40 + 20 + 60
    r = compute_what_if(p, remove_launches=100)
    assert r["mode"] == "cpu"
    assert r["predicted_step_ms"] == pytest.approx(50.0 - 100 * self_ms / ops)
    # the 100 cheapest calls per call: conv2d (60 x 1/60 ms) then add (40 x 2/40 ms)
    assert r["predicted_step_ms_if_cheapest"] == pytest.approx(50.0 - (1.0 + 2.0))
    with pytest.raises(UsageError) as exc:
        compute_what_if(p, remove_category="elementwise")
    assert "no device kernels" in str(exc.value)
    with pytest.raises(UsageError):
        compute_what_if(p, remove_launches=10_000)


def test_what_if_host_time_excludes_sync_waits() -> None:
    p = gpu_train_profile((100.0, 100.0, 100.0), util=90.0)
    p["metrics"]["host_sync_ms"] = metric(30.0, "ms", None)
    r = compute_what_if(p, remove_launches=100)
    host = 100.0 - 30.0
    assert r["host_ms"] == pytest.approx(host)
    # device-bound (90 ms busy > 70 ms host): fewer launches do not help until host passes device
    assert r["predicted_step_ms"] == pytest.approx(100.0 - (90.0 - max(host - 100 * host / 500, 90.0)))
    assert r["bound_now"] == "device"
