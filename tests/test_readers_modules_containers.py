"""`modules` on containers that their parent iterates and never calls (issue 36 item 5c).

A `ModuleList` (or Ultralytics' `DetectionModel.model`, an `nn.Sequential` that `_predict_once`
walks child by child) gets no forward call of its own; the recorder's backward of a row sums its
descendants' nodes, which made such a container read 0% forward and 100% backward. The models
here are written so that the container is never called: the reference is the model's own code.
"""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.extras.module_recorder import ModuleRecorder
from yoloprof.profiles.model import empty_profile
from yoloprof.readers.modules import compute_modules
from yoloprof.render._out import Out
from yoloprof.render.userloop import render_modules


class Iterating(nn.Module):
    """Its forward walks `blocks` itself: `blocks` is never called."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


def _tensors(obj) -> list[torch.Tensor]:
    """Every tensor in a model's output (a tensor, or lists/tuples/dicts of them)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else []
    return [t for item in items for t in _tensors(item)]


def _modules(model: nn.Module, x: torch.Tensor, loss) -> dict:
    rec = ModuleRecorder(model, DeviceInfo(torch.device("cpu"), "cpu")).attach()
    for _ in range(2):
        rec.begin_step()
        loss(model(x)).backward()
        rec.end_step()
    rec.detach()
    profile = empty_profile("train")
    profile["modules"] = rec.section()
    return compute_modules(profile)


def test_an_iterated_container_reads_not_called_and_its_children_keep_their_time():
    torch.manual_seed(0)
    result = _modules(Iterating(), torch.randn(4, 8, requires_grad=True), lambda y: y.sum())
    rows = {r["module"]: r for r in result["modules"]}
    blocks = rows["blocks"]
    assert blocks["calls_per_step"] == 0 and blocks["called"] is False and blocks["not_called"]
    assert blocks["forward_pct"] is None and blocks["backward_pct"] is None and blocks["backward_ms"] is None
    for name in ("blocks.0", "blocks.1", "blocks.2", "head", ""):
        assert rows[name]["called"] is True and rows[name]["calls_per_step"] == 1
        assert rows[name]["backward_ms"] > 0 and rows[name]["forward_pct"] is not None
    # every called module's share is of the root's own time: the children add up to at most 100%
    children = ("blocks.0", "blocks.1", "blocks.2", "head")
    assert sum(rows[n]["backward_pct"] for n in children) <= 100.0 + 1e-6
    buf = io.StringIO()
    render_modules(result, out=Out(buf, rich=False))
    line = next(ln for ln in buf.getvalue().splitlines() if ln.strip().startswith("blocks ") or
                ln.strip().split()[:1] == ["blocks"])
    assert "not called" in line and "100" not in line


def test_ultralytics_detection_model_sequential_is_not_called(tmp_path, monkeypatch):
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("YOLO_OFFLINE", "1")
    tasks = pytest.importorskip("ultralytics.nn.tasks")
    torch.manual_seed(0)
    model = tasks.DetectionModel("yolov8n.yaml", verbose=False).train()
    out = _modules(model, torch.randn(2, 3, 64, 64), lambda y: sum(t.sum() for t in _tensors(y)))
    rows = {r["module"]: r for r in out["modules"]}
    assert rows["model"]["type"] == "Sequential" and rows["model"]["called"] is False
    assert rows["model"]["backward_pct"] is None
    assert rows["model.0"]["called"] is True and rows["model.0"]["backward_pct"] is not None
