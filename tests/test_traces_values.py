"""Values read from traces are checked: a duration longer than the trace or a timestamp beyond what
float64 microseconds hold is dropped with a warning, never summed into 306-digit step times,
int64-overflowed phase walls or numpy RuntimeWarnings."""

from __future__ import annotations

import gzip
import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout

import pytest

from helpers.paths import trace_path

from yoloprof.cli import main


def _numbers(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield obj


TRITON = "triton_example.json.gz"


def _fixture(traces_dir, name: str = TRITON):
    return trace_path(name)  # the one lookup (skips when the shared fixtures are absent)


def _mutant(tmp_path, traces_dir, index: int, key: str, value: float):
    doc = json.loads(gzip.decompress(_fixture(traces_dir).read_bytes()))
    doc["traceEvents"][index][key] = value
    path = tmp_path / f"mut_{index}_{key}.json"
    path.write_text(json.dumps(doc))
    return path


# (event index in triton_example, field, value): the step span, a kernel, an op.
CASES = [(0, "dur", 1e308), (4, "dur", 1e308), (3, "dur", 1e19), (4, "ts", 1e308), (0, "ts", -1e300)]


@pytest.mark.parametrize("index,key,value", CASES)
@pytest.mark.parametrize("command", ["summary", "phases", "kernels"])
def test_absurd_times_are_dropped_with_a_warning(tmp_path, traces_dir, recwarn, command, index, key, value):
    path = _mutant(tmp_path, traces_dir, index, key, value)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([command, str(path), "--json"])
    assert code == 0 and err.getvalue() == "", err.getvalue()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    result = json.loads(out.getvalue())
    # The trace's own extent (start times span 0.36 s, its one step 13.3 s) bounds every figure.
    assert all(math.isfinite(x) and abs(x) < 1e8 for x in _numbers(result)), result
    if command == "summary":
        assert any("dropped" in w for w in result["warnings"]), result["warnings"]


def test_a_legit_long_step_is_kept(traces_dir):
    """The fixture's own step lasts 13.3 s against 0.36 s of start times: within the slack."""
    from yoloprof.traces.parse import parse_trace_bytes

    events = parse_trace_bytes(gzip.decompress(_fixture(traces_dir).read_bytes()))
    assert events.counts["overlong_dur"] == 0 and events.counts["far_ts"] == 0
    assert float(events.dur.max()) == pytest.approx(13336315.805)


def _tiny_trace(mem_ts: float, nbytes: float = 4096.0) -> dict:
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
            "ts": 1000.0, "dur": 500.0}
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1100.0, "dur": 400.0}
    mem = {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": mem_ts,
           "s": "t", "args": {"Device Type": 0, "Device Id": -1, "Bytes": nbytes,
                              "Total Allocated": nbytes, "Total Reserved": nbytes}}
    return {"traceEvents": [step, op, mem]}


@pytest.mark.parametrize("mem_ts,nbytes", [(-1e300, 4096.0), (1e308, 4096.0), (1200.0, 1e300)])
def test_memory_events_far_out_or_huge_do_not_overflow(tmp_path, recwarn, mem_ts, nbytes):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_tiny_trace(mem_ts, nbytes)))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["summary", str(path), "--json"])
    assert code == 0 and err.getvalue() == "", err.getvalue()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    result = json.loads(out.getvalue())
    step = next(f for f in result["headline"] if f.get("key", f.get("name")) == "step_ms" or
                f.get("label") == "step time")
    assert step["value"] == pytest.approx(0.5)
    assert all(math.isfinite(x) for x in _numbers(result))
