"""The plain-file reader (traces/ranges.py: slices read straight from the file, claimed in turn by
this process and a forked helper) gives today's columns bit for bit. Every fixture trace is
checked in tests/test_traces_stream.py (beside the stream, on the same reference); here the cut
offsets against `kineto._cuts`, one process against two, and what it hands back to the stream.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.helpers.events import same_events
from yoloprof.traces import kineto, parse, ranges


def _plain(tmp_path: Path, data: bytes, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _hand_made(n: int = 3000) -> bytes:
    events = [f'{{"ph":"X","name":"op{i % 7}","ts":{1000 + i}.125,"dur":1,"pid":1,"tid":{i % 3}}}'
              for i in range(n)]
    seps = [",", " ,", ",\n ", "\n,\n"]
    body = "".join(e + seps[i % 4] for i, e in enumerate(events[:-1])) + events[-1]
    return ('{"schemaVersion":1,"traceEvents":[' + body + '],"distributedInfo":{"rank":3}}').encode()


def test_cuts_found_by_windows_are_the_whole_buffer_cuts(tmp_path: Path, monkeypatch) -> None:
    """Separators of every spacing, windows far smaller than the gaps between separators (they
    grow until one holds a separator): the offsets are `kineto._cuts`' own."""
    data = _hand_made()
    monkeypatch.setattr(ranges, "_WINDOW", 8)
    with open(_plain(tmp_path, data), "rb") as fh:
        cuts = ranges.plan_file(fh.fileno(), len(data), data[:ranges.HEAD_BYTES], 4096)
    assert cuts and cuts == kineto._cuts(data, 4096)


@pytest.mark.parametrize("helper", [False, True])
def test_one_process_or_with_a_helper_the_same_columns(tmp_path: Path, monkeypatch, helper: bool) -> None:
    data = _hand_made()
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 2)
    monkeypatch.setattr(ranges, "_may_fork", lambda: helper)
    got = ranges.parse_trace_file(_plain(tmp_path, data))
    assert got is not None and got.meta["distributedInfo"] == {"rank": 3} and len(got) == 3000
    same_events(got, parse.parse_trace_bytes(data))
    assert got.ts[1] - got.ts[0] == 1.0  # exact times survive the slices


def test_what_it_does_not_take_goes_back_to_the_stream(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 2048)
    events = [f'{{"ph":"X","name":"a","ts":{i},"dur":1}}' for i in range(2000)]
    bad = list(events)
    bad[1500] = '{"ph":"X","name":"\xff","ts":5,"dur":1}'  # invalid UTF-8 once encoded below
    good = ('{"traceEvents":[' + ",".join(events) + "]}").encode()
    cases = {"gz": gzip.compress(good), "bom": b"\xef\xbb\xbf" + good, "small": good[:1000] + b"]}",
             "bad": ('{"traceEvents":[' + ",".join(bad) + "]}").encode("latin-1")}
    for name, data in cases.items():
        assert ranges.parse_trace_file(_plain(tmp_path, data, name)) is None, name
    refused = ranges.parse_trace_file(_plain(tmp_path, good, "good"), accept=lambda head: False)
    assert refused is None and ranges.parse_trace_file(tmp_path / "good") is not None


def _with_shapes(n: int = 3000) -> bytes:
    """cpu_ops whose "Input Dims" differ from event to event: `GpuArgs.dims` is a msgspec.Raw,
    a view of the buffer the slice was decoded from."""
    events = [f'{{"ph":"X","cat":"cpu_op","name":"op{i % 5}","ts":{1000 + i},"dur":1,"pid":1,"tid":1,'
              f'"args":{{"Input Dims":[[{i % 97}, 3], []]}}}}' for i in range(n)]
    return ('{"traceEvents":[' + ",".join(events) + '],"record_shapes":1}').encode()


@pytest.mark.parametrize("helper", [False, True])
def test_the_reused_read_buffer_gives_the_same_shapes(tmp_path: Path, monkeypatch, helper: bool) -> None:
    """Every middle slice is read into one buffer per process: the shapes (decoded from views of
    it) are those of the whole-buffer reader."""
    data = _with_shapes()
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 2)
    monkeypatch.setattr(ranges, "_may_fork", lambda: helper)
    got = ranges.parse_trace_file(_plain(tmp_path, data))
    assert got is not None and len(got.shape_strings) == 97
    same_events(got, parse.parse_trace_bytes(data))


def test_a_view_kept_past_its_slice_keeps_its_bytes(tmp_path: Path, monkeypatch) -> None:
    """Should the column pass ever keep a msgspec.Raw (a view of the read buffer) beyond its
    slice, the buffer is left to it and the next slice gets a new one: what the view holds at
    the end is what was decoded, never a later slice's bytes."""
    data = _with_shapes()
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(ranges, "_may_fork", lambda: False)
    kept: list[tuple[object, bytes]] = []
    real = parse._part

    def keeping(events, base):
        raw = events[0].args.dims
        kept.append((raw, bytes(raw)))
        return real(events, base)

    monkeypatch.setattr(parse, "_part", keeping)
    allocated = []
    monkeypatch.setattr(ranges, "bytearray", lambda n: allocated.append(n) or bytearray(n), raising=False)
    assert ranges.parse_trace_file(_plain(tmp_path, data)) is not None
    assert len(kept) > 4 and all(bytes(raw) == then for raw, then in kept)  # type: ignore[call-overload]
    assert len(allocated) >= len(kept)  # a new buffer after every kept view
