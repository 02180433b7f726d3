"""`trace.file` in a capture's profile.json names the trace file, never a metric (the metric loop
in `merge_trace_sections` once reused the `name` parameter, leaving the last metric's name)."""

from __future__ import annotations

import json

from yoloprof.capturing.builtin.profile_sections import merge_trace_sections


def _trace(path):
    ev = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
          {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 20}]
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def _profile():
    return {"metrics": {}, "phases": [], "warnings": []}


def test_trace_file_is_the_file_name(tmp_path):
    path = _trace(tmp_path / "staging-123.json")
    p = _profile()
    merge_trace_sections(p, path)
    assert p["trace"]["file"] == "staging-123.json"
    assert p["metrics"]  # the metrics were merged (the loop ran)
    p = _profile()
    merge_trace_sections(p, path, "trace.json")
    assert p["trace"]["file"] == "trace.json"
