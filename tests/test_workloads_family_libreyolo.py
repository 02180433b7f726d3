"""The LibreYOLO adapter against LibreYOLO's own calls made by hand: its trainer's forward with
targets in its transform's format (hand-worked padding), its per-image pre- and post-process, its
sizes and rounding, its checkpoints; no download."""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import ModelRef

pytest.importorskip("libreyolo")
from libreyolo.models.yolo9.model import LibreYOLO9  # noqa: E402

from yoloprof.workloads.family_libreyolo import ADAPTER, wrapper_of  # noqa: E402


def _ref(size="t", **kw):
    return ModelRef(family="libreyolo", name=kw.pop("name", "yolo9"), size=size, num_classes=3, seed=2, **kw)


def test_targets_are_the_trainers_padded_normalised_xyxy():
    model = ADAPTER.build(_ref())
    images = torch.zeros(3, 3, 64, 64, dtype=torch.uint8)
    rows = torch.tensor([[0, 1, 0.5, 0.5, 0.2, 0.4], [2, 0, 0.25, 0.75, 0.5, 0.5], [0, 2, 0.9, 0.1, 0.4, 0.4]])
    imgs, padded = ADAPTER.to_device(model, images, rows, torch.device("cpu"))
    expected = torch.tensor([
        [[1, 0.4, 0.3, 0.6, 0.7], [2, 0.7, 0.0, 1.0, 0.3]],   # image 0: two boxes, the second clipped
        [[-1, 0, 0, 0, 0], [-1, 0, 0, 0, 0]],                  # image 1: none (padding: class -1)
        [[0, 0.0, 0.5, 0.5, 1.0], [-1, 0, 0, 0, 0]],           # image 2: one
    ])
    assert torch.allclose(padded, expected) and imgs.dtype == torch.float32


def test_the_training_step_is_the_yolo9_trainers_forward_with_targets():
    model = ADAPTER.build(_ref())
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8, generator=gen)
    rows = torch.tensor([[0, 1, 0.5, 0.5, 0.2, 0.4], [1, 2, 0.3, 0.6, 0.2, 0.2]])
    inputs, targets = ADAPTER.to_device(model, images, rows, torch.device("cpu"))
    loss, parts = ADAPTER.make_loss(model, None)(model, inputs, targets)
    # the reference: LibreYOLO's own scratch build of the same seed, fed as YOLO9Trainer.on_forward
    ref = LibreYOLO9._from_scratch(size="t", nb_classes=3, device="cpu", seed=2).model.train()
    hand = torch.tensor([[[1, 0.4, 0.3, 0.6, 0.7]], [[2, 0.2, 0.5, 0.4, 0.7]]])
    expected = ref(images.float() / 255, targets=hand)["total_loss"]
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    assert sum(p.grad is not None for p in model.parameters()) > 0


def test_inference_is_libreyolos_own_pre_and_post_process():
    model = ADAPTER.build(_ref()).eval()
    wrapper = wrapper_of(model)
    image = Image.new("RGB", (90, 40), (200, 30, 60))
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    x, meta = ADAPTER.preprocess(model, [image, buf.getvalue()], 64, torch.device("cpu"))
    t, _, size, ratio = wrapper._preprocess(image, color_format="rgb", input_size=64)
    assert x.shape == (2, 3, 64, 64) and torch.equal(x[0:1], t) and torch.equal(x[1:2], t)
    with torch.inference_mode():
        raw = ADAPTER.forward(model, x)
        dets = ADAPTER.postprocess(model, raw, meta, 0.001, 0.45, 10)
        one = wrapper._postprocess(wrapper._forward(t), 0.001, 0.45, size, max_det=10, ratio=ratio, input_size=64)
    assert len(dets) == 2 and dets[0]["num_detections"] == one["num_detections"]
    assert dets[0]["boxes"] == pytest.approx(one["boxes"]) if one["num_detections"] else True


def test_sizes_families_and_rounding_are_libreyolos():
    assert {"t", "s", "m", "c"} <= set(ADAPTER.sizes)
    with pytest.raises(UsageError, match=r"--size n: LibreYOLO yolo9 has sizes t, s, m, c"):
        ADAPTER.build(_ref("n"))
    with pytest.raises(UsageError, match=r"no such family \(did you mean yolo9"):
        ADAPTER.build(_ref(name="yolo99"))
    size = ADAPTER.input_size(_ref(), 100)
    assert size.imgsz == 128 and "rounded up to a multiple of 32" in size.note


def test_a_libreyolo_checkpoint_loads_as_libreyolo_loads_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wrapper = LibreYOLO9._from_scratch(size="t", nb_classes=3, device="cpu", seed=5)
    path = wrapper.save(str(tmp_path / "mine.pt"))
    model = ADAPTER.build(_ref(weights=str(path)))
    for a, b in zip(model.state_dict().values(), wrapper.model.state_dict().values()):
        assert torch.equal(a, b)
    with pytest.raises(UsageError, match="no such file"):
        ADAPTER.build(_ref(weights=str(tmp_path / "missing.pt")))
