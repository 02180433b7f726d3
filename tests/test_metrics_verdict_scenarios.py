"""Verdicts validated on induced bottlenecks (DESIGN.md section 6, issue: the headline answer must
name what really bounds a step).

CPU: real captures of workloads built to have one bottleneck each (tests/helpers/verdicts/scenarios.py),
and of the same workload with the bottleneck removed: the verdict must name the induced
bottleneck, flip once it is removed, and `compare` must call the removal a significant improvement.
GPU: the real fixture traces, edited the way the change would show in them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.paths import trace_path
from helpers.verdicts.gpu_traces import GPU_SCENARIOS, load, profile_of
from helpers.verdicts.scenarios import scenarios
from yoloprof.metrics.stats import CV_WARN

SCENARIO_NAMES = ["dataloader", "compute", "framework-overhead", "allocator-churn", "preprocess", "postprocess"]


def _capture(sc, root: Path) -> dict[str, dict]:
    """{"slow": profile, "fixed": profile} of one scenario.

    One intra-op thread (settings.threads=1): on a 2-core machine shared with the test runner, two
    threads make CPU trials bimodal, and a verdict test must not depend on that. Five trials a
    side: the suite runs beside other tests (xdist), and one trial slowed by a neighbour must not
    leave a large effect "inconclusive". A trace window of two recorded steps after one discarded
    (no skipped step): the op shares the rules read are per step, and a smaller trace is the larger
    part of what a scenario costs. A fixed warm-up (warmup_max = warmup): the auto one adds a
    tested window and, on a loaded machine, more warm-up steps to each of the ten trials (a
    quarter of a scenario's CPU), for bottlenecks that hold from the first step."""
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.capture_settings import CaptureSettings

    from yoloprof.workloads import nms

    out = {}
    for side, settings in (("slow", sc.slow), ("fixed", sc.fixed)):
        if settings is not None:
            s = CaptureSettings.for_mode(sc.mode, **settings, repeat=5, threads=1, modules=False,
                                         trace_wait=0, trace_active=2, warmup_max=settings["warmup"])
            kernel = nms._tv_batched_nms
            if sc.pure_torch_nms and side == "slow":
                nms._tv_batched_nms = None
            try:
                out[side] = capture(s, root / side, echo_warnings=False)
            finally:
                nms._tv_batched_nms = kernel
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_cpu_scenario(scenario_inputs, tmp_path, name):
    """One test per scenario, so that each is captured once and the six spread over the xdist
    workers (a shared fixture would capture them all on one worker, or once per worker):
    the verdict names the induced bottleneck; once it is removed the verdict flips and `compare`
    calls the removal a significant improvement."""
    from yoloprof.readers.compare import compute_compare

    sc = next(s for s in scenarios(scenario_inputs) if s.name == name)
    profiles = _capture(sc, tmp_path)
    v = profiles["slow"]["verdict"]
    assert v["bound"] == sc.bound, f"{name}: {v['bound']} ({v['why']})"
    for word in sc.why_names:
        assert word in v["why"], f"{name}: {word!r} not in {v['why']!r}"
    if sc.fixed is None:
        return
    slow, fixed = profiles["slow"], profiles["fixed"]
    assert fixed["verdict"]["bound"] != sc.bound, fixed["verdict"]["why"]
    # one capture per side: judged against a run-to-run noise floor of 5% between processes (a
    # generous one for a loaded CPU); removing a whole bottleneck clears it
    floor = {"sd": 0.05, "df": 4, "within_sd": 0.01, "trials": 3, "processes": 5}
    result = compute_compare(slow, fixed, metrics=["step_ms"], floors={"step_ms": floor})
    row = next(r for r in result["metrics"] if r["metric"] == "step_ms")
    if row["verdict"] != "improved" and max(row["before"]["cv"] or 0, row["after"]["cv"] or 0) > CV_WARN:
        # a trial slowed many-fold by a neighbour (another xdist worker's sweep, CI's SLURM jobs)
        # widens that capture's own within-process spread, which a one-process side is judged by:
        # capture both sides again, once (a real null stays a null; this is about the machine)
        profiles = _capture(sc, tmp_path / "again")
        slow, fixed = profiles["slow"], profiles["fixed"]
        result = compute_compare(slow, fixed, metrics=["step_ms"], floors={"step_ms": floor})
        row = next(r for r in result["metrics"] if r["metric"] == "step_ms")
    assert row["verdict"] == "improved", row
    assert result["bound"] == {"before": sc.bound, "after": fixed["verdict"]["bound"]}
    if name == "dataloader":
        # The demo's complaint: a detector training step on the CPU was called framework-bound while
        # convolutions carried the time. The built-in detector's step (this scenario's fixed side,
        # small images) must be compute-bound and name a convolution op.
        v = fixed["verdict"]
        assert v["bound"] == "compute" and "convolution" in v["why"], v["why"]


@pytest.mark.parametrize("name", sorted(GPU_SCENARIOS))
def test_gpu_verdicts_on_edited_fixture_traces(name):
    spec = GPU_SCENARIOS[name]
    path = trace_path(spec["fixture"])
    doc = load(path)
    if spec["induce"]:
        doc = spec["induce"](doc)
    v = profile_of(doc, name)["verdict"]
    assert spec["expect"](v), f"{name}: {v['bound']} ({v['why']})"
    for word in spec["names"]:
        assert word in v["why"], f"{name}: {word!r} not in {v['why']!r}"
    doc = load(path)
    if spec["remove"]:
        doc = spec["remove"](doc)
    after = profile_of(doc, name)["verdict"]
    assert spec["after"](after), f"{name} removed: {after['bound']} ({after['why']})"
