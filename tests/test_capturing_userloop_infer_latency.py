"""A `yoloprof.profile(kind="infer")` loop carries the latency block `yoloprof infer` writes.

References: the loop's own per-call times (the measured steps of its blocks) through numpy's
percentile (the definition the `latency` section documents: linear interpolation, numpy's default)
and a plain mean per phase; the block's shape against a real CLI inference capture (the
`infer_profile` fixture), section by section and line by line of the rendered summary.
"""

from __future__ import annotations

import io
import json
import statistics
import time
from typing import Any

import jsonschema
import numpy as np
import pytest
import torch

import yoloprof
from helpers.fixtures_capture import SCHEMA
from yoloprof.render._out import Out
from yoloprof.render.terminal import render_summary

STAGES = ["preprocess", "forward", "postprocess"]


def _infer_loop(out, repeat: int = 2) -> Any:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    raw = torch.rand(2, 16, 16, 3)
    with yoloprof.profile(out, model=model, kind="infer", warmup=1, warmup_max=1, steps=12, repeat=repeat,
                          trace_steps=1, modules=False) as prof:
        while not prof.done:
            with prof.phase("preprocess"):
                x = raw.permute(0, 3, 1, 2).contiguous() * 2 - 1
            with prof.phase("forward"), torch.no_grad():
                y = model(x)
            with prof.phase("postprocess"):
                time.sleep(0.0005)
                y.amax(dim=(2, 3)).tolist()
            prof.step(x)
    return prof


def _summary_text(result) -> str:
    buf = io.StringIO()
    render_summary(dict(result), out=Out(buf, rich=False))
    return buf.getvalue()


def test_an_infer_loop_records_latency_percentiles_of_its_calls(tmp_path):
    prof = _infer_loop(tmp_path / "p")
    profile = json.loads((tmp_path / "p" / "profile.json").read_text())
    jsonschema.validate(profile, SCHEMA)
    calls = [ms for block in prof._trials for ms in block.step_ms]  # the measured calls, as timed
    assert len(calls) == 12
    lat = profile["latency"]
    assert lat["n"] == 12
    for q in (50, 90, 99):
        assert lat[f"p{q}_ms"] == pytest.approx(float(np.percentile(calls, q)))
        assert len(lat[f"p{q}_ci_ms"]) == 2
    assert lat["mean_ms"] == pytest.approx(statistics.fmean(calls))
    assert (lat["min_ms"], lat["max_ms"]) == (pytest.approx(min(calls)), pytest.approx(max(calls)))
    # one p<q>_ms sample per block, as `yoloprof infer` keeps one per trial
    per_block = [b.step_ms for b in prof._trials]
    assert profile["metrics"]["p50_ms"]["samples"] == pytest.approx([float(np.percentile(b, 50)) for b in per_block])
    # the stage split: each phase's mean ms per call (the blocks' means averaged), share of their sum
    means = {s: statistics.fmean(statistics.fmean(b.phase_ms[s]) for b in prof._trials) for s in STAGES}
    assert [row["stage"] for row in profile["stages"]] == STAGES
    for row in profile["stages"]:
        assert row["ms"] == pytest.approx(means[row["stage"]])
        assert row["share"] == pytest.approx(means[row["stage"]] / sum(means.values()))
    assert profile["stages"][2]["ms"] >= 0.5  # the postprocess sleep


def test_an_infer_loops_summary_has_the_latency_block_of_a_cli_capture(tmp_path, infer_profile):
    _infer_loop(tmp_path / "p")
    mine = yoloprof.load(tmp_path / "p" / "profile.json").summary()
    cli = yoloprof.Profile(infer_profile[0]).summary()
    assert mine["latency"] is not None and set(mine["latency"]) == set(cli["latency"])
    assert [s["stage"] for s in mine["stages"]] == [s["stage"] for s in cli["stages"]] == STAGES
    text, cli_text = _summary_text(mine), _summary_text(cli)
    for marker in ("latency (ms): p50 ", "p90 ", "p99 ", "inference stages"):
        assert marker in cli_text and marker in text
    assert "not recorded" not in text


def test_a_train_loop_has_no_latency_block(tmp_path):
    model = torch.nn.Linear(4, 4)
    with yoloprof.profile(tmp_path / "t", model=model, warmup=1, warmup_max=1, steps=3, trace_steps=1,
                          modules=False) as prof:
        while not prof.done:
            with prof.phase("forward"):
                loss = model(torch.rand(2, 4)).sum()
            loss.backward()
            prof.step()
    profile = json.loads((tmp_path / "t" / "profile.json").read_text())
    assert profile["latency"] is None and profile["stages"] is None and "p50_ms" not in profile["metrics"]


def test_phases_outside_the_pipelines_stages_give_latency_but_no_stage_split(tmp_path):
    """The schema's stages are `yoloprof infer`'s three; a loop's own phase names stay in `phases`."""
    model = torch.nn.Linear(4, 4)
    with yoloprof.profile(tmp_path / "o", model=model, kind="infer", warmup=1, warmup_max=1, steps=4,
                          trace_steps=1, modules=False) as prof:
        while not prof.done:
            with prof.phase("forward"), torch.no_grad():
                model(torch.rand(2, 4))
            with prof.phase("nms"):
                time.sleep(0.0002)
            prof.step()
    profile = json.loads((tmp_path / "o" / "profile.json").read_text())
    jsonschema.validate(profile, SCHEMA)
    assert profile["latency"]["n"] == 4 and profile["stages"] is None
    assert [row["phase"] for row in profile["phases"]][:2] == ["forward", "nms"]
