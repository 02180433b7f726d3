"""Est. SM efficiency, est. achieved occupancy and GPU utilisation against torch-tb-profiler 0.4.3.

References (independent of yoloprof's code): the figures the plugin computes on the fixture
traces (issue 27 and the tbplugin README, obtained by running the plugin), the plugin's own test
data for its trace-view counters, and a hand-worked trace. Each fixture is parsed once."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

import pytest

from helpers.paths import REPO, trace_path
from yoloprof.readers.gpu_metrics import compute_gpu_metrics

TBPLUGIN = REPO.parent / "shared" / "fixtures" / "tbplugin"
RESNET = "resnet50_num_workers_0_worker0.1623143566756.pt.trace.json.gz"
# trace -> (est. SM efficiency %, est. achieved occupancy %) as the plugin shows them
PLUGIN = {"nccl_data.json.gz": (16.87, 35.31), "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": (94.60, 46.43),
          "df_index_resolver.json.gz": (34.12, 31.95), "rank0.json.gz": (17.03, 12.61),
          "trace_diff_control.json.gz": (59.21, 32.46), "trace_diff_test.json.gz": (70.48, 35.85),
          RESNET: (62.65, 49.14)}


def _path(name: str):
    if name == RESNET or name.startswith("gpu_metrics"):
        path = TBPLUGIN / name
        if not path.is_file():
            pytest.skip(f"{name} is not available")
        return path
    return trace_path(name)


@lru_cache(maxsize=None)
def metrics(name: str, counters: bool = False) -> dict:
    data = _path(name).read_bytes()
    return compute_gpu_metrics(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data, counters=counters)


@pytest.mark.parametrize("name", list(PLUGIN))
def test_overall_equals_the_plugin(name):
    (dev,) = metrics(name)["overall"]  # one GPU with kernels in each fixture
    sm, occ = PLUGIN[name]
    assert dev["sm_efficiency_pct"] == pytest.approx(sm, abs=0.05)
    assert dev["occupancy_pct"] == pytest.approx(occ, abs=0.05)


def test_counters_reproduce_the_plugins_expected_timelines():
    """The plugin's test writes its expected counters from hand-scaled values ("Real data values
    are 1/100 of these" for utilisation, "1/10" for SM efficiency): the same points, the same
    times, the values scaled back."""
    got = metrics("gpu_metrics_input.json.gz", counters=True)["counters"]
    expected = [e for e in json.loads(gzip.decompress(_path("gpu_metrics_expected.json.gz").read_bytes()))
                ["traceEvents"] if e.get("ph") == "C"]
    assert [g["name"] for g in got] == [e["name"] for e in expected]
    assert [g["ts"] for g in got] == pytest.approx([e["ts"] for e in expected], abs=1e-3)
    scale = {"GPU 0 Utilization": 100.0, "GPU 0 Est. SM Efficiency": 10.0}
    for g, e in zip(got, expected):
        (value,), (want,) = g["args"].values(), e["args"].values()
        baseline = g is got[0] or g["ts"] == got[0]["ts"] and value in (0, 1) and want in (0, 1)
        assert value * (1.0 if baseline else scale[g["name"]]) == pytest.approx(want, abs=1e-9)


def test_na_with_reason_without_the_args():
    (dev,) = metrics("mi250_minitoy_train_ROCm6_2_kineto.json.gz")["overall"]
    assert dev["sm_efficiency_pct"] is None and "blocks per SM" in dev["sm_efficiency_na"]
    assert dev["occupancy_pct"] is None and "occupancy" in dev["occupancy_na"]
    assert dev["gpu_util_pct"] > 0


def _x(name, cat, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def test_hand_worked_trace_overall_and_per_step():
    """Step [0, 100) with kernels [10, 30) at 0.5 blocks/SM, 40% and [20, 40) at 0.75, 60%:
    SM efficiency (10*0.5 + 10*min(1.25, 1) + 10*0.75) / 100 = 22.5%; occupancy
    (20*40 + 20*60) / 40 = 50%; utilisation 30/100. A second step [100, 200) without kernels (an
    op in it keeps the recorded window to its end)."""
    events = [_x("ProfilerStep#1", "cpu_op", 0, 100), _x("ProfilerStep#2", "cpu_op", 100, 100),
              _x("k1", "kernel", 10, 20, device=0, stream=7, **{"blocks per SM": 0.5,
                 "est. achieved occupancy %": 40, "grid": [1, 1, 1], "block": [64, 1, 1]}),
              _x("k2", "kernel", 20, 20, device=0, stream=7, **{"blocks per SM": 0.75,
                 "est. achieved occupancy %": 60}), _x("aten::add", "cpu_op", 150, 50)]
    out = compute_gpu_metrics(json.dumps({"traceEvents": events}).encode())
    (dev,) = out["overall"]
    assert dev["sm_efficiency_pct"] == pytest.approx(22.5 / 2)  # the span is both steps: 200 us
    assert dev["occupancy_pct"] == pytest.approx(50.0)
    assert dev["gpu_util_pct"] == pytest.approx(15.0)
    first, second = out["steps"]
    assert (first["step"], first["step_ms"], second["start_ms"]) == (1, 0.1, 0.1)
    assert first["devices"][0]["sm_efficiency_pct"] == pytest.approx(22.5)
    assert first["devices"][0]["gpu_util_pct"] == pytest.approx(30.0)
    assert second["devices"][0]["sm_efficiency_pct"] is None and second["devices"][0]["occupancy_pct"] is None
    k1 = next(k for k in out["kernels"] if k["name"] == "k1")
    assert (k1["mean_blocks_per_sm"], k1["mean_occupancy_pct"], k1["calls"]) == (0.5, 40.0, 1)


def test_hand_worked_timelines():
    """The same two kernels over 10-us buckets (the trace spans 200 us: 20 buckets): utilisation
    1 in [10, 40); SM efficiency 0.5, 1, 0.75 in [10, 20), [20, 30), [30, 40); occupancy 40, 50
    (both kernels 10 us each), 60; nothing (None) where no kernel runs."""
    from yoloprof.readers.detail import compute_detail

    events = [_x("ProfilerStep#1", "cpu_op", 0, 200),
              _x("k1", "kernel", 10, 20, device=0, **{"blocks per SM": 0.5, "est. achieved occupancy %": 40}),
              _x("k2", "kernel", 20, 20, device=0, **{"blocks per SM": 0.75, "est. achieved occupancy %": 60})]
    (t,) = compute_detail(json.dumps({"traceEvents": events}).encode())["timeline"]
    assert len(t["t_ms"]) == 20 and t["t_ms"][1] == pytest.approx(0.010)
    assert t["util_pct"][:5] == pytest.approx([0, 100, 100, 100, 0])
    assert t["sm_efficiency_pct"][:5] == pytest.approx([0, 50, 100, 75, 0])
    assert t["occupancy_pct"][:5] == [None, pytest.approx(40), pytest.approx(50), pytest.approx(60), None]


def test_cpu_trace_has_no_gpu_figures():
    events = [_x("ProfilerStep#1", "cpu_op", 0, 100), _x("aten::add", "cpu_op", 10, 5)]
    out = compute_gpu_metrics(json.dumps({"traceEvents": events}).encode())
    assert out["overall"] == [] and out["kernels"] == [] and out["notes"]


def test_a_kernel_name_that_is_not_utf8_keeps_the_args():
    """The parser repairs such names (U+FFFD); the second pass over the kernels' args must too."""
    events = [_x("ProfilerStep#1", "cpu_op", 0, 100), _x("kNAME", "kernel", 10, 20, device=0, **{
        "blocks per SM": 0.5, "est. achieved occupancy %": 50})]
    data = json.dumps({"traceEvents": events}).encode().replace(b"kNAME", b"k\xff")
    (dev,) = compute_gpu_metrics(data)["overall"]
    assert (dev["sm_efficiency_pct"], dev["occupancy_pct"]) == (pytest.approx(10.0), pytest.approx(50.0))
