"""The streamed reader (traces/stream.py) gives today's figures bit for bit, on every fixture trace.

References: the whole-buffer reader `parse.parse_trace_bytes` on the gunzipped file (today's
reader, untouched), and every figure the readers print from it (`summary`, `kernels`, `ops`,
`phases` as --json computes them). The stream is fed blocks of odd sizes that split events,
numbers and the "traceEvents" key, with slices small enough that every fixture is cut many times
(the whole-buffer reader given the same slice size is the reference then: the slices are the
unit both readers share).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from yoloprof.errors import ProfileError
from yoloprof.readers.kernels import compute_kernels
from yoloprof.readers.ops import compute_ops
from yoloprof.readers.phases import compute_phases
from yoloprof.readers.summary import compute_summary
from yoloprof.traces import kineto, parse
from yoloprof.traces.analyze import analyze_events
from yoloprof.traces.stream import Restart, parse_trace_blocks
from yoloprof.traces.to_profile import profile_from_analysis
from tests.helpers.events import same_events

FIXTURES = [REPO.parent / "shared" / "fixtures" / d for d in ("traces", "tbplugin")]
SLICE = 96 << 10  # small enough to cut every fixture trace


def _fixture_traces() -> list[Path]:
    found = sorted(p for d in FIXTURES if d.is_dir() for p in d.glob("*.json.gz")
                   if not p.name.startswith("gpu_metrics_expected"))
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="fixture traces absent"))]


def _blocks(data: bytes, sizes: tuple[int, ...] = (7, 65521, 1 << 20, 333333)) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        out.append(data[pos:pos + sizes[i % len(sizes)]])
        pos, i = pos + sizes[i % len(sizes)], i + 1
    return out


def _figures(ev: parse.Events) -> str:
    """Every figure of summary / kernels / ops / phases --json (created_at aside)."""
    profile = profile_from_analysis(analyze_events(ev, "trace"))
    profile.pop("created_at", None)
    out = {"summary": compute_summary(profile), "kernels": compute_kernels(profile),
           "ops": compute_ops(profile), "phases": compute_phases(profile)}
    return json.dumps(out, sort_keys=True, default=repr)


@pytest.mark.parametrize("path", _fixture_traces(), ids=lambda p: getattr(p, "name", "none"))
def test_streamed_reader_gives_todays_figures(path: Path, tmp_path: Path, monkeypatch) -> None:
    data = gzip.decompress(path.read_bytes())
    try:
        today = parse.parse_trace_bytes(data)  # the default slices (one piece for most fixtures)
    except ProfileError:
        with pytest.raises((ProfileError, Restart)):
            parse_trace_blocks(_blocks(data), SLICE)
        return
    size = SLICE if len(data) < 2 * kineto.CHUNK_BYTES else kineto.CHUNK_BYTES
    sliced = today
    if size != kineto.CHUNK_BYTES:
        monkeypatch.setattr(kineto, "CHUNK_BYTES", size)
        sliced = parse.parse_trace_bytes(data)  # today's reader, cutting where the stream cuts
    _check_plain_file_reader(data, size, sliced, tmp_path, monkeypatch)
    try:
        streamed = parse_trace_blocks(_blocks(data), size)
    except Restart:  # a slice does not decode alone: the caller reads it whole, as today
        assert kineto.plan(data, size), "a trace too small to cut is read whole, never restarted"
        return
    same_events(streamed, sliced)
    if sliced is not today or path.name.startswith("df_index_resolver"):
        # equal columns give equal figures; computed where the slices differ from today's, and
        # on the largest fixture as a check of the whole chain
        assert _figures(streamed) == _figures(today)


def _check_plain_file_reader(data: bytes, size: int, sliced: parse.Events, tmp_path: Path,
                             monkeypatch) -> None:
    """traces/ranges.py on the same bytes as a plain file, a forked helper claiming slices too:
    the same columns as the whole-buffer reader cutting where it cuts, or None (handed to the
    stream) only where no cut exists or a slice does not decode alone."""
    from yoloprof.traces import ranges

    file = tmp_path / "plain.json"
    file.write_bytes(data)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 2)
    monkeypatch.setattr(ranges, "_may_fork", lambda: True)
    got = ranges.parse_trace_file(file, size)
    if got is None:
        cuts = kineto.plan(data, size)
        with pytest.raises((kineto.ChunkError, IndexError)):
            for i in range(len(cuts) + 1):
                kineto.decode_slice(data, cuts, i)
        return
    same_events(got, sliced)


def test_stream_cuts_exactly_where_the_whole_buffer_reader_cuts() -> None:
    """Hand-made trace with separators of every spacing; cut offsets compared with kineto.plan."""
    events = [f'{{"ph":"X","name":"op{i}","ts":{1000 + i}.125,"dur":1,"pid":1,"tid":1}}'
              for i in range(3000)]
    seps = [",", " ,", ",\n ", "\n,\n"]
    body = "".join(e + seps[i % 4] for i, e in enumerate(events[:-1])) + events[-1]
    data = ('{"schemaVersion":1,"traceEvents":[' + body + '],"distributedInfo":{"rank":3}}').encode()
    size = 4096
    whole_cuts = kineto._cuts(data, size)
    from yoloprof.traces.stream import _Cutter

    cutter, bodies = _Cutter(size), []
    for block in _blocks(data, (5, 999, 17, 4096)):
        bodies.extend(piece for _, piece in cutter.feed(block))
    assert cutter.finish() is None
    bodies.extend(piece for _, piece in cutter.tail())
    expected = [data[:whole_cuts[0][0]] + b"]}"]
    expected += [b"[" + data[b:a] + b"]" for (_, b), (a, _) in zip(whole_cuts, whole_cuts[1:])]
    expected.append(b'{"traceEvents":[' + data[whole_cuts[-1][1]:])
    assert bodies == expected
    ev = parse_trace_blocks(_blocks(data), size)
    assert ev.meta["distributedInfo"] == {"rank": 3} and len(ev) == 3000
    assert ev.ts[1] - ev.ts[0] == 1.0  # exact times survive the slices


def test_a_slice_that_does_not_decode_alone_restarts() -> None:
    events = [f'{{"ph":"X","name":"a","ts":{i},"dur":1}}' for i in range(2000)]
    events[1500] = '{"ph":"X","name":"\xff","ts":5,"dur":1}'  # invalid UTF-8 once encoded below
    data = ('{"traceEvents":[' + ",".join(events) + "]}").encode("latin-1")
    with pytest.raises(Restart):
        parse_trace_blocks(_blocks(data), 2048)


def test_the_forked_helper_gives_the_same_columns(monkeypatch) -> None:
    """Every other slice decoded in a forked process: same columns as one process, in order."""
    events = [f'{{"ph":"X","cat":"cpu_op","name":"op{i % 37}","ts":{5000 + i}.5,"dur":0.25,'
              f'"pid":1,"tid":{i % 3}}}' for i in range(4000)]
    data = ('{"traceEvents":[' + ",".join(events) + '],"traceName":"t"}').encode()
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 8192)
    alone = parse.parse_trace_bytes(data)
    monkeypatch.setattr(parse, "_may_fork", lambda: True)
    same_events(parse_trace_blocks(_blocks(data), 8192), alone)


def test_a_helper_that_dies_sends_the_file_to_the_whole_buffer_reader(monkeypatch) -> None:
    import yoloprof.traces.stream as stream

    events = [f'{{"ph":"X","name":"a","ts":{i},"dur":1}}' for i in range(4000)]
    data = ('{"traceEvents":[' + ",".join(events) + "]}").encode()
    monkeypatch.setattr(parse, "_may_fork", lambda: True)
    monkeypatch.setattr(stream, "_child", lambda *_: os._exit(3))
    with pytest.raises(Restart):
        parse_trace_blocks(_blocks(data), 8192)
