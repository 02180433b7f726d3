"""Peak memory from a trace's `[memory]` events, named for what it is. On CUDA "Total Allocated"
is the caching allocator's count of every live block, so the peak includes tensors alive before
the window and `live_at_start_mb` says how much that was; torch's CPU reporter counts only tensors
allocated while the profiler runs (checked below on a real CPU trace with 40 MiB alive before the
window), so a CPU-only trace has no `peak_mem_mb` and gives `cpu_window_alloc_peak_mb` instead."""

from __future__ import annotations

import json

import pytest

from yoloprof.traces.analyze import analyze_trace_file

MIB = 2 ** 20


def _write(tmp_path, mem):
    ev = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    ev += [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Device Type": dt, "Device Id": did, "Bytes": b, "Total Allocated": tot, "Total Reserved": tot}}
           for ts, dt, did, b, tot in mem]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    return analyze_trace_file(path)


def test_cuda_peak_includes_what_was_live_and_says_how_much(tmp_path):
    # weights (100 MiB) allocated before the window; inside it +1, +2, -2 MiB
    a = _write(tmp_path, [(30, 1, 0, 2 * MIB, 103 * MIB), (10, 1, 0, 1 * MIB, 101 * MIB),
                          (50, 1, 0, -2 * MIB, 101 * MIB), (20, 0, -1, 4096, 4096)])
    cuda = next(r for r in a.memory if r["device"] == "cuda:0")
    assert cuda["live_at_start_mb"] == pytest.approx(100.0) and cuda["peak_allocated_mb"] == pytest.approx(103.0)
    metrics = a.profile_sections()["metrics"]
    assert metrics["peak_mem_mb"]["value"] == pytest.approx(103.0)
    assert metrics["cpu_window_alloc_peak_mb"]["value"] is None


def test_cpu_only_trace_has_no_peak_mem_but_its_window_peak(tmp_path):
    a = _write(tmp_path, [(10, 0, -1, 3 * MIB, 3 * MIB), (20, 0, -1, 1 * MIB, 4 * MIB), (30, 0, -1, -3 * MIB, 1 * MIB)])
    metrics = a.profile_sections()["metrics"]
    assert metrics["peak_mem_mb"]["value"] is None
    assert metrics["cpu_window_alloc_peak_mb"]["value"] == pytest.approx(4.0)


def test_torch_cpu_reporter_does_not_see_tensors_older_than_the_window(tmp_path):
    import torch
    from torch.profiler import ProfilerActivity, profile

    held = torch.ones(10 * MIB // 4)  # 10 MiB... x4 below: 40 MiB alive before the window
    older = [held.clone() for _ in range(3)]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        (torch.randn(64, 64) @ torch.randn(64, 64)).relu()
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    totals = [e["args"]["Total Allocated"] for e in json.loads(path.read_text())["traceEvents"]
              if e.get("name") == "[memory]"]
    assert totals and max(totals) < 1 * MIB  # torch's own figure: the 40 MiB are not in it
    metrics = analyze_trace_file(path).profile_sections()["metrics"]
    assert metrics["peak_mem_mb"]["value"] is None  # not a "peak" below the tensors held
    assert 0 < metrics["cpu_window_alloc_peak_mb"]["value"] < 1.0
    del older
