"""Est. SM efficiency and est. achieved occupancy in `summary`'s headline (issue 36 item 6).

The reference is torch-tb-profiler 0.4.3's own overview of its sample trace (the tbplugin
fixtures' README: 62.65% and 49.14% on GPU 0). The headline computes them over the analysed
steps; with every step analysed that is the plugin's overview, as `summary --per-step` shows it.
A CPU trace, and kernels without the args (AMD), show n/a with the reason.
"""

from __future__ import annotations

import json

import pytest

from helpers.paths import REPO, run_main, trace_path

TBPLUGIN = REPO.parent / "shared" / "fixtures" / "tbplugin"
RESNET = "resnet50_num_workers_0_worker0.1623143566756.pt.trace.json.gz"
NAMES = ("sm_efficiency_pct", "achieved_occupancy_pct")


def _headline(*args: str) -> dict[str, dict]:
    res = run_main("summary", *args, "--json")
    assert res.returncode == 0, res.stderr
    return {f["name"]: f for f in json.loads(res.stdout)["headline"]}


def _need(path):
    if not path.is_file():
        pytest.skip("shared fixtures absent")
    return str(path)


def test_the_plugins_sample_reads_the_plugins_own_figures():
    path = _need(TBPLUGIN / RESNET)
    head = _headline(path)
    assert head["sm_efficiency_pct"]["value"] == pytest.approx(62.65, abs=0.005)
    assert head["achieved_occupancy_pct"]["value"] == pytest.approx(49.14, abs=0.005)
    assert head["sm_efficiency_pct"]["unit"] == "%"
    text = run_main("summary", path).stdout.splitlines()
    at = next(i for i, line in enumerate(text) if "device utilisation" in line)
    assert "est. SM efficiency" in text[at + 1] and "62.65%" in text[at + 1]
    assert "est. occupancy" in text[at + 2] and "49.14%" in text[at + 2]


def test_every_step_of_a_trace_reads_as_the_per_step_overview():
    path = _need(trace_path("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
    head = _headline(path, "--steps", "101-105")
    overall = json.loads(run_main("summary", path, "--per-step", "--json").stdout)["gpu_metrics"]["overall"][0]
    assert head["sm_efficiency_pct"]["value"] == pytest.approx(overall["sm_efficiency_pct"], abs=1e-9)
    assert head["achieved_occupancy_pct"]["value"] == pytest.approx(overall["occupancy_pct"], abs=1e-9)


def test_kernels_without_the_args_say_which_is_missing():
    head = _headline(_need(trace_path("mi250_minitoy_train_ROCm6_2_kineto.json.gz")))
    assert head["sm_efficiency_pct"]["value"] is None and "blocks per SM" in head["sm_efficiency_pct"]["na"]
    assert "occupancy" in head["achieved_occupancy_pct"]["na"]


def test_a_cpu_trace_shows_na_with_the_reason(tmp_path):
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
               "ts": 1000.0 * i, "dur": 900.0} for i in range(1, 4)]
    events += [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                "ts": 1000.0 * i + 10, "dur": 500.0} for i in range(1, 4)]
    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    head = _headline(str(trace))
    for name in NAMES:
        assert head[name]["value"] is None and "no device kernels" in head[name]["na"]
