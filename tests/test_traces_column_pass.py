"""The column pass (traces/parse.py `_part`, `_merge`) against an independent reference: every
column, table and count recomputed in plain Python, event by event, from `json.loads` of a small
trace that holds the odd values the fast paths must send elsewhere (null / absent / fractional /
huge timestamps, missing and negative durations, "0x0" and string ids, malformed args, bools,
ints beyond 2**53, [memory] instants of every shape, recorded input shapes, 2021 category names,
a name used only by a dropped event). Read whole and cut into slices of a few events (each slice
takes its own fast or checked path), the reader must give exactly the reference."""

from __future__ import annotations

import json
import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from yoloprof.traces import kineto, parse
from yoloprof.traces.parse import CAT_ALIASES, CAT_CODE, DEVICE_CATS, HOST_API_CATS, parse_trace_bytes

real_part = parse._part
T0 = 1_669_783_687_464_181  # an epoch time in µs, as Kineto writes
INT32 = 2**31


def _x(name: str, cat: str, ts: Any, dur: Any = 1, pid: Any = 1, tid: Any = 1, **extra: Any) -> dict:
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, **extra}
    return {k: v for k, v in ev.items() if v is not ...}  # `...`: the key is absent


def _mem(ts: Any, args: Any = None, ph: str = "i", **figures: Any) -> dict:
    good = {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 4096}
    return {"ph": ph, "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {**good, **figures} if args is None else args}


def _events() -> list[dict]:
    """A trace that holds each odd case, most more than once, shuffled with a fixed seed beside
    plain events (so that slices of a few events mix plain and odd ones)."""
    k = lambda ts, args, **kw: _x("void gemm<1>(int)", "kernel", ts, 3, kw.pop("pid", 0), kw.pop("tid", 7), args=args, **kw)  # noqa: E731
    launch = lambda ts, corr: _x("cudaLaunchKernel", "cuda_runtime", ts, 2, args={"correlation": corr})  # noqa: E731
    odd = [
        _x("aten::mm", "cpu_op", T0 + 10, 5, args={"Input Dims": [[2, 3], [3, 4]], "External id": 3}),
        _x("aten::add", "cpu_op", T0 + 11, 1, args={"Input Dims": [[], [7]]}),
        _x("aten::view", "cpu_op", T0 + 12, 1, args={"Input Dims": "not a list"}),
        _x("aten::relu", "cpu_op", T0 + 13, 1, args=[1, 2]),
        _x("aten::relu", "cpu_op", T0 + 14, 1),
        _x("only-dropped", "cpu_op", None, 1, pid=77, tid=77),          # null ts: dropped
        _x("only-dropped", "cpu_op", ..., 1, pid=78, tid=78),           # absent ts: dropped
        _x("neg", "cpu_op", T0 + 15, -4),                               # negative dur: dropped
        _x("nodur", "cpu_op", T0 + 16, ...),                            # absent dur: 0, counted
        _x("nulldur", "cpu_op", T0 + 17, None),                         # null dur: 0, counted
        _x("frac", "user_annotation", f"RAW:{T0 + 18}.125", "RAW:2.5"),  # exact binary fractions
        _x("frac", "user_annotation", f"RAW:{T0 + 19}.875"),
        _x("Operator-old", "Operator", T0 + 20, 2, pid="host", tid="main"),  # 2021 names, str ids
        _x("cudaMemcpyAsync", "Runtime", T0 + 21, 2, args={"correlation": 41}),
        _x("Memcpy HtoD", "Memcpy", T0 + 22, 2, pid=0, tid=9, args={"correlation": 41, "device": "0x0", "stream": "9"}),
        _x("Memset", "gpu_memset", T0 + 23, 1, pid=0, tid=9, args={"correlation": 42, "device": None, "stream": None}),
        k(T0 + 24, {"correlation": 2**53 + 1, "device": 0, "stream": 7}),
        k(T0 + 25, {"correlation": 2**62, "device": 0, "stream": 7}),     # out of range: -1
        k(T0 + 26, {"correlation": 2**62 - 1, "device": INT32, "stream": -INT32}, pid=3, tid=2**40),
        k(T0 + 27, {"correlation": True, "device": 0, "stream": 7}),      # bool: malformed
        k(T0 + 28, {"correlation": "12", "device": 0, "stream": 7}),      # string corr: malformed
        k(T0 + 29, {"correlation": 13, "device": 1.5, "stream": 7}),      # float device: malformed
        k(T0 + 30, "args as a string", pid=2, tid=8),                     # not an object: malformed
        k(T0 + 31, {"correlation": 14, "device": -3, "stream": 10**30}, pid=5, tid=6),
        k(T0 + 32, ..., pid=4, tid="0x5"),                                # no args at all
        _mem(T0 + 33), _mem(T0 + 34, ph="I"), _mem(T0 + 35, Bytes=-256.5),
        _mem(T0 + 36, **{"Device Type": 1.5}), _mem(T0 + 37, Bytes="5"), _mem(T0 + 38, **{"Total Allocated": True}),
        _mem(T0 + 39, args=[1]), _mem(None), _mem(T0 + 40, **{"Total Reserved": None}), _mem(T0 + 41, Bytes=2**70),
        {"ph": "i", "name": "Record Window End", "pid": 1, "tid": 1, "ts": T0 + 42},
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": T0 + 43, "cat": "ac2g", "name": "ac2g"},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        _x("far", "cpu_op", 2**60, 1),                                   # beyond 2**53 µs: dropped
        _x("long", "cpu_op", T0 + 44, 1e18),                             # longer than the trace
    ]
    plain = [launch(T0 + 100 + 2 * i, 100 + i) for i in range(30)]
    plain += [k(T0 + 101 + 2 * i, {"correlation": 100 + i, "device": 0, "stream": 7}) for i in range(30)]
    rng = random.Random(5)
    rest = odd[1:] + plain
    rng.shuffle(rest)
    return [odd[0]] + rest  # an op with shapes first: the shapes probe sees it


def _text(events: list[dict]) -> bytes:
    raw = json.dumps({"schemaVersion": 1, "traceEvents": events})
    return raw.replace('"RAW:', "").replace('.125"', ".125").replace('.875"', ".875").replace('2.5"', "2.5").encode()


def _small(v: Any, lo: int = -INT32, hi: int = INT32) -> int | None:
    """An id as the reader documents: an int strictly inside (lo, hi), or a string int(v, 0) reads
    so; None otherwise."""
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            return None
    return v if type(v) is int and lo < v < hi else None


def _figure_ok(v: Any, floats: bool) -> bool:
    """A [memory] figure the reader keeps: null, an int, or (bytes and totals) a JSON fraction
    (a Decimal here: the document is read with parse_float=Decimal)."""
    return v is None or type(v) is int or (floats and type(v) is Decimal)


def reference(doc: dict) -> dict:
    """The columns, tables and counts, event by event, from the documented rules."""
    evs = doc["traceEvents"]
    xs = [e for e in evs if e.get("ph") == "X"]
    exact = [e for e in xs if isinstance(e.get("ts"), (int, Decimal))]
    kept = [e for e in exact if e.get("dur") is None or e["dur"] >= 0]
    stamps = [Decimal(e["ts"]) for e in kept]
    far = [abs(t) > 2**53 for t in stamps]
    near = [t for t, f in zip(stamps, far) if not f]
    span = float(max(near)) - float(min(near))
    durs = [float(e["dur"]) if e.get("dur") is not None else 0.0 for e in kept]
    long_ = [not f and d > span + max(span, 60e6) for d, f in zip(durs, far)]
    mems = _reference_memory(evs)
    t0 = min([t for t, f, g in zip(stamps, far, long_) if not (f or g)] + [m[0] for m in mems])
    out: dict[str, Any] = {"names": [], "threads": [], "shapes": [], "col": {c: [] for c in ("name", "cat", "thread", "ts", "dur", "corr", "device", "stream", "shape")}}
    bad = 0
    for e, t, d, dropped in zip(kept, stamps, durs, [f or g for f, g in zip(far, long_)]):
        # the tables hold every event with a time and no negative dur, the columns the plausible
        # ones only (a far or overlong event is dropped after the tables are built)
        cat = e["cat"].lower()
        cat = CAT_ALIASES.get(cat, cat)
        args = e.get("args", {})
        read = cat in DEVICE_CATS + HOST_API_CATS
        well = isinstance(args, dict) and all(
            args.get(f) is None or type(args.get(f)) is int or (f != "correlation" and type(args.get(f)) is str)
            for f in ("correlation", "device", "stream"))
        a = args if read and well else {}
        corr = _small(a.get("correlation"), -1, 2**62)
        device = stream = -1
        if cat in DEVICE_CATS:
            device = _small(a.get("device"))
            device = device if device is not None and device >= 0 else (_small(e.get("pid")) or 0)
            stream = _small(a.get("stream"))
            stream = stream if stream is not None else (_small(e.get("tid")) or 0)
        dims = args.get("Input Dims") if isinstance(args, dict) and cat == "cpu_op" else None
        codes = (_index(out["names"], e["name"]), _index(out["threads"], (e.get("pid"), e.get("tid"))),
                 _index(out["shapes"], str(dims)) if isinstance(dims, list) else -1)
        bad += read and not well and not dropped
        if dropped:
            continue
        col = out["col"]
        col["name"].append(codes[0])
        col["cat"].append(CAT_CODE.get(cat, 0))
        col["thread"].append(codes[1])
        col["ts"].append(float(t - t0))
        col["dur"].append(d)
        col["corr"].append(-1 if corr is None else corr)
        col["device"].append(device)
        col["stream"].append(stream)
        col["shape"].append(codes[2])
    out["memory"] = [(float(m[0] - t0),) + m[1:] for m in mems]
    out["t0"] = float(t0)
    out["counts"] = {"events": len(evs), "complete": len(exact), "missing_dur": sum(e.get("dur") is None for e in exact),
                     "negative_dur": len(exact) - len(kept), "bad_args": bad, "far_ts": sum(far), "overlong_dur": sum(long_)}
    return out


def _index(table: list, key: Any) -> int:
    if key not in table:
        table.append(key)
    return table.index(key)


def _reference_memory(evs: list[dict]) -> list[tuple]:
    rows = []
    for e in evs:
        a = e.get("args")
        if e.get("ph") not in ("i", "I") or e.get("name") != "[memory]" or not isinstance(e.get("ts"), (int, Decimal)):
            continue
        figures = [a.get(k) if isinstance(a, dict) else None for k in
                   ("Device Type", "Device Id", "Bytes", "Total Allocated", "Total Reserved")]
        if isinstance(a, dict) and all(_figure_ok(v, i >= 2) for i, v in enumerate(figures)):
            rows.append((Decimal(e["ts"]),) + tuple(math.nan if v is None else float(v) for v in figures))
    return rows


def _columns(ev: Any) -> dict:
    col = {c: getattr(ev, c).tolist() for c in ("cat", "ts", "dur", "corr", "device", "stream")}
    col["name"], col["thread"] = ev.name.tolist(), ev.thread.tolist()
    col["shape"] = ev.shape.tolist()
    return col


@pytest.mark.parametrize("slice_bytes", [None, 400])
def test_column_pass_equals_a_per_event_reference(slice_bytes, monkeypatch) -> None:
    data = _text(_events())
    want = reference(json.loads(data, parse_float=Decimal))
    if slice_bytes is not None:
        monkeypatch.setattr(kineto, "CHUNK_BYTES", slice_bytes)
    calls: list[int] = []
    monkeypatch.setattr(parse, "SLICE_WORKERS", 1)  # every slice in this process, counted here

    def counted(events: list, base: int) -> Any:
        calls.append(1)
        return real_part(events, base)

    monkeypatch.setattr(parse, "_part", counted)
    ev = parse_trace_bytes(data)
    assert len(calls) == (1 if slice_bytes is None else len(kineto.plan(data)) + 1)
    assert slice_bytes is None or len(calls) > 20  # slices of a few events, each on its own path
    assert _columns(ev) == want["col"]
    assert (ev.strings, ev.shape_strings) == (want["names"], want["shapes"])
    got_mem = list(zip(ev.memory.ts.tolist(), *(getattr(ev.memory, f).tolist() for f in
                                                ("device_type", "device_id", "nbytes", "allocated", "reserved"))))
    assert np.array_equal(np.array(got_mem), np.array(want["memory"]), equal_nan=True)
    assert ev.t0 == want["t0"]
    assert ev.counts == want["counts"]
    assert "only-dropped" not in ev.strings and "neg" not in ev.strings
