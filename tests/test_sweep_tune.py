"""`yoloprof tune` (docs/tune.md): the knob plan, the rows and their ranking, and whole runs with
the fake capture (the planner's logic does not depend on what a capture measures): a level that
helps is improved and becomes best.yaml, which `yoloprof sweep` applies; a level whose jobs fail
is a "not applicable" row with the job's error; a knob this build lacks is one too; Ctrl-C exits
130 naming `yoloprof tune --resume DIR`, and the resume re-uses the finished sweeps."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest

import yoloprof.capturing.builtin.capture_entry as capture_api
import yoloprof.config.capture_settings as capture_settings
from yoloprof.analysis import tune_rows
from yoloprof.cli import main
from yoloprof.defs import files
from yoloprof.errors import UsageError
from yoloprof.profiles.model import metric
from yoloprof.sweep import tune_knobs

BF16_FACTOR = 0.7  # the fake's bfloat16 step time relative to float32
THREADS2_FACTOR = 0.8  # and with 2 threads relative to 1 (4 threads fail)
FAST = ["--knobs", "precision,threads", "--threads", "1", "--budget", "900",
        "launch.isolation=inprocess", "analysis.html=false", "workers=0", "adaptive.min_trials=2"]


def fake(settings, out_dir, *, progress: bool = False) -> dict:
    """Step time 10 ms x a per-process lognormal level (2%), x BF16_FACTOR under bfloat16, x
    THREADS2_FACTOR with 2 threads; 4 threads fail (as a level that does not build); TUNE_STOP=threads
    in the env: Ctrl-C in the first job with more than one thread."""
    import os

    if settings.threads > 1 and os.environ.get("TUNE_STOP") == "threads":
        raise KeyboardInterrupt
    if settings.threads == 4:
        raise RuntimeError(f"fake: {settings.threads} threads do not build\nsecond line of the traceback")
    rng = random.Random(f"{settings.precision}/{settings.threads}/{settings.trial}")
    level = 10.0 * rng.lognormvariate(0.0, 0.02) * (BF16_FACTOR if settings.precision == "bfloat16" else 1.0)
    level *= THREADS2_FACTOR if settings.threads == 2 else 1.0
    steps = [level] * settings.repeat
    profile = {"schema": "yoloprof.profile/1", "kind": settings.mode, "config": settings.resolved().to_dict(),
               "env": {"device_name": "fake-cpu"},
               "metrics": {"step_ms": metric(steps, "ms", "lower"),
                           "img_per_s": metric([1000.0 / s for s in steps], "img/s", "higher")},
               "verdict": {"bound": "compute", "why": "fake", "evidence": {}}, "warnings": []}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / files.PROFILE).write_text(json.dumps(profile), encoding="utf-8")
    return profile


def _setup(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake)
    monkeypatch.setattr(capture_settings, "usable_cpus", lambda: 4)  # thread levels 1 (baseline), 2, 4
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def _folder(tmp_path: Path) -> Path:
    [folder] = (tmp_path / "runs" / "profile" / files.TUNE_DIR).iterdir()
    return folder


# -- the plan


def test_the_plan_keeps_the_levels_that_apply_and_says_why_of_the_others():
    checks = {("precision", "float16"): lambda device: "float16 autocast: CUDA devices only"}
    plans = tune_knobs.plan_knobs(["compile", "runtime", "precision", "threads"], "train", "cpu", threads=1,
                                  cpus=8, has_setting=lambda n: n != "compile", checks=checks)
    by = {p.name: p for p in plans}
    assert "runtime" not in by  # an inference knob means nothing to a training step
    assert by["compile"].levels == [] and by["compile"].not_applicable == {"": "this yoloprof has no setting compile"}
    assert by["precision"].levels == ["bfloat16"] and by["precision"].baseline == "float32"
    assert by["precision"].not_applicable == {"float16": "float16 autocast: CUDA devices only"}
    assert by["threads"].baseline == "1" and by["threads"].levels == ["4", "8"]
    assert tune_knobs.thread_levels(1, 2) == ["2"] and tune_knobs.thread_levels(1, 1) == []
    assert tune_knobs.advice_first(["memory_format", "precision", "compile"], ["compile", "runtime"]) == [
        "compile", "memory_format", "precision"]
    with pytest.raises(UsageError, match="unknown knob 'speed'"):
        tune_knobs.parse_knobs("precision,speed")


def test_improvements_need_same_outputs_and_the_table_ranks_not_applicable_last():
    rows = [tune_rows.empty_row("knob", "compile", "default", ratio=1.30, verdict_code="improved", outputs="same"),
            tune_rows.empty_row("knob", "runtime", "onnxruntime", ratio=1.50, verdict_code="improved",
                                outputs="differ (max rel 0.02)"),
            tune_rows.empty_row("knob", "precision", "bfloat16", ratio=1.10, verdict_code="improved"),
            tune_rows.empty_row("knob", "precision", "float16", ratio=1.20, verdict_code="improved"),
            tune_rows.not_applicable("knob", "runtime", "openvino", "openvino is not installed"),
            tune_rows.empty_row("knob", "threads", "2", ratio=0.90, verdict_code="regressed")]
    chosen = tune_rows.decided_improvements(rows)
    assert {k: r["level"] for k, r in chosen.items()} == {"compile": "default", "precision": "float16"}
    table = tune_rows.ranked(rows)
    assert table["config"].tolist() == ["runtime=onnxruntime", "compile=default", "precision=float16",
                                        "precision=bfloat16", "threads=2", "runtime=openvino"]
    assert table.iloc[-1]["verdict"] == "not applicable: openvino is not installed"


def test_advice_names_the_knob_that_tests_it():
    from yoloprof.readers.advice import knobs_of, try_line

    assert try_line("launches") == "yoloprof tune --knobs compile,optimizer_impl"
    assert try_line("dataloader") is None
    assert knobs_of([{"rule": "amp"}, {"rule": "launches"}, {"rule": "dataloader"}]) == [
        "precision", "compile", "optimizer_impl"]
    # every knob and level the advice names is one tune tries (readers/ cannot import the table)
    from yoloprof.readers.advice import RULE_KNOBS

    for rule, pairs in RULE_KNOBS.items():
        for knob, level in pairs:
            assert knob in tune_knobs.BY_NAME and (not level or level in tune_knobs.BY_NAME[knob].levels), (rule, knob)


# -- whole runs


def _by_hand(rows: pd.DataFrame, base: dict, cand: dict) -> float:
    """The ratio of geometric means of the process values, baseline over candidate (step_ms: lower
    is better, so > 1 = better), by hand from the rows; sides chosen by their override values."""
    def side(values: dict) -> list[float]:
        keep = [r for r in rows.to_dict("records") if r["status"] == "ok"
                and all(f"{k}={v}" in json.loads(r["overrides"]) for k, v in values.items())]
        return [math.log(r["step_ms"]) for r in keep]
    b, c = side(base), side(cand)
    return math.exp(sum(b) / len(b) - sum(c) / len(c))


def test_a_tune_run_writes_its_table_files_and_a_best_yaml_that_sweep_applies(tmp_path, monkeypatch, capsys):
    """precision=bfloat16 and threads=2 each improve; their combination is confirmed and best;
    threads=4 fails in its jobs, float16 cannot apply on a CPU."""
    _setup(tmp_path, monkeypatch)
    assert main(["tune", *FAST]) == 0
    out = capsys.readouterr().out
    folder = _folder(tmp_path)
    for name in (files.TUNE_MANIFEST, files.TUNE_ROWS, files.TUNE_BEST, files.REPORT_HTML):
        assert (folder / name).is_file(), name
    table = pd.read_parquet(folder / files.TUNE_ROWS)
    assert table["config"].tolist()[:3] == ["precision=bfloat16 threads=2", "precision=bfloat16", "threads=2"]
    combo, bf16, threads = (table.iloc[i] for i in range(3))
    assert combo["stage"] == "confirm" and (combo["verdict_code"], bf16["verdict_code"], threads["verdict_code"]) == (
        "improved", "improved", "improved")
    assert bf16["ci_low"] <= 1 / BF16_FACTOR <= bf16["ci_high"]
    assert combo["ci_low"] <= 1 / (BF16_FACTOR * THREADS2_FACTOR) <= combo["ci_high"]
    sweeps = folder / "sweeps"
    assert bf16["ratio"] == pytest.approx(_by_hand(pd.read_parquet(sweeps / "precision" / files.RESULTS),
                                                   {"precision": "float32"}, {"precision": "bfloat16"}), rel=1e-6)
    assert combo["ratio"] == pytest.approx(_by_hand(pd.read_parquet(sweeps / "confirm" / files.RESULTS),
                                                    {"+tune": "baseline"}, {"+tune": "combo"}), rel=1e-6)
    na = table[table["verdict_code"] == "not applicable"].set_index("config")["reason"].to_dict()
    assert na == {"threads=4": "RuntimeError: fake: 4 threads do not build second line of the traceback",
                  "precision=float16": "float16 autocast: CUDA devices only"}
    assert table["verdict_code"].tolist()[-2:] == ["not applicable"] * 2  # last
    lines = out.splitlines()
    assert [i for i, line in enumerate(lines) if "precision=bfloat16" in line][0] < \
        [i for i, line in enumerate(lines) if "not applicable: RuntimeError: fake" in line][0]
    manifest = json.loads((folder / files.TUNE_MANIFEST).read_text())
    assert manifest["state"] == "finished" and manifest["best"] == {"precision": "bfloat16", "threads": "2"}
    text = (folder / files.TUNE_BEST).read_text()
    assert text.startswith("# @package _global_\n") and "precision: \"bfloat16\"" in text and "threads: 2" in text
    assert "precision=bfloat16" in (folder / files.REPORT_HTML).read_text()
    # best.yaml as a config group file: `yoloprof sweep --config-dir <run>/conf +tune=best`
    assert main(["sweep", "--config-dir", str(folder / "conf"), "+tune=best", "device=cpu", "-m", "batch=1",
                 "hydra.sweep.dir=B", "launch.isolation=inprocess", "analysis.enabled=false", "workers=0"]) == 0
    [row] = pd.read_parquet(tmp_path / "B" / files.RESULTS).to_dict("records")
    assert (row["status"], row["precision"], row["threads"]) == ("ok", "bfloat16", 2)


def test_ctrl_c_exits_130_naming_the_resume_which_reuses_the_finished_sweeps(tmp_path, monkeypatch, capsys):
    _setup(tmp_path, monkeypatch)
    monkeypatch.setenv("TUNE_STOP", "threads")
    assert main(["tune", *FAST[:1], "precision,threads", *FAST[2:]]) == 130
    err = capsys.readouterr().err
    folder = _folder(tmp_path)
    assert f"continue with: yoloprof tune --resume {folder.relative_to(tmp_path)}\n" in err
    assert err.count("continue with") == 1
    assert json.loads((folder / files.TUNE_MANIFEST).read_text())["state"] == "interrupted"
    assert not (folder / files.TUNE_ROWS).exists()
    monkeypatch.delenv("TUNE_STOP")
    assert main(["tune", f"resume={folder}"]) == 0  # as a sweep's resume; --resume DIR alike
    err = capsys.readouterr().err
    assert "precision: re-using the finished sweep" in err and "threads: re-using" not in err
    table = pd.read_parquet(folder / files.TUNE_ROWS).set_index("config")
    assert table.loc["precision=bfloat16", "verdict_code"] == "improved"
    assert table.loc["threads=4", "reason"].startswith("RuntimeError: fake")
    assert table.loc["precision=bfloat16 threads=2", "stage"] == "confirm"
    assert main(["tune", "--resume", str(tmp_path)]) == 2  # not a tune folder: one line, usage
    assert "not a tune folder" in capsys.readouterr().err


def test_a_workload_the_sweep_would_refuse_is_a_usage_error_before_any_folder(tmp_path, monkeypatch, capsys):
    _setup(tmp_path, monkeypatch)
    assert main(["tune", "imgsz=65"]) == 2
    assert "imgsz must be a multiple of 32" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_the_device_checks_read_what_torch_says():
    import importlib.util

    import torch
    from torch.optim import optimizer

    checks = tune_knobs.LEVEL_CHECKS
    assert checks[("compile", "reduce-overhead")]("cpu") == "compile=reduce-overhead uses CUDA graphs: CUDA devices only"
    assert ("compile", "max-autotune") not in checks  # runs on a CPU too, as a capture allows it
    assert checks[("compile", "reduce-overhead")]("cuda:0") is None
    assert checks[("precision", "float16")]("cpu") is not None
    fused_cpu = "cpu" in getattr(optimizer, "_get_fused_kernels_supported_devices", lambda: ["cuda"])()
    assert (checks[("optimizer_impl", "fused")]("cpu") is None) == fused_cpu
    bf16_cpu = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert (checks[("precision", "bfloat16")]("cpu") is None) == bool(bf16_cpu)
    assert (checks[("runtime", "openvino")]("cpu") is None) == (importlib.util.find_spec("openvino") is not None)


@pytest.mark.slow
def test_a_real_tune_of_the_tiny_builtin_detector(tmp_path, monkeypatch, capsys):
    """The built-in yolo (size n, 32 px, inference) with real captures: the planner, the sweep and
    its analysis end to end (about 8 s of CPU)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_settings, "usable_cpus", lambda: 2)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    tiny = ["size=n", "launch.isolation=inprocess", "capture.warmup=1", "capture.runs=2", "repeat=1",
            "capture.trace=false", "capture.modules=false", "capture.warmup_max=1", "adaptive.min_trials=2",
            "adaptive.max_trials=2", "analysis.html=false"]
    assert main(["tune", "--mode", "infer", "--imgsz", "32", "--knobs", "threads", "--threads", "1",
                 "--budget", "5", *tiny]) == 0
    folder = _folder(tmp_path)
    [row] = pd.read_parquet(folder / files.TUNE_ROWS).to_dict("records")
    assert row["config"] == "threads=2" and row["n"] == row["n_baseline"] == 2
    assert row["ci_low"] <= row["ratio"] <= row["ci_high"] and row["verdict_code"] != "not applicable"
    best = json.loads((folder / files.TUNE_MANIFEST).read_text())["best"]
    assert best["threads"] in ("1", "2") and "threads=2" in capsys.readouterr().out


@pytest.mark.parametrize("override, words", [("trial=3", "trial is set by yoloprof tune"),
                                             ("precision=bfloat16", "precision is set by yoloprof tune"),
                                             ("adaptive.budget_s=9", "use --budget"),
                                             ("batch=1,4", "one value per key"), ("size", "KEY=VALUE")])
def test_overrides_that_would_change_what_tune_measures_are_refused(tmp_path, monkeypatch, capsys, override, words):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "--knobs", "precision,threads", override]) == 2
    assert words in capsys.readouterr().err and not (tmp_path / "runs").exists()


def test_model_is_spelled_as_run_and_infer_spell_it():
    """`--model ultralytics:yolov8n.yaml` (run/infer's spelling) becomes the sweep's
    `model=ultralytics model.cfg=yolov8n.yaml`; a config name stays one; a misspelt family is one
    line with a hint (exit 2)."""
    from yoloprof.errors import UsageError
    from yoloprof.sweep.tune import model_overrides

    assert model_overrides("ultralytics:yolov8n.yaml") == ["model=ultralytics", "model.cfg=yolov8n.yaml"]
    assert model_overrides("libreyolo:yolo9") == ["model=libreyolo", "model.family=yolo9"]
    assert model_overrides("torchvision:resnet18") == ["model=torchvision", "model.name=resnet18"]
    assert model_overrides("yolo") == ["model=yolo"]
    with pytest.raises(UsageError, match="did you mean ultralytics:yolov8n.yaml"):
        model_overrides("ultralitics:yolov8n.yaml")
