"""The columnar cache beside a large trace (readers/cache.py): used when fresh, never stale, never
required. Small synthetic traces go through the large-trace path ($YOLOPROF_STREAM_MIN_MB=0)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from helpers.fixtures_readers import uniform_step_trace
from tests.helpers.kineto_synth import step_trace
from yoloprof.readers import cache
from yoloprof.readers._common import metric_value
from yoloprof.readers.load import load_any
from yoloprof.traces import parse


def _kernel_ms(profile: dict) -> float:
    return metric_value(profile, "kernel_ms")


def _no_parse(monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("parsed although the cache is fresh")
    monkeypatch.setattr(parse, "_part", refuse)


def test_second_reader_takes_the_cache(big, monkeypatch) -> None:
    first = load_any(big)
    assert _kernel_ms(first) == pytest.approx(0.1)  # 100 us per step, by hand
    assert cache.cache_path(big).is_file()
    _no_parse(monkeypatch)
    assert load_any(big) == json.loads(json.dumps(first))


def test_cached_columns_are_the_parsed_ones(big) -> None:
    load_any(big)
    ev = cache.read_events(big)
    ref = parse.parse_trace_bytes(big.read_bytes())
    for col in ("name", "cat", "thread", "ts", "dur", "corr", "device", "stream"):
        assert np.array_equal(getattr(ev, col), getattr(ref, col)), col
    assert (ev.strings, ev.t0, ev.meta) == (ref.strings, ref.t0, ref.meta)


def test_a_changed_trace_is_read_again(big) -> None:
    load_any(big)
    big.write_bytes(uniform_step_trace(300.0))
    os.utime(big, ns=(1, 1))  # even with an old mtime the size differs; the key holds both
    assert _kernel_ms(load_any(big)) == pytest.approx(0.3)
    same_size = uniform_step_trace(200.0)
    assert len(same_size) == big.stat().st_size
    big.write_bytes(same_size)  # same size, new mtime
    assert _kernel_ms(load_any(big)) == pytest.approx(0.2)


def test_another_engine_version_is_not_served(big, monkeypatch) -> None:
    load_any(big)
    monkeypatch.setattr(cache, "engine_version", lambda: "another")
    _no_parse(monkeypatch)
    with pytest.raises(AssertionError, match="parsed"):
        load_any(big)


def test_a_corrupt_cache_falls_back_to_parsing_and_is_rewritten(big) -> None:
    first = load_any(big)
    for path in (cache.profile_path(big), cache.cache_path(big)):
        for garbage in (b"", b"not a cache at all", path.read_bytes()[:200]):
            path.write_bytes(garbage)
            if path == cache.cache_path(big):
                assert cache.read_events(big) is None
                cache.profile_path(big).unlink()  # so that the columns are written again
            assert _kernel_ms(load_any(big)) == _kernel_ms(first)
    assert cache.read(big) is not None and cache.read_events(big) is not None  # rewritten whole


def test_an_unwritable_cache_folder_falls_back_to_parsing(big, tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(blocker / "cache"))  # a folder under a file
    assert _kernel_ms(load_any(big)) == pytest.approx(0.1)
    assert not (blocker.parent / "cache").exists() and cache.read(big) is None
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob("*.tmp"))


def test_the_cache_can_be_turned_off_or_moved(big, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    load_any(big)
    assert not cache.cache_path(big).exists() and not cache.profile_path(big).exists()
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "elsewhere"))
    load_any(big)
    assert cache.cache_path(big).parent == tmp_path / "elsewhere" and cache.cache_path(big).is_file()
    assert not (big.parent / f".{big.name}{cache.CACHE_SUFFIX}").exists()


def test_a_selection_reads_the_cached_columns_without_parsing(big, monkeypatch) -> None:
    from yoloprof.traces.step_selection import StepSelection

    big.write_bytes(step_trace([100.0, 300.0, 500.0, 700.0]))
    load_any(big)
    _no_parse(monkeypatch)
    picked = load_any(big, StepSelection(steps=(2, 3)))
    assert _kernel_ms(picked) == pytest.approx((300 + 500) / 2 / 1000)
