"""Engine figures against independent references: a plain-Python interval union over the raw
JSON of the fixture traces, and torch's own `key_averages()` on traces recorded here.

Nothing here reuses the engine's helpers: steps, launches and unions are recomputed with json
and loops, so a wrong engine cannot agree with itself."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from functools import lru_cache

import pytest

from helpers.paths import trace_path
from yoloprof.traces.analyze import analyze_trace_bytes, analyze_trace_file

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


@lru_cache(maxsize=None)
def raw(name: str) -> list[dict]:
    return json.loads(gzip.decompress(trace_path(name).read_bytes()))["traceEvents"]


@lru_cache(maxsize=None)
def engine(name: str):
    return analyze_trace_file(trace_path(name))


def union(intervals) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            total += (cur_e - cur_s) if cur_e is not None else 0.0
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + ((cur_e - cur_s) if cur_e is not None else 0.0)


def steps_of(events) -> list[tuple[float, float]]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"
                  and e.get("cat") == "user_annotation" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")))


def launched_in_steps(events) -> list[tuple[int, dict]]:
    """(step index, device event) for the device work whose launch (same correlation) or, with
    no launch in the trace, whose own start falls in a step."""
    launch = {e["args"]["correlation"]: e["ts"] for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    steps = steps_of(events)
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in DEVICE:
            t = launch.get(e["args"].get("correlation"), e["ts"])
            for k, (lo, hi) in enumerate(steps):
                if lo <= t < hi:
                    out.append((k, e))
                    break
    return out


@pytest.mark.parametrize("name", ["trace_diff_test.json.gz", "nccl_data.json.gz", "rank0.json.gz"])
def test_busy_is_one_union_per_device_over_the_window(name):
    events = raw(name)
    work = launched_in_steps(events)
    by_dev: dict[int, list] = defaultdict(list)
    for _, e in work:
        by_dev[e["args"].get("device", e["pid"])].append((e["ts"], e["ts"] + e["dur"]))
    expected = sum(union(iv) for iv in by_dev.values()) / len(by_dev)
    a = engine(name)
    assert a.busy.sum() == pytest.approx(expected, rel=1e-6)  # raw µs ~1e15: float64 grain
    steps = steps_of(events)
    lo = min(steps[0][0], min(s for iv in by_dev.values() for s, _ in iv))
    hi = max(steps[-1][1], max(e for iv in by_dev.values() for _, e in iv))
    assert a.device_util_pct == pytest.approx(100 * expected / (hi - lo), rel=1e-6)
    assert a.device_util_pct <= 100.0


def test_trace_diff_test_no_instant_counted_twice():
    """The issue's case: work of one step overlaps the next step's on other streams. Summing
    per-step unions counts 41 ms twice (758.9 vs 717.9 ms); the engine gives the union."""
    events = raw("trace_diff_test.json.gz")
    work = launched_in_steps(events)
    per_step = defaultdict(list)
    for k, e in work:
        per_step[k].append((e["ts"], e["ts"] + e["dur"]))
    whole = union([iv for ivs in per_step.values() for iv in ivs])
    summed_per_step = sum(union(ivs) for ivs in per_step.values())
    assert summed_per_step > whole * 1.05  # the fixture really has cross-step overlap
    a = engine("trace_diff_test.json.gz")
    assert a.busy.sum() == pytest.approx(whole, rel=1e-6)
    assert a.busy.mean() < a.step_wall.mean()
    assert 90.0 < a.device_util_pct < 100.0


def test_utilisation_never_above_100_on_any_fixture(traces_dir):
    for path in sorted(traces_dir.glob("*.json.gz")):
        if path.name == "df_index_resolver.json.gz":
            continue  # 54 MB: covered by the parse tests
        a = analyze_trace_file(path)
        if a.device_util_pct is not None:
            assert 0.0 < a.device_util_pct <= 100.0, path.name
            assert not any(w.startswith("BUG") for w in a.warnings)


def _kineto(events: list[dict]) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


def test_per_device_figures_on_a_two_device_trace():
    """Hand-worked: one 100 µs step; device 0 runs [10, 60) and [40, 90) on two streams (union
    80 µs), device 1 runs [20, 40) (20 µs). Mean busy 50 µs, per device 80% and 20%."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
           "ts": 0, "dur": 100},
          {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 99, "dur": 1}]
    for corr, (dev, stream, ts, dur) in enumerate([(0, 7, 10, 50), (0, 8, 40, 50), (1, 7, 20, 20)]):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": 1 + corr, "dur": 1, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": dev, "tid": stream, "ts": ts,
                   "dur": dur, "args": {"correlation": corr, "device": dev, "stream": stream}})
    a = analyze_trace_bytes(_kineto(ev), "two.json")
    assert a.busy[0] == pytest.approx(50.0)
    rows = {d["device"]: d for d in a.profile_sections()["trace"]["devices"]}
    assert rows[0]["util_pct"] == pytest.approx(80.0) and rows[1]["util_pct"] == pytest.approx(20.0)
    assert rows[0]["busy_ms_per_step"] == pytest.approx(0.080)
    assert a.device_util_pct == pytest.approx(50.0)


def test_a_step_without_phases_is_all_other_to_the_nanosecond():
    """Hand-worked: two steps of 900.5 and 1673.183 µs, each with one op that ends where it ends,
    and no phase spans: the whole of each step is the "other" phase, 0.9005 and 1.673183 ms (an
    integer array once cut both to whole µs: 0.900 and 1.673)."""
    ev = []
    for s, (ts, dur) in enumerate([(0, 900.5), (2000, 1673.183)]):
        ev += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 1, "tid": 1,
                "ts": ts, "dur": dur},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts + dur - 50,
                "dur": 50}]
    a = analyze_trace_bytes(_kineto(ev), "nophases.json")
    [other] = [p for p in a.profile_sections()["phases"] if p["phase"] == "other"]
    assert other["wall_ms_per_step"] == pytest.approx((0.9005 + 1.673183) / 2, rel=1e-12, abs=0)


def test_orphan_kernels_land_in_the_step_of_their_own_start():
    """rank0: 705 kernels launched before the profiler started (no launch event). Each is placed
    by its own GPU start time: in this trace every one of them starts inside step 0's span."""
    events = raw("rank0.json.gz")
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    steps = steps_of(events)
    per_step = [0] * len(steps)
    orphans = 0
    for k, e in launched_in_steps(events):
        if e["cat"] == "kernel":
            per_step[k] += 1
            if e["args"].get("correlation") not in launched:
                orphans += 1
                assert steps[k][0] <= e["ts"] < steps[k][1]
    a = engine("rank0.json.gz")
    assert orphans == a.orphans_in_steps == 705
    assert a.kernels.tolist() == per_step


def test_kernel_memcpy_memset_are_separate_figures():
    events = raw("rank0.json.gz")
    sums = defaultdict(float)
    for _, e in launched_in_steps(events):
        sums[KIND[e["cat"]]] += e["dur"]
    a = engine("rank0.json.gz")
    sections = a.profile_sections()
    n = a.n_steps
    for kind in ("kernel", "memcpy", "memset"):
        assert sections["metrics"][f"{kind}_ms"]["value"] == pytest.approx(sums[kind] / 1000 / n, rel=1e-6)
    kernel_rows = [k for k in sections["kernels"] if k["kind"] == "kernel"]
    assert sum(k["ms_per_step"] for k in kernel_rows) == pytest.approx(sums["kernel"] / 1000 / n)
    assert sum(k["pct"] for k in kernel_rows) == pytest.approx(100.0)
    assert sums["memcpy"] + sums["memset"] > 0.05 * sums["kernel"]  # the split matters here


def test_category_busy_saving_accounts_for_overlap():
    """Removing communication saves only the part of the union nothing else covers."""
    from yoloprof.metrics.categories import classify

    events = raw("trace_diff_test.json.gz")
    work = [e for _, e in launched_in_steps(events)]
    iv = [(e["ts"], e["ts"] + e["dur"]) for e in work]
    rest = [(e["ts"], e["ts"] + e["dur"]) for e in work if classify(e["name"]) != "communication"]
    comm_sum = sum(e["dur"] for e in work if classify(e["name"]) == "communication")
    saving = union(iv) - union(rest)
    a = engine("trace_diff_test.json.gz")
    cats = {c["category"]: c for c in a.profile_sections()["categories"]}
    comm = cats["communication"]
    assert comm["busy_saving_ms_per_step"] == pytest.approx(saving / 1000 / a.n_steps, rel=1e-6)
    assert comm["device_ms_per_step"] == pytest.approx(comm_sum / 1000 / a.n_steps, rel=1e-6)
    assert comm["busy_saving_ms_per_step"] < 0.5 * comm["device_ms_per_step"]


# --- ops against torch's own key_averages -------------------------------------------------------


def test_ops_merge_like_key_averages(recorded):
    a, ka, _, events = recorded
    divs = [e for e in events if e.get("name") == "aten::div"]
    assert len(divs) > ka["aten::div"].count  # the trace holds nested duplicates
    ours: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in a.op_rows:
        t = ours[r["name"]]
        t[0] += r["count"]
        t[1] += r["self_us"]
        t[2] += r["total_us"]
        t[3] += r["alloc_bytes"] - r["freed_bytes"]
    assert ours
    for name, (count, self_us, total_us, mem) in ours.items():
        ref = ka[name]
        assert count == ref.count, name
        assert self_us == pytest.approx(ref.self_cpu_time_total, abs=0.01), name
        assert total_us == pytest.approx(ref.cpu_time_total, abs=0.01), name
        assert mem == ref.self_cpu_memory_usage + ref.self_device_memory_usage, name


def test_ops_by_input_shape_like_key_averages(recorded):
    a, _, by_shape, _ = recorded
    ours = {(r["name"], r["input_shapes"]): r["count"] for r in a.op_shape_rows}
    assert ours and any(s != "[]" for _, s in ours)
    for key, count in ours.items():
        assert by_shape[key] == count, key


def test_host_running_ahead_is_said_not_hidden():
    """rank-0.Apr: the work launched per step keeps the GPU busier than the CPU step lasts; the
    union stays a union (utilisation <= 100 over the window, which runs to the end of that work)
    and a warning gives the tail after the last step, recomputed here."""
    name = "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    events = raw(name)
    steps = steps_of(events)
    tail = max(e["ts"] + e["dur"] for _, e in launched_in_steps(events)) - steps[-1][1]
    a = engine(name)
    assert a.busy.mean() > a.step_wall.mean() and a.device_util_pct <= 100.0
    assert a.device_tail_us == pytest.approx(tail, abs=1.0)
    note = next(w for w in a.warnings if "runs ahead" in w)
    assert f"{tail / 1000:.1f} ms of device work after the last step" in note
