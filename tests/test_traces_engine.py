"""The trace engine on the real GPU fixture traces, against numbers computed here independently
with plain Python over the JSON (json.load + loops, a sort-and-merge union)."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest

from helpers.paths import trace_path
from yoloprof.traces.analyze import analyze_trace_file
from yoloprof.traces.to_profile import profile_from_trace_bytes

FIXTURES = ["nccl_data.json.gz", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "rank0.json.gz",
            "benchmark_result_2869224_1695835535_trace.json.gz", "triton_example.json.gz",
            "mi250_minitoy_train_ROCm6_2_kineto.json.gz", "trace_diff_control.json.gz",
            "trace_diff_test.json.gz"]
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "yoloprof" / "profiles"
                     / "profile.schema.json").read_text())
DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")


@lru_cache(maxsize=None)
def raw_events(name: str) -> list[dict]:
    return json.loads(gzip.decompress(trace_path(name).read_bytes()))["traceEvents"]


@lru_cache(maxsize=None)
def analysis(name: str):
    return analyze_trace_file(trace_path(name))


def plain_union(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def plain_steps(events: list[dict]) -> list[tuple[float, float]]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                  and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")))


def plain_device_by_step(events: list[dict]) -> dict[int, list[dict]]:
    """Device events grouped by the step their launch (same correlation) is in."""
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    steps = plain_steps(events)
    out: dict[int, list[dict]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in DEVICE:
            t = launch_ts.get(e["args"].get("correlation"), e["ts"])
            for k, (lo, hi) in enumerate(steps):
                if lo <= t < hi:
                    out[k].append(e)
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_gives_a_valid_profile(name):
    profile = profile_from_trace_bytes(gzip.decompress(trace_path(name).read_bytes()), name)
    jsonschema.validate(profile, SCHEMA)
    assert profile["kind"] == "trace"
    assert profile["trace"]["steps_analyzed"] >= 1
    assert profile["verdict"]["bound"] in {"device", "communication", "host", "memory", "dataloader", "unknown"}
    assert profile["kernels"], "every fixture has kernels"
    assert profile["env"]["device_count"] >= 1


def test_nccl_busy_time_is_the_union_per_step():
    events = raw_events("nccl_data.json.gz")
    by_step = plain_device_by_step(events)
    a = analysis("nccl_data.json.gz")
    assert a.steps.ids == [4, 5, 6]
    for k in range(3):
        expected = plain_union([(e["ts"], e["ts"] + e["dur"]) for e in by_step[k]])
        assert a.busy[k] == pytest.approx(expected, rel=1e-6, abs=0.01)
        summed = sum(e["dur"] for e in by_step[k])
        assert summed > expected  # two streams overlap: a plain sum would count twice


def test_nccl_phase_device_times_add_up_to_busy():
    a = analysis("nccl_data.json.gz")
    assert set(a.phase_names) >= {"forward", "backward", "optimizer", "other"}
    assert a.phase_dev.sum(axis=1) == pytest.approx(a.busy, rel=1e-9)
    # Each phase's exclusive share is at most the union of that phase's own kernels.
    events = raw_events("nccl_data.json.gz")
    a_phase = {p: k for k, p in enumerate(a.phase_names)}
    for name in ("forward", "backward", "optimizer"):
        assert a.phase_dev[:, a_phase[name]].min() >= 0
    assert a.phase_dev[:, a_phase["backward"]].mean() > a.phase_dev[:, a_phase["forward"]].mean()
    # Launch-side phases: backward ranges cover the autograd thread's launches.
    fwd = [e for e in events if e.get("name") == "## forward ##"]
    assert len(fwd) == 3


def test_nccl_kernel_totals_by_name():
    events = raw_events("nccl_data.json.gz")
    by_step = plain_device_by_step(events)
    expected: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for evs in by_step.values():
        for e in evs:
            expected[e["name"]] += e["dur"] / 1000 / 3
            counts[e["name"]] += 1
    got: dict[str, float] = defaultdict(float)
    got_n: dict[str, float] = defaultdict(float)
    for row in analysis("nccl_data.json.gz").profile_sections()["kernels"]:
        got[row["name"]] += row["ms_per_step"]
        got_n[row["name"]] += row["count_per_step"] * 3
    assert set(got) == set(expected)
    for name, ms in expected.items():
        assert got[name] == pytest.approx(ms, rel=1e-9)
        assert got_n[name] == pytest.approx(counts[name])


def test_nccl_categories_sum_device_time():
    sections = analysis("nccl_data.json.gz").profile_sections()
    cats = {c["category"]: c for c in sections["categories"]}
    assert "communication" in cats and "gemm/conv" in cats
    assert sum(c["pct"] for c in cats.values()) == pytest.approx(100.0)
    kernel_total = sum(k["ms_per_step"] for k in sections["kernels"])
    assert sum(c["device_ms_per_step"] for c in cats.values()) == pytest.approx(kernel_total)


@pytest.mark.slow
def test_cuda_graph_launch_joins_many_kernels():
    events = raw_events("rank0.json.gz")
    graph_corr = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    per_launch: dict[int, int] = defaultdict(int)
    for e in events:
        if e.get("cat") in DEVICE and e["args"].get("correlation") in graph_corr:
            per_launch[e["args"]["correlation"]] += 1
    assert max(per_launch.values()) > 1
    a = analysis("rank0.json.gz")
    from yoloprof.traces.correlate import join
    from yoloprof.traces.parse import parse_trace_bytes
    ev = parse_trace_bytes(gzip.decompress(trace_path("rank0.json.gz").read_bytes()))
    j = join(ev)
    joined: dict[int, int] = defaultdict(int)
    for h in j.host_idx[j.host_idx >= 0].tolist():
        if ev.strings[ev.name[h]] == "cudaGraphLaunch":
            joined[int(ev.corr[h])] += 1
    assert joined == dict(per_launch)
    # 705 kernels have no launch event: counted, reported, and not dropped.
    assert int((j.orphan & (ev.cat[j.device_idx] == 6)).sum()) == 705
    assert any("no launch event" in w for w in a.warnings)
    assert a.orphans_in_steps > 0


def test_triton_driver_launch_joins():
    a = analysis("triton_example.json.gz")
    rows = a.profile_sections()["kernels"]
    assert [r["name"] for r in rows] == ["triton_poi_fused_add_cos_sin_0"]
    assert a.launches.sum() == 1  # cuLaunchKernel counted as a launch
    assert a.orphans_in_steps == 0
    assert any("past the end" in w for w in a.warnings)


def test_mi250_hip_launches_join():
    events = raw_events("mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    hip = [e for e in events if e.get("name") in ("hipLaunchKernel", "hipExtModuleLaunchKernel")]
    a = analysis("mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert a.launches.sum() == len(hip) == 14
    assert a.kernels.sum() == 14
    sections = a.profile_sections()
    assert {r["category"] for r in sections["kernels"]} >= {"gemm/conv", "elementwise"}
    assert any(r["tensorcore"] for r in sections["kernels"])  # Tensile MFMA (MI16x16x1)


def test_alexnet_without_steps_uses_whole_trace():
    a = analysis("benchmark_result_2869224_1695835535_trace.json.gz")
    assert a.steps.whole_trace and a.n_steps == 1
    assert any("no ProfilerStep" in w for w in a.warnings)
    events = raw_events("benchmark_result_2869224_1695835535_trace.json.gz")
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert a.kernels.sum() == len(kernels)


@pytest.mark.slow
def test_df_index_memory_events():
    events = raw_events("df_index_resolver.json.gz")
    mem = [e for e in events if e.get("name") == "[memory]"]
    peak = max(e["args"]["Total Allocated"] for e in mem if e["args"]["Device Type"] == 1) / 2**20
    a = analysis("df_index_resolver.json.gz")
    metrics = a.profile_sections()["metrics"]
    assert metrics["peak_mem_mb"]["value"] == pytest.approx(peak)
    assert metrics["alloc_calls_per_step"]["value"] > 0
    steps = plain_steps(events)
    in_steps = sum(1 for e in mem if any(lo <= e["ts"] < hi for lo, hi in steps) and e["args"]["Bytes"])
    assert metrics["alloc_calls_per_step"]["value"] == pytest.approx(in_steps / len(steps))


def test_metrics_are_one_trial():
    metrics = analysis("nccl_data.json.gz").profile_sections()["metrics"]
    for name, entry in metrics.items():
        assert entry["n"] in (0, 1), name
    assert metrics["launches_per_step"]["value"] == 900
    assert 0 < metrics["device_util_pct"]["value"] <= 100


def test_ops_self_time_never_exceeds_total():
    for row in analysis("nccl_data.json.gz").profile_sections()["ops"]:
        assert row["self_ms_per_step"] <= row["total_ms_per_step"] + 1e-9
