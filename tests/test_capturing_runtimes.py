"""Inference runtimes (capturing/runtimes/) against eager PyTorch: for each family (YOLOv8n from
Ultralytics' yaml, torchvision's SSDlite, LibreYOLO9-t, the built-in detector) and each runtime,
the network's outputs equal the eager model's own call within float32 tolerance, and the family's
own post-process makes the same detections from them. Levels that cannot apply are one line."""

from __future__ import annotations

import importlib.util
import io
import sys
from typing import Any

import pytest
import torch
from PIL import Image
from torch.utils import _pytree as pytree

from yoloprof.capturing.runtimes import family_runtime, load_runtime
from yoloprof.capturing.runtimes.extras import EXTRAS
from yoloprof.capturing.runtimes.flat import Flattened
from yoloprof.errors import RuntimeNotApplicable, UsageError, run_guarded
from yoloprof.workloads.family_api import ModelRef

IMGSZ = 64
RTOL = 1e-4  # float32 kernels of another library: relative to the output's largest magnitude
CONF, IOU, MAX_DET = 0.0, 0.5, 10  # every candidate reaches NMS: detections exist whatever the random weights
CPU = torch.device("cpu")
RUNTIMES = ("torchscript", "onnxruntime", "openvino")
PACKAGE = {"onnxruntime": "onnxruntime", "openvino": "openvino"}


def _needs(level: str) -> None:
    package = PACKAGE.get(level)
    if package and importlib.util.find_spec(package) is None:
        pytest.skip(f"runtime {level} needs pip install 'yoloprof[{EXTRAS[package]}]'")


def _image() -> Image.Image:
    gen = torch.Generator().manual_seed(1)
    pixels = torch.randint(0, 256, (48, 80, 3), dtype=torch.uint8, generator=gen)
    return Image.fromarray(pixels.numpy())


def _eager_reference(family: str, model: Any, x: Any) -> list[torch.Tensor]:
    """The eager model's own call, as its library makes it (not the adapter's export form)."""
    with torch.no_grad():
        if family == "ultralytics":
            return [model(x)[0]]  # DetectionModel in eval: (decoded predictions, raw dict)
        if family == "torchvision":  # the adapter's forward is the model's split forward (its own test)
            from yoloprof.workloads.family_torchvision import ADAPTER

            raw = ADAPTER.forward(model, x)
            return [t for t in pytree.tree_leaves({k: v for k, v in raw.items() if k != "image_sizes"})
                    if isinstance(t, torch.Tensor)]
        return [t for t in pytree.tree_leaves(model(x)) if isinstance(t, torch.Tensor)]


FAMILIES = {  # id -> (family, ModelRef)
    "yolov8n": ("ultralytics", ModelRef("ultralytics", "yolov8n.yaml", num_classes=3, imgsz=IMGSZ)),
    "ssdlite": ("torchvision", ModelRef("torchvision", "ssdlite320_mobilenet_v3_large", num_classes=3, imgsz=IMGSZ)),
    "libreyolo9t": ("libreyolo", ModelRef("libreyolo", "yolo9", size="t", num_classes=3)),
    "builtin": ("yolo", ModelRef("yolo", "yolo", size="n", num_classes=3)),
}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request: Any) -> dict[str, Any]:
    name, ref = FAMILIES[request.param]
    if name in ("ultralytics", "libreyolo", "torchvision"):
        pytest.importorskip(name)
    from yoloprof.workloads.families import adapter_of

    adapter = adapter_of(name)
    model = adapter.build(ref).eval()
    x, meta = adapter.preprocess(model, [_image()], IMGSZ, CPU)
    with torch.no_grad():
        raw = adapter.forward(model, x)
        dets = adapter.postprocess(model, raw, meta, CONF, IOU, MAX_DET)
    return {"name": name, "adapter": adapter, "model": model, "x": x, "meta": meta, "dets": dets,
            "reference": _eager_reference(name, model, x)}


def _close(got: Any, want: Any) -> None:
    a = [torch.as_tensor(t).float() for t in pytree.tree_leaves(got)]
    b = [torch.as_tensor(t).float() for t in pytree.tree_leaves(want)]
    assert len(a) == len(b)
    for g, w in zip(a, b):
        assert g.shape == w.shape
        scale = float(w.abs().max()) if w.numel() else 1.0
        assert torch.allclose(g, w, rtol=0, atol=RTOL * max(scale, 1e-6)), float((g - w).abs().max())


@pytest.mark.parametrize("level", RUNTIMES)
def test_runtime_outputs_and_detections_match_eager(family: dict[str, Any], level: str) -> None:
    _needs(level)
    adapter, model, x = family["adapter"], family["model"], family["x"]
    loaded = family_runtime(adapter, model, level, x, CPU, "float32")
    assert loaded.setup_s > 0
    raw = loaded.forward(x)
    tensors = [t for t in pytree.tree_leaves(raw) if isinstance(t, torch.Tensor)]
    assert all(t.device == CPU for t in tensors)
    export = getattr(adapter, "export_network", None)
    if family["name"] == "ultralytics":
        _close(raw, family["reference"][0])  # export mode's one tensor = the eager call's predictions
    else:
        _close([t for t in tensors if t.numel()], [t for t in family["reference"] if t.numel()])
    assert export is not None or family["name"] not in ("ultralytics", "torchvision")
    dets = adapter.postprocess(model, raw, family["meta"], CONF, IOU, MAX_DET)
    for got, want in zip(dets, family["dets"], strict=True):
        _matched(_rows(got), _rows(want))


TOP = 3  # detections per image that must be found on both sides


def _rows(det: Any) -> torch.Tensor:
    """One image's detections as rows (box, score, class): a [K, 6] tensor as it is; a dict's
    boxes, scores and labels/classes side by side (torchvision, LibreYOLO)."""
    if isinstance(det, torch.Tensor):
        return det.float()
    cols = [torch.as_tensor(det[k]).float() for k in ("boxes", "scores", "labels", "classes") if k in det]
    return torch.cat([c.reshape(len(cols[1]), -1) for c in cols], dim=1)


def _matched(got: torch.Tensor, want: torch.Tensor) -> None:
    """The TOP best detections of each side (families return them best first) are among the
    other's, box, score and class within tolerance. Seeded random weights give near-equal scores
    and coinciding boxes, so which of two near-ties NMS keeps may differ by float rounding:
    matching, not row-by-row equality, is what "the same detections" can mean here."""
    assert len(want) and len(got), "no detections to compare"
    atol = 1e-3 * max(float(want.abs().max()), 1.0)
    for a, b in ((got, want), (want, got)):
        for row in a[:TOP]:
            assert bool(((b - row).abs() <= atol).all(dim=1).any()), f"detection {row.tolist()} not found"
