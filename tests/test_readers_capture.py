"""One capture's detail views against independent references: per-step times against the raw
`ProfilerStep#N` spans, the step breakdown, communication overlap and Tensor Core share against
torch-tb-profiler 0.4.3's own figures (obtained by running it on the fixtures), the kernel table by
launch against a plain-Python grouping of the raw kernels, the memory peak on a hand-made
trace, and the plugin's recommendations on its sample. Each fixture is read once per module."""

from __future__ import annotations

import copy
import gzip
import json
from collections import defaultdict
from functools import lru_cache

import pytest

from helpers.paths import REPO, run_main, trace_path
from yoloprof.readers.advice import recommendations
from yoloprof.readers.detail import compute_detail
from yoloprof.readers.load import load_any
from yoloprof.readers.steps import compute_steps

TBPLUGIN = REPO.parent / "shared" / "fixtures" / "tbplugin"
RESNET = TBPLUGIN / "resnet50_num_workers_0_worker0.1623143566756.pt.trace.json.gz"
ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
# torch-tb-profiler 0.4.3, first step (us): the breakdown in ROLES order, the step, and
# (computation, communication, overlap) of its communication view.
PLUGIN_FIRST_STEP = {
    "nccl_data.json.gz": ([48670.157, 647.206, 121.574, 356.044, 0, 0, 146944.746, 25702.464], 222442.191,
                          (48670.157, 12440.937, 12084.893)),
    RESNET.name: ([98420, 1654, 88, 0, 9789, 46723, 13876, 1222], 171772, (98420, 0, 0)),
}


def _path(name: str):
    if name == RESNET.name:
        if not RESNET.is_file():
            pytest.skip("the plugin's sample trace is not available")
        return RESNET
    return trace_path(name)


@lru_cache(maxsize=None)
def raw(name: str) -> list[dict]:
    return json.loads(gzip.decompress(_path(name).read_bytes()))["traceEvents"]


@lru_cache(maxsize=None)
def detail(name: str) -> dict:
    return compute_detail(gzip.decompress(_path(name).read_bytes()), top=0)


def test_per_step_times_equal_the_profilerstep_spans():
    name = "nccl_data.json.gz"
    spans = sorted((e["ts"], e["dur"], int(e["name"].split("#")[1])) for e in raw(name)
                   if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
                   and e["name"].startswith("ProfilerStep#"))
    steps = compute_steps(load_any(_path(name)), detail(name)["gpu"]["steps"])
    assert [r["step"] for r in steps["steps"]] == [s for _, _, s in spans]
    assert [r["step_ms"] for r in steps["steps"]] == pytest.approx([d / 1000 for _, d, _ in spans], abs=1e-6)
    slowest = max(spans, key=lambda s: s[1])[2]
    assert steps["slowest"] == slowest and [r["step"] for r in steps["steps"] if r["slowest"]] == [slowest]
    assert all(r["devices"][0]["sm_efficiency_pct"] is not None for r in steps["steps"])
    launched = defaultdict(int)  # kernels per step, by their launch's time on the host
    runtime = {e["args"]["correlation"]: e["ts"] for e in raw(name)
               if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    for e in raw(name):
        if e.get("cat") == "kernel" and e["args"].get("correlation") in runtime:
            t = runtime[e["args"]["correlation"]]
            for s0, d, s in spans:
                launched[s] += s0 <= t <= s0 + d
    assert [r["kernels"] for r in steps["steps"]] == [launched[s] for _, _, s in spans]


@pytest.mark.parametrize("name", list(PLUGIN_FIRST_STEP))
def test_breakdown_and_overlap_equal_the_plugin(name):
    roles, total, (comp, comm, over) = PLUGIN_FIRST_STEP[name]
    first = detail(name)["breakdown"]["steps"][0]
    assert [first[f"{r}_ms"] * 1000 for r in ROLES] == pytest.approx(roles, abs=0.1)
    assert first["total_ms"] * 1000 == pytest.approx(total, abs=0.1)
    o = first["overlap"]
    assert (o["computation_ms"] * 1000, o["communication_ms"] * 1000, o["overlap_ms"] * 1000) == \
        pytest.approx((comp, comm, over), abs=0.1)


def test_tensor_core_eligible_share_equals_the_plugin():
    tc = detail(RESNET.name)["tensor_cores"]
    assert tc["eligible_pct"] == pytest.approx(67.61517500579322, abs=0.01)  # the plugin: 68%
    assert tc["tensorcore_pct"] == 0.0 and "aten::cudnn_convolution" in tc["eligible_ops"]


def test_launch_table_against_raw_kernels():
    """Summed over calling ops, the launch groups equal a plain grouping of the raw kernels by
    (name, grid, block, registers, shared memory)."""
    want = defaultdict(float)
    for e in raw(RESNET.name):
        if e.get("ph") == "X" and e.get("cat") == "Kernel":
            a = e["args"]
            want[(e["name"], str(a.get("grid")), str(a.get("block")), a.get("registers per thread"),
                  a.get("shared memory"))] += e["dur"]
    got = defaultdict(float)
    for r in detail(RESNET.name)["launches"]:
        got[(r["name"], r["grid"], r["block"], r["registers_per_thread"], r["shared_memory"])] += r["total_ms"] * 1000
    assert set(got) == set(want)
    assert all(got[k] == pytest.approx(v, abs=1e-6) for k, v in want.items())
    assert all(r["op"] != "(no op)" for r in detail(RESNET.name)["launches"])  # old traces link every kernel


def _x(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _mem(ts, nbytes, total, reserved):
    return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "s": "t",
            "args": {"Device Type": 1, "Device Id": 0, "Bytes": nbytes, "Total Allocated": total,
                     "Total Reserved": reserved}}


def test_memory_timeline_peak_is_attributed_to_its_op_and_module():
    events = [_x("ProfilerStep#1", "cpu_op", 0, 100), _x("nn.Module: Net_0", "python_function", 5, 80),
              _x("aten::conv2d", "cpu_op", 10, 30), _x("aten::empty", "cpu_op", 12, 4),
              _x("aten::relu", "cpu_op", 50, 10),
              _mem(13, 1 << 20, 3 << 20, 4 << 20), _mem(55, 1 << 21, 5 << 20, 8 << 20),
              _mem(70, -(1 << 21), 3 << 20, 8 << 20)]
    (dev,) = compute_detail(json.dumps({"traceEvents": events}).encode())["memory"]
    assert dev["device"] == "cuda:0" and [p[1] for p in dev["points"]] == [3.0, 5.0, 3.0]
    assert dev["peak"] == {"t_ms": 0.055, "allocated_mib": 5.0, "reserved_mib": 8.0, "op": "aten::relu",
                           "module": "Net_0"}


def test_cli_per_step_and_by_launch(tmp_path):
    name = "nccl_data.json.gz"
    path = _path(name)
    out = run_main("summary", path, "--per-step", "--json")
    assert out.returncode == 0, out.stderr
    steps = json.loads(out.stdout)["steps"]["steps"]
    spans = [e["dur"] / 1000 for e in raw(name) if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    assert [r["step_ms"] for r in steps] == pytest.approx(spans, abs=1e-6)  # in time order in the file
    out = run_main("kernels", path, "--by-launch", "--top", "3")
    assert out.returncode == 0 and "calling op" in out.stdout and "est. SM efficiency       16.9%" in out.stdout
    profile = tmp_path / "profile.json"  # a profile without its trace beside it: a usage error, one line
    saved = load_any(path)
    saved["trace"]["file"] = None  # moved away from its trace
    profile.write_text(json.dumps(saved))
    out = run_main("kernels", profile, "--by-launch")
    assert out.returncode == 2 and "trace file" in out.stderr and "Traceback" not in out.stderr
    assert run_main("summary", profile, "--per-step").returncode == 0  # n/a per step, not an error


def test_the_plugins_rules_agree_with_the_plugin_on_its_sample():
    """torch-tb-profiler 0.4.3 on its ResNet-50 sample recommends DataLoader workers (22.9% of the
    step) and AMP (68% of the kernel time in Tensor-Core-eligible ops), not a larger batch (63.6%)."""
    profile = load_any(_path(RESNET.name))
    rules = {r["rule"]: r for r in recommendations(profile, detail(RESNET.name))["recommendations"]}
    assert rules["dataloader"]["evidence"]["dataloader_share_pct"] == pytest.approx(22.9, abs=0.05)
    assert round(rules["amp"]["evidence"]["eligible_pct"]) == 68
    assert "low_utilization" not in rules
    quiet = copy.deepcopy(detail(RESNET.name))
    quiet["tensor_cores"]["tensorcore_pct"] = 12.0  # Tensor Cores already in use: no AMP advice
    assert "amp" not in {r["rule"] for r in recommendations(profile, quiet)["recommendations"]}


def test_low_utilization_fires_on_the_trace_and_stops_once_its_kernels_keep_the_gpu_busy():
    """nccl_data's GPU is 23% busy: the advice fires. The same trace with every kernel 4x as long
    (the edit of the GPU verdict scenarios) keeps the GPU busy over half the steps: it must not."""
    from helpers.verdicts.gpu_traces import scale_kernels

    name = "nccl_data.json.gz"
    profile = load_any(_path(name))
    assert "low_utilization" in {r["rule"] for r in recommendations(profile, detail(name))["recommendations"]}
    busy = compute_detail(json.dumps(scale_kernels(4.0)({"traceEvents": copy.deepcopy(raw(name))})).encode())
    assert busy["gpu"]["overall"][0]["gpu_util_pct"] > 50
    assert "low_utilization" not in {r["rule"] for r in recommendations(profile, busy)["recommendations"]}
