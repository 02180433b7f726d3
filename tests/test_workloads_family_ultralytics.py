"""The Ultralytics adapter against Ultralytics' own calls made by hand: the loss its trainer
computes on its batch dict, its LetterBox + predictor steps, its NMS + scale_boxes; no download."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import ModelRef

pytest.importorskip("ultralytics")
from ultralytics.cfg import get_cfg  # noqa: E402
from ultralytics.data.augment import LetterBox  # noqa: E402
from ultralytics.nn.tasks import DetectionModel  # noqa: E402
from ultralytics.utils import DEFAULT_CFG, nms, ops  # noqa: E402

from yoloprof.workloads.family_ultralytics import ADAPTER  # noqa: E402


def _ref(name="yolov8n.yaml", **kw):
    return ModelRef(family="ultralytics", name=name, num_classes=3, seed=1, **kw)


def _loader_batch():
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8, generator=gen)
    targets = torch.tensor([[0, 1, 0.5, 0.5, 0.3, 0.4], [1, 0, 0.3, 0.6, 0.2, 0.2], [1, 2, 0.7, 0.2, 0.1, 0.3]])
    return images, targets


@pytest.mark.parametrize("name", ["yolov8n.yaml", "yolo11n.yaml"])
def test_the_training_step_is_ultralytics_own_loss_on_its_batch_dict(name, monkeypatch, tmp_path):
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    model = ADAPTER.build(_ref(name))
    images, targets = _loader_batch()
    inputs, batch = ADAPTER.to_device(model, images, targets, torch.device("cpu"))
    loss, parts = ADAPTER.make_loss(model, None)(model, inputs, batch)
    # the reference: a fresh model of the same seed, the batch dict written by hand as the trainer's
    # preprocess_batch leaves it, model.args the trainer's defaults, `loss.sum()` as BaseTrainer does
    torch.manual_seed(1)
    ref = DetectionModel(name, nc=3, verbose=False).float().train()
    ref.args = get_cfg(DEFAULT_CFG)
    hand = {"img": images.float() / 255, "batch_idx": torch.tensor([0.0, 1, 1]),
            "cls": torch.tensor([[1.0], [0], [2]]),
            "bboxes": torch.tensor([[0.5, 0.5, 0.3, 0.4], [0.3, 0.6, 0.2, 0.2], [0.7, 0.2, 0.1, 0.3]])}
    expected, _ = ref.loss(hand, ref(hand["img"]))
    assert loss.item() == pytest.approx(expected.sum().item(), rel=1e-5)
    assert len(parts) == 3
    loss.backward()
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert all(model.get_parameter(n).grad is not None for n in trainable)
    assert {n for n, _ in model.named_parameters()} - trainable == {n for n, _ in model.named_parameters() if ".dfl" in n}


def test_inference_is_the_predictors_letterbox_and_nms(monkeypatch, tmp_path):
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    model = ADAPTER.build(_ref()).eval()
    wide = Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 90, 3), dtype=np.uint8))
    buf = io.BytesIO()
    wide.save(buf, format="PNG")
    x, meta = ADAPTER.preprocess(model, [wide, buf.getvalue()], 96, torch.device("cpu"))
    boxed = LetterBox((96, 96), auto=False, stride=32)(image=np.asarray(wide))
    expected = torch.from_numpy(boxed).permute(2, 0, 1).float() / 255
    assert x.shape == (2, 3, 96, 96) and torch.equal(x[0], expected) and torch.equal(x[1], expected)
    with torch.inference_mode():
        raw = ADAPTER.forward(model, x)
        dets = ADAPTER.postprocess(model, raw, meta, 0.001, 0.5, 20)
        hand = nms.non_max_suppression(model(x), 0.001, 0.5, max_det=20)
        for h in hand:
            h[:, :4] = ops.scale_boxes((96, 96), h[:, :4], (40, 90))
    for d, h in zip(dets, hand):
        assert torch.allclose(d, h)
        assert d.shape[1] == 6 and (d[:, 2] <= 90).all() and (d[:, 3] <= 40).all()


def test_imgsz_is_rounded_to_the_stride_with_a_note():
    assert ADAPTER.input_size(_ref(), 100).imgsz == 128 and "runs yolov8n.yaml at 128" in ADAPTER.input_size(_ref(), 100).note
    assert ADAPTER.input_size(_ref(), 96).note is None


def test_bad_names_and_weights_are_one_line_and_never_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    import ultralytics.utils.downloads as downloads

    monkeypatch.setattr(downloads, "safe_download", lambda *a, **k: pytest.fail("download attempted"))
    monkeypatch.setattr(downloads, "attempt_download_asset", lambda *a, **k: pytest.fail("download attempted"))
    with pytest.raises(UsageError, match="no such model yaml"):
        ADAPTER.build(_ref("yolov99n.yaml"))
    with pytest.raises(UsageError, match="no such file"):
        ADAPTER.build(_ref("yolov8n.pt"))
    with pytest.raises(UsageError, match="never downloads"):
        ADAPTER.build(_ref("https://example.com/m.yaml"))
    with pytest.raises(UsageError, match="--weights .*no such file"):
        ADAPTER.build(_ref(weights=str(tmp_path / "missing.pt")))


def test_a_checkpoint_file_loads_as_ultralytics_saves_it(monkeypatch, tmp_path):
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    model = ADAPTER.build(_ref())
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
    path = tmp_path / "mine.pt"
    torch.save({"model": model, "train_args": {}}, path)
    fresh = ADAPTER.build(_ref(weights=str(path)))
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), model.state_dict().values()))
    loaded = ADAPTER.build(_ref(str(path)))
    assert type(loaded) is DetectionModel and loaded.training
