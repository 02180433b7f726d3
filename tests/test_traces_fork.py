"""The fork primitive (traces/fork.py) and the analysis it parallelises: a helper's result is the
function's own, a failing helper is replaced by computing here, and the op table computed in a
helper gives the same figures as computed in one process."""

from __future__ import annotations

import gzip
import json
import mmap
import os

import numpy as np
import pytest

from tests.helpers.paths import TRACES
from yoloprof.traces import analyze, fork, parse
from yoloprof.traces.to_profile import profile_from_analysis


def test_fork_call_returns_the_childs_result_and_reports_its_death() -> None:
    helper = fork.fork_call(lambda: {"pid": os.getpid(), "x": [1, 2]})
    assert helper is not None
    got = helper.join()
    assert got["x"] == [1, 2] and got["pid"] != os.getpid()
    helper.kill()  # after join: nothing left to do

    dying = fork.fork_call(lambda: os._exit(3))
    with pytest.raises(fork.ForkFailed):
        dying.join()


def test_soon_computes_here_when_the_helper_fails() -> None:
    calls = []

    def fn():
        calls.append(os.getpid())
        if os.getpid() != parent:
            raise RuntimeError("helper fails")
        return 42

    parent = os.getpid()
    assert fork.Soon(fn, parallel=True).result() == 42
    assert calls == [parent]  # the helper's attempt ran in the child; the answer came from here
    assert fork.Soon(lambda: 7, parallel=False).result() == 7


@pytest.mark.skipif(not (TRACES / "nccl_data.json.gz").exists(), reason="fixture traces absent")
def test_op_table_in_a_helper_gives_the_same_figures(monkeypatch) -> None:
    ev = parse.parse_trace_bytes(gzip.decompress((TRACES / "nccl_data.json.gz").read_bytes()))

    def figures() -> str:
        profile = profile_from_analysis(analyze.analyze_events(ev, "t"))
        profile.pop("created_at", None)
        return json.dumps(profile, sort_keys=True, default=repr)

    alone = figures()
    forks = []
    real = fork.fork_call
    monkeypatch.setattr(fork, "fork_call", lambda *a, **k: forks.append(1) or real(*a, **k))
    monkeypatch.setattr(analyze, "PARALLEL_TREE_EVENTS", 0)
    monkeypatch.setattr(parse, "SLICE_WORKERS", 2)
    monkeypatch.setattr(parse, "_may_fork", lambda: True)
    assert figures() == alone and forks == [1]


def test_claims_hand_each_number_to_exactly_one_process() -> None:
    fd = fork.claims(range(500))
    assert fd is not None
    try:
        def take() -> list[int]:
            got = []
            while (i := fork.claim(fd)) is not None:
                got.append(i)
            return got

        helper = fork.fork_call(take)
        mine = take()
        theirs = helper.join()
    finally:
        os.close(fd)
    assert sorted(mine + theirs) == list(range(500))
    big = fork.claims(range(40000))  # more than a default pipe holds: the pipe is grown
    if big is not None:
        assert fork.claim(big) == 0
        os.close(big)


def _arrays_result() -> dict:
    return {"ts": np.arange(100_000, dtype=np.float64) * 0.25, "codes": np.arange(7, dtype=np.int32),
            "none": np.zeros(0, np.int8), "strided": np.arange(12).reshape(3, 4)[:, 1],
            "rows": [np.ones(5, np.int64), "name"], "n": 3}


def _in_a_mapping(arr: np.ndarray) -> bool:
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def _same(got: dict, want: dict) -> None:
    for key in ("ts", "codes", "none", "strided"):
        assert got[key].dtype == want[key].dtype and np.array_equal(got[key], want[key]), key
    assert np.array_equal(got["rows"][0], want["rows"][0]) and got["rows"][1:] == ["name"]
    assert got["n"] == 3


@pytest.mark.parametrize("way", ["shared", "no memfd", "shared file fails"])
def test_a_result_with_arrays_comes_back_whole_every_way(monkeypatch, way: str) -> None:
    """The arrays come back through the shared file (views of a copy-on-write mapping: writing
    to one changes this process's copy), or through the pipe where there is no memfd or the
    helper cannot write it: the same objects every way."""
    if way == "no memfd":
        monkeypatch.setattr(fork, "_memfd", lambda: -1)
    if way == "shared file fails":
        def full(*args):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(fork, "_write_shared", full)
    helper = fork.fork_call(_arrays_result)
    assert helper is not None
    got = helper.join()
    _same(got, _arrays_result())
    mapped = way == "shared" and hasattr(os, "memfd_create")
    assert _in_a_mapping(got["ts"]) == mapped
    got["ts"][0] = 9.0  # writable, and private to this process
    assert got["ts"][0] == 9.0


def test_a_helper_that_dies_after_its_arrays_fails_cleanly(monkeypatch) -> None:
    """Killed after writing the shared file, before its message: ForkFailed, no descriptor
    left open."""
    real = fork._write_shared

    def then_die(fd, views):
        real(fd, views)
        os._exit(0)

    monkeypatch.setattr(fork, "_write_shared", then_die)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    helper = fork.fork_call(_arrays_result)
    assert helper is not None
    with pytest.raises(fork.ForkFailed):
        helper.join()
    if before:
        assert len(os.listdir("/proc/self/fd")) == before
