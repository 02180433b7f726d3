"""Steady-state warm-up in the captures (`yoloprof infer`, `yoloprof run`, `yoloprof.profile`): a
model slow on its first 6 calls per process (tests/assets/slow_start.py: 100 ms extra on a 10 ms
sleep, each call timed by the model's own clock) is measured at its steady state with
`--warmup 1`; a steady workload takes about the warm-up asked; the record reaches the profile, its
schema, `summary` and the sweep row.

The reference is the model's own clock over the very calls a trial measured (located from the
profile's `config.warmup_used`): on a loaded machine two stretches of the same steady work can
differ by more than 5%, the same calls cannot."""

from __future__ import annotations

import json
import statistics
from importlib.resources import files

import jsonschema
import pytest

from yoloprof.config import steady_thresholds as conf

SCHEMA = json.loads(files("yoloprof.profiles").joinpath("profile.schema.json").read_text())
COMMON = ("--device", "cpu", "--imgsz", "32", "--warmup", "1", "--no-trace", "--no-modules")


def _cli(capsys, *args: str) -> None:
    from yoloprof.cli import main

    code = main([str(a) for a in args])
    assert code == 0, capsys.readouterr().err


def _measured_calls(durations: list[float], used: dict, measured: int) -> list[list[int]]:
    """Indices of the model calls each trial measured: the trials' calls are the last ones of the
    capture (--no-trace --no-modules: nothing runs the model after them), each trial being its
    warm-up then its measured steps; what comes before (the FLOPs count) is one call."""
    offset = len(durations) - sum(w + measured for w in used["steps"])
    assert offset == 1  # the one FLOPs call before the trials
    calls = []
    for warm in used["steps"]:
        calls.append(list(range(offset + warm, offset + warm + measured)))
        offset += warm + measured
    return calls


def _skip_if_overloaded(mod) -> None:
    """The claim needs a steady state that the slow calls stand out from: where the machine delays
    a tenth of the steady calls by a quarter of the slow-down (a load average of 8-11 on 2 cores
    came close), no test of step times can tell them apart, so the test says so instead of
    failing by chance."""
    steady = sorted(mod.DURATIONS[mod.SLOW_CALLS:])
    p90 = steady[int(0.9 * (len(steady) - 1))]
    if p90 > mod.STEADY_MS + mod.EXTRA_MS / 4:
        pytest.skip(f"machine overloaded: steady {mod.STEADY_MS} ms calls took {p90:.1f} ms at p90")


def _check_steady_measurement(mod, used: dict, measured: int, phase_samples: list[float]) -> None:
    _skip_if_overloaded(mod)
    durations = list(mod.DURATIONS)
    for calls, sample in zip(_measured_calls(durations, used, measured), phase_samples):
        assert min(calls) >= mod.SLOW_CALLS  # every slow call fell in a warm-up
        outer = [durations[i] for i in calls]
        assert statistics.median(outer) < mod.STEADY_MS + mod.EXTRA_MS / 2  # by the model's clock too
        assert sample == pytest.approx(statistics.fmean(outer), rel=0.05)
    # what a fixed one-step warm-up would have measured: trial 1's calls 2..measured+1
    fixed = statistics.fmean(durations[2:2 + measured])
    assert fixed > 1.5 * statistics.fmean(durations[mod.SLOW_CALLS:])
    assert used["steps"][0] >= mod.SLOW_CALLS - 1 and used["steady"][0] is True


def test_infer_with_warmup_1_measures_the_steady_state(slow_start, tmp_path, capsys):
    """Two trials: the first pays the process's slow calls in its own longer warm-up (a slow first
    trial handled by design), both measure steady calls within 5% of the model's own clock."""
    _cli(capsys, "infer", "--model", "slow_start.SlowStart", *COMMON, "--runs", 8, "--repeat", 2,
         "--project", tmp_path)
    profile = json.loads((tmp_path / "infer" / "profile.json").read_text())
    jsonschema.validate(profile, SCHEMA)
    used = profile["config"]["warmup_used"]
    assert (used["min"], used["max"], used["window"]) == (1, 1 + conf.CAP_EXTRA, conf.WINDOW)
    _check_steady_measurement(slow_start, used, 8, profile["metrics"]["forward_ms"]["samples"])
    assert not any("slow first trial" in w or "not steady" in w for w in profile["warnings"])

    from yoloprof.profiles.rows import row_from_profile
    from yoloprof.readers.summary import compute_summary

    row = row_from_profile(profile, {})
    assert row["warmup_used"] == max(used["steps"]) and row["warmup_steady"] is True
    assert compute_summary(profile)["warmup"]["state"] == "steady"
    _cli(capsys, "summary", tmp_path / "infer" / "profile.json")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("warm-up:"))
    assert line.startswith(f"warm-up: {used['steps'][0]}, {used['steps'][1]} step(s) per trial")


def test_training_with_warmup_1_measures_the_steady_state(slow_start, tmp_path, capsys):
    _cli(capsys, "run", "synthetic", "--model", "slow_start.SlowStart", *COMMON, "--batch", 2,
         "--steps", 8, "--workers", 0, "--project", tmp_path)
    profile = json.loads((tmp_path / "train" / "profile.json").read_text())
    used = profile["config"]["warmup_used"]
    _check_steady_measurement(slow_start, used, 8, profile["metrics"]["forward_wall_ms"]["samples"])


def test_user_loop_with_warmup_1_measures_the_steady_state(slow_start, tmp_path):
    """`yoloprof.profile`: the whole step (the loop body is the model call) within 5% of the model's
    own clock over the measured calls; the loop ran exactly the warm-up it recorded."""
    import torch

    import yoloprof

    model, x = slow_start.SlowStart(), torch.zeros(1, 3, 4, 4)
    with yoloprof.profile(tmp_path, model=model, warmup=1, steps=8, trace_steps=0, flops=False,
                          modules=False) as prof:
        while not prof.done:
            model(x)
            prof.step(x)
    _skip_if_overloaded(slow_start)
    used = prof.result["config"]["warmup_used"]
    warm = used["steps"][0]
    assert prof.iterations == warm + 8 == len(slow_start.DURATIONS)
    assert warm >= slow_start.SLOW_CALLS and used["steady"] == [True]
    outer = slow_start.DURATIONS[warm:warm + 8]
    assert prof.result["metrics"]["step_ms"]["value"] == pytest.approx(statistics.fmean(outer), rel=0.05)


def test_a_steady_workload_takes_about_the_warmup_asked(slow_start, tmp_path):
    """The model's slow calls spent beforehand: each trial's warm-up stays near `warmup` (a loaded
    machine may add a step or two), far below the cap; a fixed warm-up is still tested."""
    import dataclasses


    import yoloprof
    from yoloprof.config.capture_settings import CaptureSettings

    slow_start.spend_slow_calls()
    settings = CaptureSettings.for_mode("infer", model="slow_start.SlowStart", device="cpu", imgsz=32,
                                        warmup=2, runs=8, repeat=2, trace=False, modules=False)
    used = yoloprof.capture(settings, tmp_path / "auto").data["config"]["warmup_used"]
    _skip_if_overloaded(slow_start)
    assert all(2 <= w <= 2 + conf.WINDOW // 2 for w in used["steps"]), used
    fixed = dataclasses.replace(settings, warmup_max=2)  # the warm-up as before: tested, not extended
    used = yoloprof.capture(fixed, tmp_path / "fixed").data["config"]["warmup_used"]
    assert used["steps"] == [2, 2] and used["max"] == 2 and all(f in (True, False) for f in used["steady"])


def test_the_training_cap_leaves_the_measured_steps_to_the_data():
    """A finite dataset: the warm-up may extend only as far as leaves every measured step a batch
    of the first pass (no loader restart while timing); synthetic data is made that long."""
    from yoloprof.capturing.builtin.trial_context import _steps_with_room
    from yoloprof.capturing.passes.timing import warmup_cap_of
    from yoloprof.config.capture_settings import CaptureSettings

    s = CaptureSettings.for_mode("train", warmup=3, steps=20)
    assert warmup_cap_of(s) == 3 + 20  # auto: warmup + max(steps, CAP_EXTRA)
    assert warmup_cap_of(s, data_steps=30) == 10 and warmup_cap_of(s, data_steps=23) == 3
    assert _steps_with_room(s) == 23 + 20
    with pytest.raises(Exception, match="--warmup-max must be -1"):
        CaptureSettings.for_mode("train", warmup=3, warmup_max=2).validate()
