"""The public API (`import yoloprof`): the same data as the CLI's --json, validated loading,
errors that name the side, a capture from an nn.Module instance, and the sweep functions."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import torch

import yoloprof
from helpers.profiles import cpu_train_profile, gpu_train_profile
from helpers.sweeps import batch_truth, make_sweep
from yoloprof.cli import main


def write(tmp_path: Path, profile: dict, name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(profile), encoding="utf-8")
    return path


def cli_json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_profile_methods_return_what_the_cli_prints(tmp_path, capsys):
    path = write(tmp_path, gpu_train_profile(), "gpu.json")
    p = yoloprof.load(path)
    assert p.kind == "train"
    assert p.summary() == cli_json(capsys, "summary", str(path))
    assert p.phases() == cli_json(capsys, "phases", str(path))
    assert p.kernels(top=3) == cli_json(capsys, "kernels", str(path), "--top", "3")
    assert p.ops() == cli_json(capsys, "ops", str(path))
    assert p.get("step_ms") == pytest.approx(statistics.fmean([100.0, 102.0, 98.0]))  # the builder's trials
    assert p.get("config.batch") == 16


def test_compare_takes_paths_or_profiles_and_names_the_failing_side(tmp_path, capsys):
    before = write(tmp_path, cpu_train_profile(50.0), "a.json")
    after = write(tmp_path, cpu_train_profile(40.0), "b.json")
    result = yoloprof.compare(before, yoloprof.load(after))
    assert result == cli_json(capsys, "compare", str(before), str(after))
    step = next(m for m in result["metrics"] if m["metric"] == "step_ms")
    assert step["change_pct"] == pytest.approx(-20.0)
    with pytest.raises(yoloprof.UsageError, match="^after: no such file"):
        yoloprof.compare(before, tmp_path / "missing.json")
    bad = write(tmp_path, {**cpu_train_profile(), "phases": 5}, "bad.json")
    with pytest.raises(yoloprof.ProfileError, match="^before: .*field 'phases' must be a list"):
        yoloprof.compare(bad, after)


def test_capture_accepts_a_model_instance_and_leaves_it_untouched(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    before = [t.detach().clone() for t in net.parameters()]
    settings = yoloprof.CaptureSettings.for_mode("train", model=net, device="cpu", batch=1, imgsz=32,
                                                 steps=2, warmup=0, workers=0, trace=False)
    p = yoloprof.capture(settings, tmp_path / "out")
    assert isinstance(p, yoloprof.Profile) and (tmp_path / "out" / "profile.json").is_file()
    assert p.data["config"]["model"] == "torch.nn.modules.container.Sequential"
    assert p.get("step_ms") > 0
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # trained a copy
    assert yoloprof.load(tmp_path / "out" / "profile.json").get("step_ms") == p.get("step_ms")


def test_read_results_and_analyze_compute_without_writing(tmp_path):
    sweep = make_sweep(tmp_path, [{"batch": 4}, {"batch": 8}], batch_truth, trials=3)
    rows = yoloprof.read_results(sweep)
    assert len(rows) == 6 and set(rows["status"]) == {"ok"}
    result = yoloprof.analyze(sweep)
    assert not (sweep / "analysis").exists()
    assert set(result.comparisons["metric"]) >= {"step_ms", "img_per_s"}
    with pytest.raises(yoloprof.UsageError):
        yoloprof.read_results(tmp_path / "nope")


def test_dir_lists_the_api():
    assert {"load", "compare", "capture", "CaptureSettings", "read_results", "analyze", "Profile",
            "ProfileError", "__version__"} <= set(dir(yoloprof))
