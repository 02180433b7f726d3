"""Parsing: schema variants, odd-but-valid traces, and every kind of bad input -> ProfileError."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.paths import trace_path
from yoloprof.errors import ProfileError, UsageError
from yoloprof.readers.load import load_any
from yoloprof.traces.analyze import analyze_trace_bytes
from yoloprof.traces.parse import parse_trace_bytes


def trace(events, **top) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events, **top}).encode()


def step(n, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
            "ts": ts, "dur": dur}


def launch(ts, corr, name="cudaLaunchKernel", dur=5):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"correlation": corr}}


def kernel(ts, dur, corr, name="void gemm_kernel<1>(int)", stream=7):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "device": 0, "stream": stream}}


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b'{"traceEvents": [{"ph": "X", "ts": 1', "JSON"),
    (b"[1, 2, 3]", "array"),
    (b'{"foo": 1}', "traceEvents"),
    (b'{"schema": "other.thing/3", "rows": []}', "other.thing/3"),
    (b'{"traceEvents": []}', "no events"),
    (b"not json at all", "JSON"),
    (b"42", "not a Kineto trace"),
])
def test_bad_inputs_are_profile_errors(data, message):
    with pytest.raises(ProfileError, match=message):
        parse_trace_bytes(data)


def test_load_any_on_bad_files(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    with pytest.raises(ProfileError):
        load_any(empty)
    with pytest.raises(UsageError):
        load_any(tmp_path / "missing.json")
    trunc = tmp_path / "t.json.gz"
    trunc.write_bytes(gzip.compress(trace([step(1, 0, 10)]))[:-12])
    with pytest.raises(ProfileError):
        load_any(trunc)


def test_missing_and_negative_dur_are_counted():
    ev = parse_trace_bytes(trace([step(1, 0, 100), {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 5},
                                  {"ph": "X", "cat": "cpu_op", "name": "b", "ts": 6, "dur": -3}]))
    assert len(ev) == 2
    assert ev.counts["missing_dur"] == 1 and ev.counts["negative_dur"] == 1
    assert any("no 'dur'" in w for w in ev.warnings)
    assert any("negative" in w for w in ev.warnings)


def test_non_utf8_and_lone_surrogates_are_replaced():
    raw = trace([step(1, 0, 100), {"ph": "X", "cat": "cpu_op", "name": "NAME", "ts": 5, "dur": 1}])
    bad = raw.replace(b"NAME", b"op\xff\xfe")
    ev = parse_trace_bytes(bad)
    assert "op\ufffd\ufffd" in ev.strings
    lone = raw.replace(b"NAME", b"x\\ud800y")
    assert "x\ufffdy" in parse_trace_bytes(lone).strings
    pair = raw.replace(b"NAME", b"\\ud83d\\ude00")
    assert "\U0001F600" in parse_trace_bytes(pair).strings


def test_string_pids_ints_floats_and_ns_display_unit():
    events = [step(1, 1000, 100), launch(1010, 7), kernel(1020.5, 30.25, 7)]
    events[1]["pid"] = "host"
    events[1]["tid"] = "main thread"
    data = trace(events, displayTimeUnit="ns")
    a = analyze_trace_bytes(data, "x")
    assert a.busy[0] == pytest.approx(30.25)  # still microseconds despite "ns"
    assert a.launches[0] == 1


def test_malformed_event_is_skipped_not_fatal():
    events = [step(1, 0, 100), launch(10, 1), kernel(20, 10, 1), {"ph": "X", "name": 5, "ts": "x"}, 7]
    ev = parse_trace_bytes(trace(events))
    assert len(ev) == 3
    assert any("malformed" in w for w in ev.warnings)


def test_malformed_args_cost_their_event_the_correlation_only():
    """`args` are decoded in the events' own pass with any JSON value accepted; the columns then
    apply a well-formed trace's types (correlation int, device/stream int or string, a JSON bool is
    not an int). A malformed `args` loses its event's correlation and is counted; the event stays.
    Expected values worked by hand, event by event."""
    def k(args, **kw):
        return {"ph": "X", "cat": "kernel", "name": "k", "pid": 3, "tid": 9, "ts": 20, "dur": 1, "args": args, **kw}

    events = [
        step(1, 0, 100),                                                   # not read: no args needed
        k({"correlation": 11, "device": 0, "stream": 7}),                  # well formed
        k({"correlation": "11", "device": 0, "stream": 7}),                # string correlation: bad
        k({"correlation": 12, "device": "0x1", "stream": "5"}),            # hex / numeric strings: fine
        k({"correlation": 13, "device": 0, "stream": True}),               # bool stream: bad
        k([1, 2]),                                                         # not an object: bad
        k({"correlation": None}),                                          # null: no correlation, not bad
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 4, "tid": 6, "ts": 21, "dur": 1},  # no args
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 4,
         "args": {"Input Dims": [[2, 3], [3, 4]], "device": [1]}},          # odd key of a cpu_op: ignored
    ]
    ev = parse_trace_bytes(trace(events))
    assert ev.counts["bad_args"] == 3
    assert any("3 GPU/runtime event(s) have malformed 'args'" in w for w in ev.warnings)
    order = np.argsort(ev.ts, kind="stable")  # the step (ts 0), the op (ts 5), then the kernels
    kernels = [i for i in order if ev.strings[ev.name[i]] == "k"]
    assert ev.corr[kernels].tolist() == [11, -1, 12, -1, -1, -1, -1]
    # a bad args takes the fallbacks: device = pid, stream = tid
    assert ev.device[kernels].tolist() == [0, 3, 1, 3, 3, 3, 4]
    assert ev.stream[kernels].tolist() == [7, 9, 5, 9, 9, 9, 6]
    op = [i for i in order if ev.strings[ev.name[i]] == "aten::mm"]
    assert ev.shape_strings[ev.shape[op[0]]] == "[[2, 3], [3, 4]]"


def test_memory_args_of_the_wrong_type_skip_their_event():
    def mem(ts, **args):
        return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}

    good = {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 2048}
    events = [step(1, 0, 100), mem(10, **good), mem(11, **{**good, "Bytes": -256.5}),
              mem(12, **{**good, "Device Type": 1.5}), mem(13, **{**good, "Bytes": "5"}),
              mem(14, **{**good, "Total Allocated": True}),
              {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 15},
              {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 16, "args": None}]
    ev = parse_trace_bytes(trace(events))
    assert ev.memory.nbytes.tolist() == [512.0, -256.5]
    assert ev.memory.device_type.tolist() == [1.0, 1.0]
    assert ev.memory.reserved.tolist() == [2048.0, 2048.0]
    assert any("5 [memory] event(s) without usable args were skipped" in w for w in ev.warnings)


def test_instant_flow_and_metadata_events_are_ignored():
    events = [step(1, 0, 100), launch(10, 1), kernel(20, 10, 1),
              {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 10, "cat": "ac2g", "name": "ac2g"},
              {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
              {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
              {"ph": "i", "name": "Record Window End", "pid": "", "tid": "", "ts": 200}]
    a = analyze_trace_bytes(trace(events), "x")
    assert a.kernels.sum() == 1 and a.busy[0] == 10


def test_integer_and_float_timestamps_give_same_result():
    ints = [step(1, 1_000_000, 100), launch(1_000_010, 1), kernel(1_000_020, 10, 1)]
    floats = [step(1, 1_000_000.0, 100.0), launch(1_000_010.0, 1), kernel(1_000_020.0, 10.0, 1)]
    a, b = analyze_trace_bytes(trace(ints), "i"), analyze_trace_bytes(trace(floats), "f")
    assert np.array_equal(a.busy, b.busy) and np.array_equal(a.step_wall, b.step_wall)


SMALL = ["triton_example.json.gz", "mi250_minitoy_train_ROCm6_2_kineto.json.gz"]


def _mutations():
    key = st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"])
    value = st.one_of(st.none(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                      st.text(max_size=5), st.lists(st.integers(), max_size=2),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    drop = st.tuples(st.just("drop"), st.integers(0, 10**6), key, st.none())
    change = st.tuples(st.just("set"), st.integers(0, 10**6), key, value)
    delete = st.tuples(st.just("delete"), st.integers(0, 10**6), st.none(), st.none())
    args = st.tuples(st.just("args"), st.integers(0, 10**6),
                     st.sampled_from(["correlation", "device", "stream", "Total Allocated"]), value)
    return st.lists(st.one_of(drop, change, delete, args), min_size=1, max_size=6)


def _apply(doc: dict, mutations) -> dict:
    events = doc["traceEvents"]
    for op, index, key, value in mutations:
        if not events:
            break
        i = index % len(events)
        ev = events[i]
        if op == "delete":
            events.pop(i)
        elif not isinstance(ev, dict):
            continue
        elif op == "drop":
            ev.pop(key, None)
        elif op == "set":
            ev[key] = value
        elif op == "args" and isinstance(ev.get("args"), dict):
            ev["args"][key] = value
    return doc


@pytest.mark.parametrize("name", SMALL)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=_mutations(), cut=st.one_of(st.none(), st.integers(0, 3000)))
def test_mutated_traces_raise_only_project_errors(name, mutations, cut):
    doc = json.loads(gzip.decompress(trace_path(name).read_bytes()))
    data = json.dumps(_apply(doc, mutations)).encode()
    if cut is not None:
        data = data[:cut]
    try:
        from yoloprof.traces.to_profile import profile_from_trace_bytes
        profile = profile_from_trace_bytes(data, name)
    except (ProfileError, UsageError):
        return
    assert profile["kind"] == "trace"
    json.dumps(profile, allow_nan=False)


def _same_events(a, b):
    for col in ("ts", "dur", "corr", "device", "stream", "cat", "name", "thread"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    for col in ("ts", "nbytes", "allocated", "reserved"):
        assert np.array_equal(getattr(a.memory, col), getattr(b.memory, col), equal_nan=True), col
    assert (a.strings, a.meta, a.warnings, a.counts, a.t0) == (b.strings, b.meta, b.warnings, b.counts, b.t0)


@pytest.mark.parametrize("name", ["nccl_data.json.gz", "rank0.json.gz"])
def test_slice_by_slice_decode_equals_one_piece(name, monkeypatch):
    """Large traces are decoded a slice of events at a time (traces.kineto.chunks); cutting a real
    trace into hundreds of slices must give exactly the one-piece columns, shapes included."""
    from yoloprof.traces import kineto

    data = gzip.decompress(trace_path(name).read_bytes())
    whole = parse_trace_bytes(data)  # below 2 x CHUNK_BYTES: one piece
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 40_000)
    assert len(kineto._cuts(data, 40_000)) > 100
    sliced = parse_trace_bytes(data)
    _same_events(whole, sliced)
    if whole.shape is not None:
        texts = lambda ev: np.array(ev.shape_strings + ["-"], object)[ev.shape]  # noqa: E731
        assert np.array_equal(texts(whole), texts(sliced))


def test_a_slice_that_fails_falls_back_to_the_one_piece_repairs(monkeypatch):
    from yoloprof.traces import kineto

    events = [step(1, 0, 10_000)] + [kernel(10 + i, 5, i, name=f"k{i}") for i in range(400)]
    raw = trace(events).replace(b'"k399"', b'"k\xff"')  # invalid UTF-8 in the last slice only
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 2_000)
    assert kineto._cuts(raw, 2_000)
    ev = parse_trace_bytes(raw)
    assert "k\ufffd" in ev.strings and any("not UTF-8" in w for w in ev.warnings)
    assert len(ev) == 401


def test_forked_slice_helper_gives_the_same_columns(monkeypatch):
    """The second half of the slices may be turned into columns by a forked helper process."""
    from yoloprof.traces import fork, kineto, parse

    data = gzip.decompress(trace_path("nccl_data.json.gz").read_bytes())
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 400_000)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 1)
    alone = parse_trace_bytes(data)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 2)
    monkeypatch.setattr(parse, "_may_fork", lambda: True)
    forks = []
    real_fork = fork.fork_call
    monkeypatch.setattr(fork, "fork_call", lambda *a, **k: forks.append(1) or real_fork(*a, **k))
    _same_events(alone, parse_trace_bytes(data))
    assert forks == [1]


@pytest.mark.parametrize("content, expected", [
    ("2.10 1.80 1.70 1/212 4242\n", True),     # only this process runnable now: a core is free
    ("0.10 0.20 0.30 2/212 4242\n", False),    # another task running beside it: no free core
    ("garbage\n", None),                       # unreadable: the 1-minute average decides
])
def test_idle_core_reads_the_runnable_count_not_the_lagging_average(tmp_path, monkeypatch, content, expected):
    """Two cores. The first line's 1-minute average (2.10) would say busy; the runnable count (1)
    says a core is free now, as after a heavy command that has just ended."""
    from yoloprof.traces import parse

    monkeypatch.setattr(parse.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(parse.os, "getloadavg", lambda: (0.4, 0.4, 0.4))
    path = tmp_path / "loadavg"
    path.write_text(content)
    assert parse._idle_core(str(path)) is (True if expected is None else expected)
    monkeypatch.setattr(parse.os, "getloadavg", lambda: (1.6, 1.0, 1.0))
    assert parse._idle_core(str(path)) is (False if expected is None else expected)
