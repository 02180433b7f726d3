"""Op self time as torch counts it, on real GPU traces: runtime/driver calls an op makes
(`cudaLaunchKernel`, `cudaMalloc`, `hipLaunchKernel`, `cuLaunchKernel`...) are its children, so
they are not its self time, and they are rows of their own, as in `key_averages()`.

The reference is tests/helpers/torch_rule.py: torch's tree and self time recomputed in plain
Python from the raw JSON. Figures from elsewhere: the tbplugin README (torch-tb-profiler 0.4.3 on
its ResNet-50 sample: `aten::add_` self 55,245 us over 2,994 calls, total 83,883 us) and the
MI250 trace's `aten::add_` (65.8 us self; 6,613.6 us inclusive, nearly all a nested
`hipLaunchKernel`). The large fixtures run in bench/bench_op_self_time.py (same comparison).
"""

from __future__ import annotations

import bisect
import gzip
from collections import defaultdict

import pytest

from helpers.paths import REPO, TRACES
from helpers.torch_rule import build, by_name, raw_events
from yoloprof.traces.analyze import analyze_events
from yoloprof.traces.parse import parse_trace_bytes

TBPLUGIN = REPO.parent / "shared" / "fixtures" / "tbplugin"
RESNET = TBPLUGIN / "resnet50_num_workers_0_worker0.1623143566756.pt.trace.json.gz"
SMALL = ["mi250_minitoy_train_ROCm6_2_kineto.json.gz", "triton_example.json.gz",
         "benchmark_result_2869224_1695835535_trace.json.gz", "nccl_data.json.gz"]
ROW_CATS = {"cpu_op", "cuda_runtime", "cuda_driver"}


def _path(p):
    if not p.is_file():
        pytest.skip(f"fixture {p.name} is not available")
    return p


def compare(path, nodes=None):
    """(ours, reference, analysis): name -> [calls, self us, total us] over the rows yoloprof lists;
    `nodes`: the reference tree, when the caller built it already."""
    ev = parse_trace_bytes(gzip.decompress(path.read_bytes()))
    a = analyze_events(ev, str(path))
    ours: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for r in a.op_rows:
        o = ours[r["name"]]
        o[0] += r["count"]
        o[1] += r["self_us"]
        o[2] += r["total_us"]
    starts, ends = a.steps.start.tolist(), a.steps.end.tolist()

    def in_rows(n):
        t = n.ts - ev.t0
        k = bisect.bisect_right(starts, t) - 1
        return (n.cat in ROW_CATS and not n.name.startswith("ProfilerStep#")
                and k >= 0 and t < ends[k])
    return dict(ours), by_name(nodes if nodes is not None else build(raw_events(path)), in_rows), a


def assert_same(ours, ref):
    assert set(ours) == set(ref)
    for name, (calls, self_us, total_us) in ref.items():
        assert ours[name][0] == calls, name
        assert ours[name][1] == pytest.approx(self_us, rel=1e-3, abs=1e-3), name
        assert ours[name][2] == pytest.approx(total_us, rel=1e-3, abs=1e-3), name


@pytest.mark.parametrize("name", SMALL)
def test_self_time_is_torchs_on_real_traces(name):
    ours, ref, a = compare(_path(TRACES / name))
    assert_same(ours, ref)
    kinds = {r["kind"] for r in a.op_rows}
    assert {"op", "runtime"} <= kinds  # API calls are rows of their own


def test_mi250_add_self_time_leaves_out_its_hip_launch():
    ours, _, a = compare(_path(TRACES / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    assert ours["aten::add_"][1] == pytest.approx(65.8, abs=0.05)
    assert ours["aten::add_"][2] == pytest.approx(6613.6, abs=0.05)
    assert any(r["name"] == "hipLaunchKernel" and r["kind"] == "runtime" for r in a.op_rows)


def test_triton_driver_launch_is_a_driver_row():
    _, _, a = compare(_path(TRACES / "triton_example.json.gz"))
    assert any(r["name"] == "cuLaunchKernel" and r["kind"] == "driver" for r in a.op_rows) or \
        not a.n_steps


def test_tbplugin_resnet_matches_torch_and_the_plugin():
    """2021 category names (`Operator`, `Runtime`); the whole trace is one ProfilerStep-less or
    stepped window, and the plugin's figure is over the whole trace."""
    path = _path(RESNET)
    nodes = build(raw_events(path))
    ours, ref, a = compare(path, nodes)
    assert_same(ours, ref)
    whole = by_name(nodes, lambda n: n.name == "aten::add_")["aten::add_"]
    assert whole == [2994, pytest.approx(55245.0), pytest.approx(83883.0)]  # the README's figure
    assert any(r["name"] == "cudaLaunchKernel" and r["kind"] == "runtime" for r in a.op_rows)


def test_other_vendors_runtime_calls_nest_too(tmp_path):
    """An XPU trace's `xpu_runtime` launch inside an op is the op's child, like cudaLaunchKernel;
    timestamps with ns decimals at epoch scale (a float64 holds them only to 0.25 us)."""
    import json

    base = 1_700_000_000_000_000
    ev = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": base, "dur": 100},
          {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": f"{base + 10}.124",
           "dur": 20.004},
          {"ph": "X", "cat": "xpu_runtime", "name": "urEnqueueKernelLaunch", "pid": 1, "tid": 1,
           "ts": f"{base + 12}.126", "dur": 18.002}]
    text = json.dumps({"traceEvents": ev}).replace('"ts": "', '"ts": ').replace('", "dur"', ', "dur"')
    path = tmp_path / "xpu.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    ours, ref, a = compare(path)
    assert_same(ours, ref)
    # both end at +30.128 us; decoded as floats the op's start rounds down to .0 and the call's up
    # to .25, so the call would overrun the op and not be its child (self 20.004 instead of 2.002)
    assert ours["aten::add"][1] == pytest.approx(2.002, abs=1e-6)
    assert next(r for r in a.op_rows if r["name"] == "urEnqueueKernelLaunch")["kind"] == "runtime"
