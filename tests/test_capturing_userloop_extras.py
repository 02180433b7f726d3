"""`run` with the extra sections: model facts, per-module times (default on) and --python-hotspots."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema

SCHEMA = json.loads(files("yoloprof.profiles").joinpath("profile.schema.json").read_text())


def test_capture_records_modules_hotspots_and_facts(tiny_run):
    import torch

    from yoloprof.capturing.builtin.trial_context import build_model
    from yoloprof.capturing.device.torch_device import resolve_device

    profile, settings, _ = tiny_run
    jsonschema.validate(profile, SCHEMA)
    model = build_model(settings, resolve_device("cpu"), train=True)
    from yoloprof.workloads.data import build_dataset, make_loader

    # the facts, counted independently here: the same model and the first batch of the same data
    assert profile["model"]["params_total"] == sum(p.numel() for p in model.parameters())
    images, targets = next(iter(make_loader(build_dataset("synthetic", 64, n_images_hint=1, seed=0), 1)))
    assert images.dtype == torch.uint8 and images.shape == (1, 3, 64, 64)
    assert profile["model"]["batch_bytes"] == images.numel() + targets.numel() * targets.element_size()
    names = [n for n, _ in model.named_modules()]
    rows = profile["modules"]["rows"]
    assert [r["module"] for r in rows] == names
    assert rows[0]["forward_ms"] > 0 and rows[0]["backward_ms"] > 0
    assert profile["hotspots"]["functions"] and profile["hotspots"]["steps"] == 3
    from yoloprof.capturing.extras.nvtx import NVTX_CPU_NOTE

    assert NVTX_CPU_NOTE in profile["warnings"]  # --nvtx on a CPU run: one line, no ranges


def test_cli_readers_on_the_capture(tiny_run, capsys):
    from yoloprof.cli import main

    path = str(tiny_run[2] / "profile.json")
    assert main(["modules", path, "--depth", "1", "--sort", "total"]) == 0
    assert "time per module" in capsys.readouterr().out
    assert main(["hotspots", path, "--top", "5"]) == 0
    assert "Python functions" in capsys.readouterr().out
    assert main(["modules", path, "--depth", "-1"]) == 2
    assert "--depth must be >= 0" in capsys.readouterr().err
