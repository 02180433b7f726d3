"""Verdict rules (DESIGN.md section 6) on hand-built profiles, one per rule, plus fixtures."""

from __future__ import annotations

import gzip

import pytest

from helpers.paths import trace_path
from yoloprof.metrics.verdict import THRESHOLDS, decide
from yoloprof.profiles.model import empty_profile, metric
from yoloprof.traces.to_profile import profile_from_trace_bytes


def train(device="cuda", **values) -> dict:
    p = empty_profile("train", config={"device": device}, env={"device_type": device})
    for name, value in values.items():
        p["metrics"][name] = metric(value, "x", None)
    return p


def infer(device="cuda", stages=(1.0, 5.0, 1.0), **values) -> dict:
    p = train(device, **values)
    p["kind"] = "infer"
    total = sum(stages)
    p["stages"] = [{"stage": s, "ms": ms, "share": ms / total}
                   for s, ms in zip(("preprocess", "forward", "postprocess"), stages)]
    return p


GPU_OK = {"step_ms": 100.0, "device_util_pct": 90.0, "kernels_per_step": 500.0,
          "launches_per_step": 500.0, "mean_kernel_us": 180.0}


def test_memory_thrash_wins_over_everything():
    v = decide(train(**GPU_OK, malloc_calls_per_step=4.0, dataload_wall_ms=50.0))
    assert v["bound"] == "memory"
    assert v["evidence"]["malloc_calls_per_step"] == 4.0


def test_allocator_churn_is_a_share_of_op_time_not_a_count():
    share = THRESHOLDS["alloc_op_time_share"]
    churn = train(**GPU_OK, alloc_calls_per_step=500.0)
    churn["ops"] = [{"name": "aten::empty", "self_ms_per_step": 100 * share, "count_per_step": 500.0},
                    {"name": "aten::mm", "self_ms_per_step": 100 * (1 - share), "count_per_step": 10.0}]
    v = decide(churn)
    assert v["bound"] == "memory" and v["evidence"]["alloc_calls_per_step"] == 500.0
    many = train(**GPU_OK, alloc_calls_per_step=50000.0)
    many["ops"] = [{"name": "aten::empty", "self_ms_per_step": 1.0, "count_per_step": 50000.0},
                   {"name": "aten::mm", "self_ms_per_step": 99.0, "count_per_step": 10.0}]
    assert decide(many)["bound"] == "device"


def test_dataloader_at_twenty_percent():
    v = decide(train(**GPU_OK, dataload_wall_ms=20.0))
    assert v["bound"] == "dataloader"
    assert v["evidence"]["share"] == pytest.approx(0.2)
    assert decide(train(**GPU_OK, dataload_wall_ms=19.0))["bound"] == "device"


def test_device_bound_names_top_category():
    p = train(**GPU_OK)
    p["categories"] = [{"category": "elementwise", "device_ms_per_step": 10.0, "pct": 20.0},
                       {"category": "gemm/conv", "device_ms_per_step": 40.0, "pct": 80.0}]
    v = decide(p)
    assert v["bound"] == "device" and v["evidence"]["top_category"] == "gemm/conv"
    assert "gemm/conv" in v["why"]


def test_host_bound_below_eighty():
    p = train(**{**GPU_OK, "device_util_pct": 79.9, "mean_kernel_us": 6.0})
    p["kernels"] = [{"name": "k", "ms_per_step": 3.0, "count_per_step": 500.0}]  # 6 us each
    v = decide(p)
    assert v["bound"] == "host"
    assert v["evidence"]["launches_per_step"] == 500.0 and v["evidence"]["mean_kernel_us"] == 6.0
    assert "launch-bound" in v["why"]


def test_gpu_without_kernels_is_unknown():
    v = decide(train(step_ms=100.0, kernels_per_step=0.0))
    assert v["bound"] == "unknown"
    assert decide(train(step_ms=100.0))["bound"] == "unknown"


def test_inference_postprocess_dominates():
    v = decide(infer(stages=(1.0, 3.0, 4.0), **GPU_OK))
    assert v["bound"] == "postprocess"
    assert v["evidence"]["share"] == pytest.approx(0.5)
    # Share is of the three stages: 2.1 / 4.6 = 46%, and longer than forward.
    assert decide(infer(stages=(0.5, 2.0, 2.1), **{**GPU_OK, "step_ms": 10.0}))["bound"] == "postprocess"
    # Postprocess beats forward but holds 17% of the call; preprocess (69%) is what dominates.
    assert decide(infer(stages=(5.0, 1.0, 1.2), **GPU_OK))["bound"] == "preprocess"
    assert decide(infer(stages=(1.0, 8.0, 1.5), **GPU_OK))["bound"] == "device"


def test_inference_preprocess_dominates():
    assert decide(infer(stages=(5.0, 4.0, 1.0), **GPU_OK))["bound"] == "preprocess"


def _op(name, calls, us_per_call, phase="forward"):
    return {"name": name, "phase": phase, "self_ms_per_step": calls * us_per_call / 1000.0,
            "total_ms_per_step": calls * us_per_call / 1000.0, "count_per_step": float(calls)}


def test_cpu_rules():
    cpu = train("cpu", step_ms=50.0)
    cpu["ops"] = [_op("aten::add", 4, 5.0)]
    v = decide(cpu)
    assert v["bound"] == "framework-overhead" and v["evidence"]["tiny_op_time_share"] == 1.0
    cpu["ops"] = [_op("aten::add", 4, 10_000.0)]
    assert decide(cpu)["bound"] == "compute"
    cpu["metrics"]["dataload_wall_ms"] = metric(30.0, "ms", "lower")
    assert decide(cpu)["bound"] == "dataloader"
    assert decide(infer("cpu", stages=(1.0, 2.0, 6.0), step_ms=9.0))["bound"] == "postprocess"


def test_cpu_rule_weighs_time_not_counts():
    """The demo's shape: thousands of 3 us casts beside a few heavy convolutions. Hand-worked:
    op self time = 24 + 30 + 16 = 70 ms; casts are 24/70 = 34% (< 50%), so compute-bound, although
    the mean self time over all 8080 calls (70 ms / 8080 = 8.7 us) is under the 10 us tiny mark."""
    cpu = train("cpu", step_ms=80.0)
    cpu["ops"] = [_op("aten::_to_copy", 8000, 3.0), _op("aten::convolution_backward", 40, 750.0, "backward"),
                  _op("aten::mkldnn_convolution", 40, 400.0)]
    v = decide(cpu)
    assert v["bound"] == "compute"
    assert v["evidence"]["tiny_op_time_share"] == pytest.approx(24 / 70, abs=1e-4)
    assert [o["name"] for o in v["evidence"]["top_ops"]][:2] == ["aten::convolution_backward", "aten::_to_copy"]
    assert "aten::convolution_backward 43%" in v["why"]  # 30 / 70
    # The same ops with the casts three times as many: 72 / 118 = 61% of op time -> overhead.
    cpu["ops"][0] = _op("aten::_to_copy", 24000, 3.0)
    v = decide(cpu)
    assert v["bound"] == "framework-overhead"
    assert v["evidence"]["tiny_ops"][0] == {"name": "aten::_to_copy", "pct": round(100 * 72 / 118, 1)}


def test_cpu_allocation_churn_is_memory():
    cpu = train("cpu", step_ms=20.0)
    cpu["ops"] = [_op("aten::empty", 3000, 2.0), _op("aten::add", 10, 300.0)]  # 6 ms of 9 ms = 67%
    v = decide(cpu)
    assert v["bound"] == "memory" and v["evidence"]["alloc_op_time_share"] == pytest.approx(6 / 9, abs=1e-4)
    assert "aten::empty" in v["why"]


def test_launch_bound_wording_from_time_share_of_small_kernels():
    """Mean kernel time says nothing about where time goes: 900 x 5 us kernels (4.5 ms) beside
    2 x 10 ms kernels (20 ms) have a mean of 27 us, yet small kernels are 18% of kernel time:
    host-bound, not launch-bound. With 9000 of them (45 ms of 65 ms = 69%) it is launch-bound."""
    p = train(**{**GPU_OK, "device_util_pct": 40.0, "mean_kernel_us": 27.0})
    p["kernels"] = [{"name": "tiny_kernel", "short_name": "tiny", "ms_per_step": 4.5, "count_per_step": 900.0},
                    {"name": "big_gemm", "short_name": "gemm", "ms_per_step": 20.0, "count_per_step": 2.0}]
    v = decide(p)
    assert v["bound"] == "host" and not v["evidence"]["launch_bound"]
    assert v["evidence"]["small_kernel_time_share"] == pytest.approx(4.5 / 24.5, abs=1e-4)
    p["kernels"][0].update(ms_per_step=45.0, count_per_step=9000.0)
    v = decide(p)
    assert v["evidence"]["launch_bound"] and "launch-bound" in v["why"] and "tiny" in v["why"]


def test_communication_bound_when_collectives_carry_device_time():
    p = train(**GPU_OK)
    p["categories"] = [{"category": "communication", "device_ms_per_step": 60.0, "pct": 60.0},
                       {"category": "gemm/conv", "device_ms_per_step": 40.0, "pct": 40.0}]
    assert decide(p)["bound"] == "communication"
    p["categories"][0]["device_ms_per_step"] = 30.0  # no longer the largest category: device-bound
    assert decide(p)["bound"] == "device"


def test_no_timing_gives_none():
    assert decide(empty_profile("train")) is None


@pytest.mark.parametrize("name, bound", [
    ("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "device"),
    ("nccl_data.json.gz", "host"),
    ("mi250_minitoy_train_ROCm6_2_kineto.json.gz", "host"),
])
def test_fixture_verdicts(name, bound):
    profile = profile_from_trace_bytes(gzip.decompress(trace_path(name).read_bytes()), name)
    v = profile["verdict"]
    assert v["bound"] == bound
    util = profile["metrics"]["device_util_pct"]["value"]
    assert v["evidence"]["device_util_pct"] == pytest.approx(util, abs=1e-3)


def test_gpu_trace_without_kernels_fixture_is_unknown():
    import json
    doc = json.loads(gzip.decompress(trace_path("nccl_data.json.gz").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    profile = profile_from_trace_bytes(json.dumps(doc).encode(), "no-kernels")
    assert profile["verdict"]["bound"] == "unknown"
    assert any("did not attach" in w for w in profile["warnings"])
    assert profile["metrics"]["device_util_pct"]["value"] is None


def test_docs_state_every_threshold_as_the_code_does():
    """docs/readers.md's rule table quotes each threshold as `key` = value: it must be the code's."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "readers.md").read_text()
    quoted = {k: float(v) for k, v in re.findall(r"`(\w+)` = ([0-9.]+)", text)}
    assert set(THRESHOLDS) <= set(quoted), set(THRESHOLDS) - set(quoted)
    for key, value in THRESHOLDS.items():
        assert quoted[key] == pytest.approx(value), key
