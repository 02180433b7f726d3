"""The user loop's intra-op threads (set with `threads=`, recorded in `config.threads`, restored
after), and the warning when trials disagree (CV of per-trial step times above 10%).

References: torch.get_num_threads() seen inside and after the block; hand-worked trial lists whose
CV (sample SD / mean) is worked out here with the statistics module.
"""

from __future__ import annotations

import io
import json
import statistics

import pytest
import torch

import yoloprof
from yoloprof.capturing.passes.steady_steps import trial_spread_warnings
from yoloprof.config.capture_settings import effective_threads
from yoloprof.errors import UsageError
from yoloprof.render._out import Out
from yoloprof.render.terminal import render_summary


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values)


def test_the_issues_trials_are_flagged_with_their_cv_and_thread_count():
    trials = [87.1, 13.5, 14.3]
    assert _cv(trials) == pytest.approx(1.1035, abs=1e-3)  # mean 38.3, SD 42.26: the issue's "110% CV"
    [warning] = trial_spread_warnings(trials, {"threads": 2, "threads_set": False})
    assert warning.startswith("trials disagree: step_ms CV 110% > 10% across 3 trials (87.1, 13.5, 14.3 ms)")
    assert "(2, left as torch had them: threads= sets them)" in warning
    [cli] = trial_spread_warnings(trials, {"threads": 1})  # the CLI sets them: no hint to set them
    assert "intra-op threads (1)" in cli and "threads=" not in cli


@pytest.mark.parametrize("trials,flagged", [
    ([10.0, 10.5, 9.5], False),     # CV 5%
    ([10.0, 12.0, 10.0], True),     # CV 11.2%
    ([10.0, 11.0, 12.0], False),    # CV 9.1%
    ([100.0, 80.0], True),          # CV 15.7%
    ([12.0], False),                # one trial: no spread to judge
    ([], False),
])
def test_the_threshold_is_a_10pct_cv(trials, flagged):
    if len(trials) >= 2:
        assert (_cv(trials) > 0.10) is flagged
    assert bool(trial_spread_warnings(trials, {})) is flagged


def _loop(out, **options) -> dict:
    model = torch.nn.Linear(8, 8)
    with yoloprof.profile(out, model=model, warmup=1, warmup_max=1, steps=3, trace_steps=0, modules=False,
                          flops=False, **options) as prof:
        while not prof.done:
            with prof.phase("forward"):
                model(torch.rand(4, 8)).sum().backward()
            prof.step()
    return json.loads((out / "profile.json").read_text())


def test_threads_are_set_for_the_block_recorded_and_restored(tmp_path):
    before = torch.get_num_threads()
    asked = 1 if before != 1 else 2
    try:
        profile = _loop(tmp_path / "a", threads=asked)
        assert torch.get_num_threads() == before  # restored
        assert profile["config"]["threads"] == asked and profile["config"]["threads_set"] is True
        # 0 = auto, as the CLI's --threads 0
        profile = _loop(tmp_path / "b", threads=0)
        assert profile["config"]["threads"] == effective_threads(0) and torch.get_num_threads() == before
    finally:
        torch.set_num_threads(before)


def test_without_threads_the_count_is_left_as_found_and_recorded(tmp_path):
    before = torch.get_num_threads()
    profile = _loop(tmp_path / "c")
    assert torch.get_num_threads() == before
    assert profile["config"]["threads"] == before and profile["config"]["threads_set"] is False
    buf = io.StringIO()
    render_summary(dict(yoloprof.load(tmp_path / "c" / "profile.json").summary()), out=Out(buf, rich=False))
    assert f"threads={before}" in buf.getvalue()


def test_threads_are_restored_when_the_loop_raises(tmp_path):
    before = torch.get_num_threads()
    asked = 1 if before != 1 else 2
    with pytest.raises(ZeroDivisionError):
        with yoloprof.profile(tmp_path / "d", threads=asked, warmup=1, steps=2, trace_steps=0, flops=False):
            assert torch.get_num_threads() == asked
            raise ZeroDivisionError
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_bad_threads_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="threads"):
        yoloprof.profile("unused", threads=bad)


def test_disagreeing_blocks_of_a_real_loop_warn_in_the_profile_and_summary(tmp_path):
    """A loop whose first block sleeps 10x longer: the blocks' CV is far above 10%."""
    model = torch.nn.Linear(4, 4)
    with yoloprof.profile(tmp_path / "e", model=model, warmup=1, warmup_max=1, steps=6, repeat=3, trace_steps=0,
                          modules=False, flops=False) as prof:
        i = 0
        while not prof.done:
            import time

            time.sleep(0.02 if 1 <= i <= 2 else 0.002)  # iterations 1-2: the first timed block
            i += 1
            prof.step()
    profile = json.loads((tmp_path / "e" / "profile.json").read_text())
    blocks = profile["metrics"]["step_ms"]["samples"]
    assert len(blocks) == 3 and _cv(blocks) > 0.10
    [warning] = [w for w in profile["warnings"] if w.startswith("trials disagree")]
    assert f"CV {100 * _cv(blocks):.0f}%" in warning
    buf = io.StringIO()
    render_summary(dict(yoloprof.load(tmp_path / "e" / "profile.json").summary()), out=Out(buf, rich=False))
    assert "trials disagree: step_ms CV" in buf.getvalue()
