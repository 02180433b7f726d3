"""`yoloprof.profile` around a user's own loop (tests/assets/user_loop.py): the profile it writes,
the readers on it, module times against known work, short loops, ranks, decorators."""

from __future__ import annotations

import json
import sys
import time
from importlib.resources import files

import jsonschema
import pytest

SCHEMA = json.loads(files("yoloprof.profiles").joinpath("profile.schema.json").read_text())


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from yoloprof.cli import main

    code = main([*args])
    out, err = capsys.readouterr()
    return code, out, err


def test_user_script_writes_a_valid_profile(two_runs):
    profile = json.loads(two_runs[0].read_text())
    jsonschema.validate(profile, SCHEMA)
    assert profile["kind"] == "train" and profile["config"]["source"] == "yoloprof.profile"
    assert (two_runs[0].parent / "profile_trace.json").stat().st_size > 1000
    step = profile["metrics"]["step_ms"]
    assert step["n"] == 3  # repeat=3 blocks of the 6 timed steps
    # the phases were timed inside the steps: they never exceed the step they are part of
    for name in ("forward", "backward", "optimizer"):
        for part, whole in zip(profile["metrics"][f"{name}_wall_ms"]["samples"], step["samples"]):
            assert 0 < part < whole
    # img_per_s from the batch the loop passed to prof.step (8 rows)
    for ms, ips in zip(step["samples"], profile["metrics"]["img_per_s"]["samples"]):
        assert ips == pytest.approx(8 * 1000.0 / ms)
    assert profile["metrics"]["gflops_per_step"]["value"] > 0
    # the windows' iterations (modules: 1 warm-up with the hooks attached + 2 recorded), plus the
    # timed steps the steady-state check turned into warm-up
    extra = profile["config"]["warmup_used"]["steps"][0] - 1
    assert profile["config"]["iterations_run"] == 1 + extra + 6 + 3 + 1 + (1 + 2) + 1
    assert profile["config"]["iterations_lacking"] == 0


def test_model_and_data_facts_are_exact(two_runs, user_loop):
    profile = json.loads(two_runs[0].read_text())
    # by hand: Linear(16,32) + Linear(32,32) + Linear(32,4), weights and biases, float32
    params = (16 * 32 + 32) + (32 * 32 + 32) + (32 * 4 + 4)
    assert profile["model"] == {"params_total": params, "params_trainable": params,
                                "model_mb": params * 4 / 2**20, "batch_bytes": 8 * 16 * 4}


def test_readers_work_on_the_result(two_runs, capsys):
    path = str(two_runs[0])
    for args in (("summary", path), ("modules", path), ("modules", path, "--depth", "1"),
                 ("hotspots", path), ("phases", path), ("ops", path)):
        code, out, err = _cli(capsys, *args)
        assert code == 0, (args, err)
        assert out.strip()
    code, out, _ = _cli(capsys, "modules", path, "--depth", "1", "--json")
    rows = json.loads(out)["modules"]
    assert {r["module"] for r in rows} == {"", "body", "slow", "head"}
    assert json.loads(_cli(capsys, "modules", path, "--depth", "0", "--json")[1])["modules"][0]["module"] == ""
    code, out, _ = _cli(capsys, "hotspots", path, "--json", "--sort", "self")
    funcs = json.loads(out)["functions"]
    assert funcs and funcs == sorted(funcs, key=lambda f: -f["self_ms"])
    assert any(f["function"] == "train" and f["file"].endswith("user_loop.py") for f in
               json.loads(_cli(capsys, "hotspots", path, "--json", "--top", "0")[1])["functions"]) is False
    # the loop's own function is not in the hotspots window (it started before); its forward is
    assert any(f["function"] == "forward" and f["file"].endswith("user_loop.py") for f in
               json.loads(_cli(capsys, "hotspots", path, "--json", "--top", "0")[1])["functions"])


def test_compare_sees_the_slow_module(two_runs, capsys):
    code, out, err = _cli(capsys, "compare", str(two_runs[0]), str(two_runs[1]), "--json")
    assert code == 0, err
    step = next(m for m in json.loads(out)["metrics"] if m["metric"] == "step_ms")
    # the slow run sleeps 20 + 30 ms per step, the fast one 5 + 7.5 ms: 37.5 ms more per step.
    # Which verdict 3 samples reach depends on this machine's load (sleeps overshoot on a busy
    # machine), so the test pins that a verdict was computed and that it points the right way.
    assert step["before"]["n"] == step["after"]["n"] == 3
    assert step["verdict_code"] not in (None, "insufficient", "improved", "equivalent"), step
    assert step["after"]["value"] > step["before"]["value"]


def test_module_times_match_known_work(two_runs, user_loop):
    """The Slow module times its own sleeps (forward, and backward in its autograd Function): the
    hooks' figures for it must hold that time and little more."""
    import statistics

    profile = json.loads(two_runs[1].read_text())
    rows = {r["module"]: r for r in profile["modules"]["rows"]}
    slow_mod = user_loop.train.last_model.slow
    # iterations before the module window: 1 warm-up (+ any the steady-state check added) + 6 timed
    # + 3 trace + 1 FLOPs; then the window's own warm-up and 2 recorded
    first = 12 + profile["config"]["warmup_used"]["steps"][0] - 1
    fwd_ms = statistics.fmean(slow_mod.fwd_ms[first:first + 2])
    bwd_ms = statistics.fmean(slow_mod.bwd_ms[first:first + 2])
    slow = rows["slow"]
    assert fwd_ms >= 1e3 * user_loop.SLEEP_FWD_S and bwd_ms >= 1e3 * user_loop.SLEEP_BWD_S
    assert fwd_ms <= slow["forward_ms"] < fwd_ms * 1.25 + 3
    assert bwd_ms <= slow["backward_ms"] < bwd_ms * 1.25 + 3
    assert slow["calls_per_step"] == 1.0
    root = rows[""]
    # inclusive holds the children; self is inclusive minus the children's inclusive
    children = sum(rows[n]["forward_ms"] for n in ("body", "slow", "head"))
    assert root["forward_ms"] >= children
    assert root["forward_self_ms"] == pytest.approx(root["forward_ms"] - children, abs=1e-6)
    assert root["backward_ms"] >= slow["backward_ms"]
    body_kids = sum(rows[f"body.{i}"]["backward_ms"] for i in range(4))
    assert rows["body"]["backward_ms"] == pytest.approx(rows["body"]["backward_self_ms"] + body_kids)


def test_inplace_model_records_backward(tmp_path):
    """ReLU(inplace=True) after a module breaks register_full_backward_hook; our node hooks do not."""
    import torch
    from torch import nn

    import yoloprof

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 1))
    with yoloprof.profile(tmp_path, model=model, warmup=0, steps=1, trace_steps=0, flops=False) as prof:
        while not prof.done:
            model(torch.randn(2, 4)).sum().backward()
            prof.step()
    rows = {r["module"]: r for r in prof.result["modules"]["rows"]}
    assert rows["0"]["backward_ms"] > 0 and rows["2"]["backward_ms"] > 0
    assert prof.result["trace"] is None  # trace_steps=0: no trace window


def test_short_loop_warns_and_says_how_many_it_lacked(tmp_path):
    import yoloprof

    with pytest.warns(RuntimeWarning, match="ended 2 iteration"):
        with yoloprof.profile(tmp_path, warmup=1, steps=4, trace_steps=0, flops=False) as prof:
            for _ in range(1 + 2):  # needs 1 + 4 (no model=: no module window)
                prof.step()
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert profile["config"]["iterations_lacking"] == 2
    assert profile["metrics"]["step_ms"]["n"] == 1 and len(profile["metrics"]["step_ms"]["samples"]) == 1
    assert any("ended 2 iteration" in w for w in profile["warnings"])


def test_loop_without_a_timed_step_warns_and_writes_nothing(tmp_path):
    import yoloprof

    # the block's exit never raises into the loop (DESIGN.md): a warning, no profile
    with pytest.warns(RuntimeWarning, match="no profile written: the loop ran 2 iteration.*one timed step needs 4"):
        with yoloprof.profile(tmp_path, warmup=3, steps=2, trace_steps=0) as prof:
            prof.step()
            prof.step()
    assert not (tmp_path / "profile.json").exists() and prof.result is None and prof.path is None


def test_exception_in_the_block_writes_nothing(tmp_path):
    import yoloprof

    with pytest.raises(KeyError):
        with yoloprof.profile(tmp_path, warmup=0, steps=2, trace_steps=0) as prof:
            prof.step()
            raise KeyError("user bug")
    assert not (tmp_path / "profile.json").exists()


def test_done_then_untouched(tmp_path):
    import yoloprof

    # a fixed warm-up (warmup_max=warmup): 2 timed steps are too few to test for steady state, and
    # the steady-state test would otherwise take 2 more (docs/steady-state.md)
    with yoloprof.profile(tmp_path, warmup=1, warmup_max=1, steps=2, trace_steps=0, flops=False) as prof:
        for i in range(10):
            with prof.phase("work"):
                time.sleep(0.002)
            prof.step()
            assert prof.done == (i >= 2)
    assert prof.iterations == 10
    profile = prof.result
    assert profile["config"]["iterations_lacking"] == 0
    # a 2 ms sleep inside the phase: the phase's own clock agrees with time.sleep's floor
    assert all(s >= 2.0 for s in profile["metrics"]["work_wall_ms"]["samples"])


def test_each_rank_writes_its_own_file(tmp_path, monkeypatch):
    import yoloprof

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with yoloprof.profile(tmp_path, warmup=0, steps=1, trace_steps=1, flops=False) as prof:
        while not prof.done:
            prof.step()
    assert (tmp_path / "profile_rank1.json").exists() and (tmp_path / "profile_trace_rank1.json").exists()
    assert not (tmp_path / "profile.json").exists()
    assert prof.result["config"]["rank"] == 1 and prof.result["config"]["world_size"] == 2


def test_bad_options_and_phase_names_are_usage_errors(tmp_path):
    import yoloprof
    from yoloprof.errors import UsageError

    with pytest.raises(UsageError, match="steps must be"):
        yoloprof.profile(tmp_path, steps=0)
    with pytest.raises(UsageError, match="phase name"):
        with yoloprof.profile(tmp_path, warmup=0, steps=1, trace_steps=0) as prof:
            with prof.phase("has space"):
                pass


def test_timeit_statistics_match_an_independent_computation():
    import statistics

    from scipy import stats

    import yoloprof

    @yoloprof.timeit(repeat=5, number=2, warmup=1, log=False)
    def nap():
        time.sleep(0.003)
        return 7

    assert nap() == 7
    t = nap.last
    assert len(t.samples_ms) == 5 and all(s >= 3.0 for s in t.samples_ms)
    mean, sd = statistics.fmean(t.samples_ms), statistics.stdev(t.samples_ms)
    lo, hi = stats.t.interval(0.95, 4, loc=mean, scale=sd / 5 ** 0.5)
    assert t.stats["mean"] == pytest.approx(mean) and t.stats["cv"] == pytest.approx(sd / mean)
    assert t.stats["ci"] == pytest.approx((lo, hi))


def test_profileit_writes_a_profile(tmp_path):
    import torch

    import yoloprof

    net = torch.nn.Linear(8, 8)

    @yoloprof.profileit(str(tmp_path), model=net, steps=3, repeat=3)
    def infer(x):
        with torch.no_grad():
            return net(x)

    out = infer(torch.randn(4, 8))
    assert out.shape == (4, 8)
    profile = json.loads((tmp_path / "profile.json").read_text())
    jsonschema.validate(profile, SCHEMA)
    assert profile["kind"] == "infer" and profile["metrics"]["step_ms"]["n"] == 3
    assert [r["module"] for r in profile["modules"]["rows"]] == [""]


def test_import_yoloprof_stays_light():
    import subprocess

    code = ("import sys, yoloprof; assert 'torch' not in sys.modules; "
            "assert {'profile', 'timeit', 'profileit'} <= set(dir(yoloprof)); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
