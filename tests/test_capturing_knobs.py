"""The knobs (docs/knobs.md): agreement figures against hand-worked numbers, the matching on
hand-made boxes, payback on a hand-worked case, and each knob applied to a tiny model in process."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from tests.gpu import requires_cuda
from yoloprof.analysis.knob_effects import apply_knob_effects, outputs_label
from yoloprof.capturing.builtin import knob_apply
from yoloprof.capturing.device.torch_device import resolve_device
from yoloprof.config import knobs
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.errors import NotApplicableError, UsageError
from yoloprof.metrics.agreement import match_count, matched_pct, tensor_diffs
from yoloprof.metrics.payback import payback_calls


def test_tensor_diffs_hand_worked():
    a1, b1 = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.5], [3.0, 4.0]])  # 0.5 abs, 0.5/4 rel
    a2, b2 = np.array([10.0, 0.0]), np.array([8.0, 0.0])  # 2 abs, 2/8 rel: the worst tensor
    assert tensor_diffs([(a1, b1), (a2, b2)]) == (2.0, 0.25)
    assert tensor_diffs([(a1, b1)]) == (0.5, 0.125)
    assert tensor_diffs([(np.zeros(3), np.zeros(3))]) == (0.0, 0.0)
    assert math.isinf(tensor_diffs([(np.ones(3), np.zeros(3))])[1])  # zero reference, output not zero
    with pytest.raises(ValueError, match="shapes differ"):
        tensor_diffs([(np.ones(2), np.ones(3))])


def test_matching_hand_made_boxes():
    ref_boxes, ref_cls = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float), np.array([0, 1])
    # IoU 0.9 with ref 0; same box as ref 1 but another class; IoU 81/119 = 0.68 with ref 0 (taken)
    cand_boxes = np.array([[0, 0, 10, 9], [20, 20, 30, 30], [1, 1, 11, 11]], float)
    cand_cls = np.array([0, 2, 0])
    assert match_count(cand_boxes, cand_cls, ref_boxes, ref_cls) == 1
    pct, why = matched_pct([(cand_boxes, cand_cls, ref_boxes, ref_cls)])
    assert why is None and pct == pytest.approx(100 / 3)  # 1 matched of max(3, 2)
    # one to one: the higher IoU pair wins, the other box is left over
    assert match_count(cand_boxes[[2, 0]], np.array([0, 0]), ref_boxes[:1], ref_cls[:1]) == 1
    # IoU below 0.5: no match (a box shifted by half its width: 50/150 = 0.33)
    assert match_count(np.array([[5, 0, 15, 10]], float), np.array([0]), ref_boxes[:1], ref_cls[:1]) == 0
    empty = (np.zeros((0, 4)), np.zeros(0), np.zeros((0, 4)), np.zeros(0))
    pct, why = matched_pct([empty])
    assert pct is None and "neither" in why


def test_payback_hand_worked():
    # 60 s more setup, 10 ms saved per call: 6000 calls
    assert payback_calls(0.5, 60.5, 30.0, 20.0) == pytest.approx(6000)
    assert payback_calls(0.5, 60.5, 20.0, 30.0) is None  # slower: never pays back
    assert payback_calls(2.0, 1.0, 30.0, 20.0) == 0.0  # cheaper once and faster
    assert payback_calls(None, 1.0, 30.0, 20.0) is None


def test_one_time_samples_hand_worked():
    from yoloprof.capturing.passes.one_time import one_time_samples
    from yoloprof.capturing.passes.timing import TrialResult

    # converted in 1.5 s; first call 50 ms against the steady (median, not mean) 11 ms: 39 ms more
    first = TrialResult(step_ms=[10.0, 18.0, 11.0], first_ms=50.0, setup_s=1.5)  # mean 13
    later = TrialResult(step_ms=[10.0], first_ms=10.0, setup_s=9.0)  # a later trial: not read
    assert one_time_samples([first, later]) == {"first_call_ms": [50.0], "setup_s": [pytest.approx(1.539)]}
    quick = TrialResult(step_ms=[10.0, 12.0, 11.0], first_ms=8.0)  # faster than steady: no excess
    assert one_time_samples([quick]) == {"first_call_ms": [8.0], "setup_s": [0.0]}
    assert one_time_samples([]) == {} and one_time_samples([TrialResult(step_ms=[1.0])]) == {}


def test_outputs_column_and_verdicts():
    assert outputs_label(5e-4) == "same" and outputs_label(3.8e-3) == "differ (max rel 0.0038)"
    assert outputs_label(None) == "" and outputs_label(2e-3, tol=1e-2) == "same"
    cmp = pd.DataFrame({"group_hash": ["b", "b", "c"], "baseline_hash": ["a", "a", "a"],
                        "metric": ["step_ms", "peak_mem_mb", "step_ms"], "verdict_code": ["improved"] * 3,
                        "verdict": ["improved"] * 3, "baseline_value": [30.0, 100.0, 30.0],
                        "value": [20.0, 90.0, 25.0]})
    metrics = pd.DataFrame({"group_hash": ["a", "b", "c", "b", "c"],
                            "metric": ["setup_s", "setup_s", "setup_s", "output_max_rel_diff", "output_max_rel_diff"],
                            "value": [0.5, 60.5, 0.5, 3.8e-3, 1e-6]})
    out = apply_knob_effects(cmp, metrics)
    assert list(out["outputs"]) == ["differ (max rel 0.0038)", "differ (max rel 0.0038)", "same"]
    assert out["payback_calls"].iloc[0] == pytest.approx(6000) and math.isnan(out["payback_calls"].iloc[1])
    assert out["payback_calls"].iloc[2] == 0.0
    assert list(out["verdict"]) == ["faster, outputs differ (max rel 0.0038)",
                                    "better, outputs differ (max rel 0.0038)", "improved"]
    assert list(out["verdict_code"])[:2] == ["improved_outputs_differ"] * 2


def test_knob_table_matches_the_settings():
    from yoloprof.config.capture_settings import FIELDS, default_of

    for knob in knobs.KNOBS:
        spec = FIELDS[knob.name].metadata["spec"]
        assert spec.choices == knob.levels and spec.hashed == "unless_default" and spec.axis is not None
        assert default_of(knob.name, knob.modes[0]) == knob.default
    assert not knobs.needs_output_check({"compile": "none", "precision": "float32"}, "infer")
    assert knobs.needs_output_check({"memory_format": "channels_last", "precision": "float32"}, "infer")
    assert knobs.needs_output_check({"precision": "bfloat16"}, "train")
    assert not knobs.needs_output_check({"runtime": "onnxruntime", "precision": "float32"}, "train")  # infer only


def test_bad_level_is_a_usage_error():
    with pytest.raises(UsageError, match="invalid compile 'fast'; valid: none, default"):
        CaptureSettings.for_mode("infer", compile="fast", device="cpu").validate()


def _settings(mode: str, **kw):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten())
    base = {"steps": 2} if mode == "train" else {"runs": 2}
    return CaptureSettings.for_mode(mode, model=net, device="cpu", batch=2, imgsz=32, warmup=0, workers=0,
                                    trace=False, modules=False, **base, **kw).validate().resolved()


def test_optimizer_impl_rebuilds_the_same_optimizer():
    p = [torch.nn.Parameter(torch.ones(3))]
    sgd = torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    assert knob_apply.rebuild_optimizer(sgd, "default") is sgd
    for impl in ("foreach", "fused"):
        new = knob_apply.rebuild_optimizer(sgd, impl)
        assert type(new) is torch.optim.SGD and new.defaults[impl] is True
        g = new.param_groups[0]
        assert (g["lr"], g["momentum"], g["nesterov"], g["weight_decay"]) == (0.1, 0.9, True, 1e-4)
        assert g["params"][0] is p[0] and g[impl] is True
    with pytest.raises(NotApplicableError, match=r"^--optimizer-impl fused: not applicable: torch.optim.LBFGS"):
        knob_apply.rebuild_optimizer(torch.optim.LBFGS(p), "fused")


def test_train_context_gets_channels_last_and_fused(tmp_path):
    from yoloprof.capturing.builtin.trial_context import build_train_context, prepare_dataset
    from yoloprof.capturing.passes.step_calls import train_step_inputs

    s = _settings("train", memory_format="channels_last", optimizer_impl="fused")
    dataset, _ = prepare_dataset(s)
    ctx = build_train_context(s, resolve_device("cpu"), dataset, amp=False)
    try:
        conv = ctx.model[0] if isinstance(ctx.model, torch.nn.Sequential) else None
        assert conv is not None and conv.weight.is_contiguous(memory_format=torch.channels_last)
        inputs, _ = train_step_inputs(ctx)
        assert inputs.is_contiguous(memory_format=torch.channels_last) and not inputs.is_contiguous()
        assert ctx.optimizer.defaults["fused"] is True
    finally:
        ctx.close()


def test_compile_is_applied_to_the_network(monkeypatch):
    from yoloprof.capturing.builtin.trial_context import build_infer_context, load_infer_sources

    calls = []
    monkeypatch.setattr(knob_apply, "_compile_missing", lambda is_cuda: None)
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kw: calls.append((type(self), kw)))
    s = _settings("infer", compile="max-autotune-no-cudagraphs")
    build_infer_context(s, resolve_device("cpu"), load_infer_sources(s)[0], amp=False)
    assert calls == [(torch.nn.Sequential, {"mode": "max-autotune-no-cudagraphs"})]
    with pytest.raises(NotApplicableError, match=r"^--compile reduce-overhead: not applicable: .*CUDA device"):
        knob_apply.check_compile("reduce-overhead", is_cuda=False)


def test_runtime_wiring_with_a_fake_runtime(monkeypatch):
    """Written against the interface of capturing/runtimes (docs/CONTRACTS.md "Runtimes")."""
    from types import SimpleNamespace

    from yoloprof.capturing import runtimes
    from yoloprof.capturing.builtin.trial_context import build_infer_context, load_infer_sources
    from yoloprof.capturing.passes.step_calls import infer_call, no_phases

    from yoloprof.errors import RuntimeNotApplicable as Refused

    seen = {}

    def load_runtime(level, network, example, device, precision):
        seen.update(level=level, shape=tuple(example.shape), precision=precision)
        if level == "openvino":
            raise Refused("no openvino extra")
        return SimpleNamespace(forward=lambda x: network(x) * 0 + 7, setup_s=1.5, note=None)

    monkeypatch.setattr(runtimes, "load_runtime", load_runtime, raising=False)
    s = _settings("infer", runtime="torchscript")
    ctx = build_infer_context(s, resolve_device("cpu"), load_infer_sources(s)[0], amp=False)
    assert seen == {"level": "torchscript", "shape": (2, 3, 32, 32), "precision": "float32"}
    # setup_s: the wall time of taking the export form and loading (runtimes.family_runtime)
    assert ctx.setup_s > 0 and bool((infer_call(ctx, no_phases()) == 7).all())  # post-process: identity
    with pytest.raises(NotApplicableError, match="^--runtime openvino: not applicable: no openvino extra"):
        build_infer_context(_settings("infer", runtime="openvino"), resolve_device("cpu"),
                            load_infer_sources(s)[0], amp=False)
    with pytest.raises(NotApplicableError, match="^--compile default: not applicable"):
        build_infer_context(_settings("infer", runtime="torchscript", compile="default"), resolve_device("cpu"),
                            load_infer_sources(s)[0], amp=False)


def test_capture_records_one_time_cost_and_outputs(tmp_path):
    """bfloat16 autocast on CPU differs from float32 by more than 1e-3 relative; channels_last
    alone does not; the reference capture records no check and says why."""
    import yoloprof

    p = yoloprof.capture(_settings("infer", precision="bfloat16", memory_format="channels_last"), tmp_path / "a")
    assert p.get("first_call_ms") > 0 and p.get("setup_s") >= 0
    assert p.data["outputs"]["reference"] == "eager, contiguous, float32"
    assert 1e-3 < p.get("output_max_rel_diff") < 0.1 and p.get("output_max_abs_diff") > 0
    assert "detections_matched_pct" not in p.data["metrics"]  # a classifier-like net: no boxes
    ref = yoloprof.capture(_settings("infer", precision="float32"), tmp_path / "b")
    assert ref.data.get("outputs") is None and "output_max_rel_diff" not in ref.data["metrics"]
    from yoloprof.readers._common import na_reason

    assert na_reason(ref.data, "output_max_rel_diff").startswith("not checked")


@requires_cuda
def test_compile_on_cuda_really_compiles(tmp_path):  # pragma: no cover - GPU only
    import yoloprof

    s = CaptureSettings.for_mode("infer", model="yolo", size="n", device="0", batch=1, imgsz=64, runs=5,
                                 warmup=1, trace=False, modules=False, compile="default", precision="float32")
    p = yoloprof.capture(s, tmp_path / "c")
    assert p.get("setup_s") > 0.5 and p.get("first_call_ms") > 10 * p.get("step_ms")
    assert p.get("output_max_rel_diff") < 1e-2


def test_per_module_times_are_skipped_where_modules_do_not_run_one_by_one():
    from yoloprof.capturing.builtin.extra_sections import _modules_apply

    assert _modules_apply(_settings("infer"))
    with pytest.warns(UserWarning, match="per-module times not recorded: --compile fuses"):
        assert not _modules_apply(_settings("infer", compile="default"))
    with pytest.warns(UserWarning, match="--runtime onnxruntime runs the network outside PyTorch"):
        assert not _modules_apply(_settings("infer", runtime="onnxruntime"))


def _side(step_ms: float, jitter: float, setup_s: float, rel: float | None) -> list[dict]:
    from helpers.profiles import _metric, cpu_train_profile

    out = []
    for k in range(3):  # three processes per side: the nested test decides without a noise floor
        p = cpu_train_profile(step_ms + jitter * (k - 1))
        p["metrics"]["step_ms"] = _metric("step_ms", [step_ms + jitter * (k - 1) + d for d in (-0.1, 0.0, 0.1)])
        p["metrics"]["setup_s"] = _metric("setup_s", [setup_s])
        if rel is not None:
            p["metrics"]["output_max_rel_diff"] = _metric("output_max_rel_diff", [rel])
        out.append(p)
    return out


def test_compare_reports_payback_and_never_plainly_improved_when_outputs_differ():
    from yoloprof.readers.compare import compute_compare

    before, after = _side(30.0, 0.2, 0.5, None), _side(20.0, 0.2, 60.5, 3.8e-3)
    result = compute_compare(before, after, metrics=["step_ms"])
    [row] = result["metrics"]
    assert row["verdict_code"] == "improved_outputs_differ"
    assert row["verdict"] == "faster, outputs differ (max rel 0.0038)"
    # 60 s more once; the gap of the means is 10 ms per step: 6000 steps
    assert row["payback_calls"] == pytest.approx(60.0 * 1000 / (row["before"]["value"] - row["after"]["value"]))
    assert row["payback_calls"] == pytest.approx(6000)
    assert result["one_time"]["outputs"][1]["label"] == "differ (max rel 0.0038)"
    same = compute_compare(before, _side(20.0, 0.2, 60.5, 1e-5), metrics=["step_ms"])
    assert same["metrics"][0]["verdict_code"] == "improved" and same["one_time"]["outputs"][1]["label"] == "same"


def test_cli_not_applicable_is_one_line_exit_2(tmp_path, capsys):
    from yoloprof.cli import main

    code = main(["infer", "--device", "cpu", "--imgsz", "64", "--runs", "2", "--warmup", "0", "--no-trace",
                 "--compile", "reduce-overhead", "--project", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == ("yoloprof: error: --compile reduce-overhead: not applicable: this mode "
                                     "captures CUDA graphs and needs a CUDA device")
    assert not (tmp_path / "infer").exists()  # refused before the output folder is made


def test_train_capture_with_foreach_and_channels_last(tmp_path):
    import yoloprof

    p = yoloprof.capture(_settings("train", optimizer_impl="foreach", memory_format="channels_last"), tmp_path / "t")
    assert p.data["config"]["optimizer_impl"] == "foreach" and p.data["config"]["memory_format"] == "channels_last"
    assert p.get("first_call_ms") > 0 and p.get("setup_s") >= 0
    # the same float32 arithmetic in another layout: the loss agrees to float32 rounding
    assert p.get("output_max_rel_diff") < 1e-4


def test_knob_lines_under_the_comparison_table():
    from yoloprof.render.knob_lines import knob_lines

    cmp = pd.DataFrame({"config": ["compile=default", "compile=default", "batch=4"],
                        "metric": ["step_ms", "img_per_s", "step_ms"],
                        "outputs": ["differ (max rel 0.0038)", "differ (max rel 0.0038)", ""],
                        "payback_calls": [6000.0, np.nan, np.nan]})
    assert knob_lines(cmp) == ["compile=default: outputs vs eager float32 differ (max rel 0.0038)",
                               "compile=default / step_ms: its extra one-time setup pays back after 6,000 calls"]
    assert knob_lines(cmp.drop(columns=["outputs", "payback_calls"])) == []


def test_compare_lists_knob_differences_without_flagging():
    from yoloprof.metrics.sides import differences, side_facts

    old = side_facts({}, {"mode": "train", "batch": 2})  # a capture from before the knobs: their defaults
    new = side_facts({}, {"mode": "train", "batch": 2, "compile": "default", "memory_format": "contiguous"})
    rows = differences(old, new)
    assert [(r["field"], r["before"], r["after"], r["big"]) for r in rows] == [("compile", "none", "default", False)]
    assert side_facts({}, {})["compile"] is None  # a raw trace records no knob


@pytest.mark.slow
def test_compile_on_cpu_really_compiles_and_pays_its_first_call(tmp_path):
    """A real torch.compile (inductor, C++ on CPU) of a tiny network: about 8 s of compilation on a
    2-core machine, all in the first call; the outputs agree with eager float32."""
    import yoloprof

    why = knob_apply._compile_missing(False)
    if why:
        pytest.skip(why)
    p = yoloprof.capture(_settings("infer", compile="default"), tmp_path / "c")
    assert p.get("first_call_ms") > 5 * p.get("step_ms") and p.get("setup_s") > 0.05
    assert p.get("output_max_rel_diff") < 1e-4
    assert p.data["outputs"]["reference"] == "eager, contiguous, float32"


def test_training_check_falls_back_to_the_loss_where_the_forward_needs_targets(monkeypatch):
    from yoloprof.capturing.builtin import output_check
    from yoloprof.capturing.builtin.trial_context import prepare_dataset

    s = _settings("train", memory_format="channels_last")
    dataset, _ = prepare_dataset(s)
    seen = []
    loss_outputs = output_check._loss_outputs

    def needs_targets(ctx, settings, inputs, targets):
        raise output_check._NeedsTargets("targets should be passed")

    def loss(ctx, settings, inputs, targets):
        seen.append(settings.memory_format)
        return loss_outputs(ctx, settings, inputs, targets)

    monkeypatch.setattr(output_check, "_forward_outputs", needs_targets)
    monkeypatch.setattr(output_check, "_loss_outputs", loss)
    figures = output_check._train_pair(s, resolve_device("cpu"), False, dataset)
    assert seen == ["channels_last", "contiguous"]  # the configuration, then the eager float32 reference
    assert figures["output_max_abs_diff"][0] < 1e-5  # a loss near 0: the absolute figure is the one to read
