"""Selections on the readers (readers/select.py, traces/step_selection.py): --steps, --window, --ranks.

Reference: synthetic traces whose per-step kernel times are chosen by hand, so the mean over the
selected steps is known without the engine (tests/helpers/kineto_synth.py)."""

from __future__ import annotations

import json

import pytest

from helpers.fixtures_readers import KERNEL_US
from tests.helpers.kineto_synth import STEP_US, step_trace
from tests.helpers.paths import run_main
from yoloprof.readers._common import metric_value
from yoloprof.readers.load import load_any
from yoloprof.readers.ranks import read_ranks
from yoloprof.readers.select import parse_ranks, parse_steps, parse_window
from yoloprof.traces.step_selection import StepSelection


def test_steps_give_the_mean_over_those_steps(trace) -> None:
    profile = load_any(trace, StepSelection(steps=(2, 3)))
    assert profile["trace"]["steps_analyzed"] == 2
    assert metric_value(profile, "kernel_ms") == pytest.approx((200 + 400) / 2 / 1000)
    assert metric_value(load_any(trace), "kernel_ms") == pytest.approx(sum(KERNEL_US) / 5 / 1000)


def test_window_takes_the_steps_starting_in_it(trace) -> None:
    # steps start at 0, 1, 2, 3, 4 ms from the first event: [1.5, 3.5) holds steps 3 and 4
    profile = load_any(trace, StepSelection(window_ms=(1.5 * STEP_US / 1000, 3.5 * STEP_US / 1000)))
    assert metric_value(profile, "kernel_ms") == pytest.approx((400 + 800) / 2 / 1000)


def test_cli_flags_and_their_errors(trace) -> None:
    out = run_main("kernels", str(trace), "--json", "--steps", "5")
    assert out.returncode == 0, out.stderr
    one = run_main("summary", str(trace), "--json", "--steps", "5")
    assert json.loads(one.stdout)["trace"]["steps_analyzed"] == 1
    assert json.loads(out.stdout)  # a JSON document
    for args, flag in ((["--steps", "9"], "--steps"), (["--steps", "3-1"], "--steps"),
                       (["--window", "5:1"], "--window"), (["--window", "50:60"], "--window"),
                       (["--ranks", "0"], "--ranks")):
        res = run_main("summary", str(trace), *args)
        assert res.returncode == 2 and flag in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_a_profile_refuses_a_step_selection(tmp_path) -> None:
    from tests.helpers.profiles import cpu_train_profile
    from yoloprof.profiles.io import write_profile

    path = write_profile(tmp_path / "profile.json", cpu_train_profile())
    res = run_main("ops", str(path), "--steps", "1-2")
    assert res.returncode == 2 and "this is a profile" in res.stderr


def test_parsers() -> None:
    assert parse_steps("4-6") == (4, 6) and parse_steps("5") == (5, 5)
    assert parse_window("120:480.5") == (120.0, 480.5)
    assert parse_ranks("0,3,5-7") == frozenset({0, 3, 5, 6, 7})


def test_ranks_parse_only_the_chosen_files(tmp_path, monkeypatch) -> None:
    for r in (0, 1, 3):
        (tmp_path / f"rank{r}.json").write_bytes(step_trace([100.0 * (r + 1)] * 2, rank=r))
    seen = []
    import yoloprof.readers.ranks as ranks_mod

    real = ranks_mod._load_one
    monkeypatch.setattr(ranks_mod, "_load_one", lambda p: seen.append(p) or real(p))
    view = read_ranks(tmp_path, jobs=1, ranks=frozenset({0, 3}))
    assert [r["rank"] for r in view["ranks"]] == [0, 3]
    assert sorted(p.rsplit("/", 1)[-1] for p in seen) == ["rank0.json", "rank3.json"]
    res = run_main("summary", str(tmp_path), "--ranks", "5", "--jobs", "1")
    assert res.returncode == 2 and "has ranks 0, 1, 3" in res.stderr


def test_rank_workers_fit_in_the_memory_available(tmp_path) -> None:
    from yoloprof.readers.ranks import WHOLE_PEAK_PER_BYTE, _memory_jobs

    traces = []
    for r in range(4):
        traces.append(tmp_path / f"rank{r}.json")
        traces[-1].write_bytes(step_trace([100.0] * 3, rank=r))
    size = max(p.stat().st_size for p in traces)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 99999999 kB\nMemAvailable: {int(size * WHOLE_PEAK_PER_BYTE * 2.5) >> 10} kB\n")
    assert _memory_jobs(traces, str(meminfo)) == 2
    assert _memory_jobs(traces, str(tmp_path / "absent")) is None
