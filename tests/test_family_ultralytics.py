"""The Ultralytics adapter against Ultralytics' own pieces called by hand (independent references):
the loss of `model.loss(batch)` on a hand-built batch dict, LetterBox + the predictor's channel order,
`non_max_suppression` + `scale_boxes`."""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np
import pytest
import torch
from PIL import Image

os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="yoloprof-ul-"))  # settings file on import
os.environ.setdefault("YOLO_OFFLINE", "1")
pytest.importorskip("ultralytics")

from ultralytics.data.augment import LetterBox  # noqa: E402
from ultralytics.utils import nms, ops  # noqa: E402

from yoloprof.errors import UsageError  # noqa: E402
from yoloprof.workloads.family_api import ModelRef  # noqa: E402
from yoloprof.workloads.family_ultralytics import ADAPTER  # noqa: E402

TARGETS = torch.tensor([[0, 1, 0.5, 0.5, 0.3, 0.3], [1, 2, 0.4, 0.4, 0.2, 0.5], [1, 0, 0.7, 0.6, 0.2, 0.2]])


@pytest.mark.parametrize("name", ["yolov8n.yaml", "yolo11n.yaml"])
def test_training_step_loss_is_ultralytics_model_loss(name):
    ref = ModelRef("ultralytics", name, num_classes=3, seed=1)
    model = ADAPTER.build(ref)
    assert model.training and model.model[-1].nc == 3
    reference = ADAPTER.build(ref)  # same seed -> same weights
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values()))
    images = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    inputs, targets = ADAPTER.to_device(model, images, TARGETS, "cpu")
    loss, parts = ADAPTER.make_loss(model, None)(model, inputs, targets)
    loss.backward()
    assert loss.dim() == 0 and set(parts) == {"box", "cls", "dfl"}
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    # by hand: the batch dict Ultralytics' trainer builds, and its model.loss summed as it does
    batch = {"img": images.float() / 255, "batch_idx": TARGETS[:, 0], "cls": TARGETS[:, 1:2],
             "bboxes": TARGETS[:, 2:]}
    ref_loss, ref_items = reference.loss(batch)
    torch.testing.assert_close(loss.detach(), ref_loss.sum().detach())
    torch.testing.assert_close(torch.stack(list(parts.values())), torch.stack(list(ref_items.values())))
    # v8DetectionLoss: sum of the gain-weighted parts times the batch size
    torch.testing.assert_close(loss.detach(), 2 * sum(parts.values()))


def test_loss_gains_are_ultralytics_defaults():
    from ultralytics.cfg import DEFAULT_CFG

    model = ADAPTER.build(ModelRef("ultralytics", "yolov8n.yaml", num_classes=2))
    assert (model.args.box, model.args.cls, model.args.dfl) == (DEFAULT_CFG.box, DEFAULT_CFG.cls, DEFAULT_CFG.dfl)


def test_input_size_rounds_up_to_max_stride():
    ref = ModelRef("ultralytics", "yolov8n.yaml")
    assert ADAPTER.input_size(ref, 64).imgsz == 64 and ADAPTER.input_size(ref, 64).note is None
    rounded = ADAPTER.input_size(ref, 70)
    assert rounded.imgsz == 96 and "96" in (rounded.note or "")


def _png(w: int, h: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def test_preprocess_and_postprocess_match_ultralytics_by_hand():
    model = ADAPTER.build(ModelRef("ultralytics", "yolov8n.yaml", num_classes=3))
    sources = [_png(50, 80, 0), _png(90, 40, 1)]
    x, meta = ADAPTER.preprocess(model, sources, 64, "cpu")
    # by hand: cv2 order (BGR), LetterBox to 64x64, BCHW, BGR -> RGB, /255
    bgr = [np.asarray(Image.open(io.BytesIO(s)).convert("RGB"))[:, :, ::-1].copy() for s in sources]
    boxed = np.stack([LetterBox((64, 64), auto=False)(image=im) for im in bgr])
    expected = torch.from_numpy(boxed).permute(0, 3, 1, 2).flip(1).float() / 255
    assert x.shape == (2, 3, 64, 64)
    torch.testing.assert_close(x, expected)
    with torch.inference_mode():
        raw = ADAPTER.forward(model, x)
        dets = ADAPTER.postprocess(model, raw, meta, 0.001, 0.7, 50)
        by_hand = nms.non_max_suppression(raw, 0.001, 0.7, max_det=50)
        for ref, im in zip(by_hand, bgr):
            ref[:, :4] = ops.scale_boxes((64, 64), ref[:, :4], im.shape[:2])
    assert not model.training and len(dets) == 2
    for det, ref, im in zip(dets, by_hand, bgr):
        assert det.shape[1] == 6 and det.shape[0] <= 50
        torch.testing.assert_close(det, ref)
        if len(det):
            assert float(det[:, [0, 2]].max()) <= im.shape[1] and float(det[:, [1, 3]].max()) <= im.shape[0]


def test_checkpoint_weights_load_over_the_model(tmp_path):
    source = ADAPTER.build(ModelRef("ultralytics", "yolov8n.yaml", num_classes=3, seed=5))
    path = tmp_path / "w.pt"
    torch.save({"model": source}, path)  # the checkpoint layout Ultralytics writes (a pickled model)
    for ref in (ModelRef("ultralytics", "yolov8n.yaml", num_classes=3, seed=0, weights=str(path)),
                ModelRef("ultralytics", str(path), num_classes=3, seed=0)):
        loaded = ADAPTER.build(ref)
        for a, b in zip(loaded.state_dict().values(), source.state_dict().values()):
            torch.testing.assert_close(a, b)
    assert ADAPTER.input_size(ModelRef("ultralytics", str(path)), 65).imgsz == 96


BAD_REFS = [
    ModelRef("ultralytics", "yolov99z.yaml"),
    ModelRef("ultralytics", "missing/model.yaml"),
    ModelRef("ultralytics", "nothere.pt"),
    ModelRef("ultralytics", "https://example.com/yolov8n.pt"),
    ModelRef("ultralytics", "yolov8n.yaml", weights="no_such_weights.pt"),
]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_bad_names_are_usage_errors(ref):
    with pytest.raises(UsageError) as err:
        ADAPTER.build(ref)
    message = str(err.value)
    assert "\n" not in message and (ref.weights if ref.weights != "none" else ref.name) in message


@pytest.mark.parametrize("ref", [r for r in BAD_REFS if r.weights == "none"])
def test_bad_names_are_usage_errors_in_input_size_too(ref):
    with pytest.raises(UsageError, match=ref.name.replace(".", r"\.")):
        ADAPTER.input_size(ref, 64)


def test_bad_model_argument_is_a_usage_error():
    with pytest.raises(UsageError, match="bogus"):
        ADAPTER.build(ModelRef("ultralytics", "yolov8n.yaml", kwargs={"bogus": 1}))
