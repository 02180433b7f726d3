"""Fixtures of tests/test_capturing_runtimes.py: each family's model built once, with its
pre-processed input, its eager outputs and detections (registered by tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from PIL import Image
from torch.utils import _pytree as pytree

from yoloprof.capturing.builtin.capture_entry import intra_op_threads
from yoloprof.workloads.family_api import ModelRef

IMGSZ = 64
CONF, IOU, MAX_DET = 0.0, 0.5, 10  # every candidate reaches NMS: detections exist whatever the random weights
CPU = torch.device("cpu")


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


@pytest.fixture
def torch_one_thread() -> Any:
    """One intra-op thread (the runtimes take torch's): on a shared 2-core machine a second
    thread's spin-waits cost more CPU than the work (the libreyolo runtimes: 27 CPU-s with 2)."""
    with intra_op_threads(1):
        yield


FAMILIES = {  # id -> (family, ModelRef)
    "yolov8n": ("ultralytics", ModelRef("ultralytics", "yolov8n.yaml", num_classes=3, imgsz=IMGSZ)),
    "ssdlite": ("torchvision", ModelRef("torchvision", "ssdlite320_mobilenet_v3_large", num_classes=3, imgsz=IMGSZ)),
    "libreyolo9t": ("libreyolo", ModelRef("libreyolo", "yolo9", size="t", num_classes=3)),
    "builtin": ("yolo", ModelRef("yolo", "yolo", size="n", num_classes=3)),
}


@pytest.fixture(scope="session", params=list(FAMILIES))
def runtime_family(request: Any) -> dict[str, Any]:
    name, ref = FAMILIES[request.param]
    if name in ("ultralytics", "libreyolo", "torchvision"):
        pytest.importorskip(name)
    from yoloprof.workloads.families import adapter_of

    adapter = adapter_of(name)
    with intra_op_threads(1):
        model = adapter.build(ref).eval()
        x, meta = adapter.preprocess(model, [_image()], IMGSZ, CPU)
        with torch.no_grad():
            raw = adapter.forward(model, x)
            dets = adapter.postprocess(model, raw, meta, CONF, IOU, MAX_DET)
        reference = _eager_reference(name, model, x)
    return {"name": name, "adapter": adapter, "model": model, "x": x, "meta": meta, "dets": dets,
            "reference": reference}
