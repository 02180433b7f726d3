"""Inference pipeline: sources, preprocess/letterbox, postprocess on crafted and real outputs."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from PIL import Image

from yoloprof.errors import UsageError
from yoloprof.workloads.images import PAD_VALUE
from yoloprof.workloads.models import build_model
from yoloprof.workloads.family_builtin import FACTORY
from yoloprof.workloads.pipeline import batch_sources, load_sources, postprocess, preprocess
from yoloprof.workloads.sample import SAMPLE_SIZE, sample_image_path
from yoloprof.workloads.yolo import STRIDES


def test_bundled_sample_is_a_small_jpeg():
    path = sample_image_path()
    assert path.is_file() and path.stat().st_size < 100_000
    with Image.open(path) as im:
        assert im.format == "JPEG" and im.size == SAMPLE_SIZE


def test_load_sources_variants(tmp_path):
    assert load_sources(None) == [sample_image_path()]
    Image.new("RGB", (20, 10)).save(tmp_path / "b.png")
    Image.new("L", (10, 20)).save(tmp_path / "a.jpg")
    (tmp_path / "readme.txt").write_text("not an image")
    assert [p.name for p in load_sources(str(tmp_path))] == ["a.jpg", "b.png"]
    assert load_sources(str(tmp_path / "b.png")) == [tmp_path / "b.png"]


def test_load_sources_errors(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_sources(str(tmp_path / "nope.jpg"))
    with pytest.raises(UsageError, match="no images found"):
        load_sources(str(tmp_path))
    (tmp_path / "x.jpg").write_bytes(b"broken")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UsageError, match="corrupt"):
            load_sources(str(tmp_path))


def test_batch_sources_cycles():
    assert batch_sources(["a", "b"], 5) == ["a", "b", "a", "b", "a"]
    with pytest.raises(UsageError):
        batch_sources([], 2)


def test_preprocess_letterboxes_and_normalises():
    wide = Image.new("RGB", (100, 50), (255, 0, 0))
    tall = Image.new("RGBA", (20, 80), (0, 0, 255, 255))
    x, meta = preprocess([wide, tall], 64, dtype=torch.float32)
    assert x.shape == (2, 3, 64, 64) and x.dtype == torch.float32
    assert x[0, :, 32, 32].tolist() == [1.0, 0.0, 0.0]
    assert x[0, :, 2, 32].tolist() == pytest.approx([PAD_VALUE / 255] * 3)  # padded band on top
    assert meta[0].ratio == pytest.approx(0.64) and meta[0].pad_y == 16 and meta[0].pad_x == 0
    assert meta[1].pad_x == 24 and meta[1].pad_y == 0 and (meta[1].orig_w, meta[1].orig_h) == (20, 80)
    from_bytes, _ = preprocess([sample_image_path().read_bytes()], 64)
    from_path, _ = preprocess([sample_image_path()], 64)
    assert torch.equal(from_bytes, from_path)
    with pytest.raises(UsageError, match="cannot decode image from memory"):
        preprocess([b"not an image"], 64)
    half, _ = preprocess([sample_image_path()], 64, dtype=torch.float16)
    assert half.dtype == torch.float16 and 0 <= half.min() and half.max() <= 1


def inverse_softplus(y: float) -> float:
    return math.log(math.expm1(y))


def crafted_outputs(imgsz: int, nc: int, cells: list[tuple[int, int, int, list[float], float, int]]) -> list[torch.Tensor]:
    """Raw outputs with everything at very low confidence except the given cells, which get
    (level, y, x, ltrb distances in strides, score, class) with objectness 1."""
    outs = [torch.full((1, 5 + nc, imgsz // s, imgsz // s), -20.0) for s in STRIDES]
    for level, y, x, ltrb, score, cls in cells:
        outs[level][0, :4, y, x] = torch.tensor([inverse_softplus(v) for v in ltrb])
        outs[level][0, 4, y, x] = 20.0
        outs[level][0, 5 + cls, y, x] = math.log(score / (1 - score))
    return outs


def test_postprocess_decodes_filters_suppresses_and_maps_back():
    imgsz, nc = 64, 3
    cells = [
        (0, 2, 2, [1.0, 1.0, 1.0, 1.0], 0.9, 1),  # centre (20, 20), box 12..28
        (0, 2, 3, [2.0, 1.0, 0.0 + 0.5, 1.0], 0.8, 1),  # centre (28, 20): 12..32 x 12..28, overlaps the first
        (0, 2, 3, [1.0, 1.0, 1.0, 1.0], 0.0, 2),  # placeholder overwritten below: same cell, so skip
        (1, 2, 2, [0.5, 0.5, 0.5, 0.5], 0.7, 0),  # centre (40, 40), 32..48
        (2, 1, 0, [0.25, 0.25, 0.25, 0.25], 0.1, 2),  # below conf
    ]
    outs = crafted_outputs(imgsz, nc, [c for i, c in enumerate(cells) if i != 2])
    # Original image 128x96 letterboxed into 64: ratio 0.5, pad_y = (64 - 48) / 2 = 8.
    _, meta = preprocess([Image.new("RGB", (128, 96))], imgsz)
    (dets,) = postprocess(outs, meta, conf=0.25, iou=0.45, max_det=10)
    # IoU of 12..28 vs 12..32 (same rows) = 256 / 320 = 0.8 > 0.45: the 0.8 box is suppressed.
    assert dets[:, 4].tolist() == pytest.approx([0.9, 0.7], abs=1e-6)
    assert dets[:, 5].tolist() == [1.0, 0.0]

    def back(x1, y1, x2, y2):
        return [x1 / 0.5, (y1 - 8) / 0.5, x2 / 0.5, (y2 - 8) / 0.5]
    assert dets[0, :4].tolist() == pytest.approx(back(12, 12, 28, 28), abs=1e-3)
    assert dets[1, :4].tolist() == pytest.approx(back(32, 32, 48, 48), abs=1e-3)
    (loose,) = postprocess(outs, meta, conf=0.25, iou=0.9, max_det=10)
    assert len(loose) == 3
    (one,) = postprocess(outs, meta, conf=0.05, iou=0.9, max_det=1)
    assert one[:, 4].tolist() == pytest.approx([0.9], abs=1e-6)


def test_postprocess_clips_to_the_original_image():
    outs = crafted_outputs(64, 2, [(2, 0, 0, [3.0, 3.0, 3.0, 3.0], 0.9, 0)])  # huge box around (16, 16)
    _, meta = preprocess([Image.new("RGB", (64, 32))], 64)
    (dets,) = postprocess(outs, meta)
    assert dets[0, :4].tolist() == pytest.approx([0, 0, 64, 32])


@pytest.mark.slow
def test_end_to_end_on_the_sample_image():
    model = build_model("yolo", "n", num_classes=80, seed=0).eval()
    x, meta = preprocess(batch_sources(load_sources(None), 2), 160)  # 525 candidate cells
    with torch.no_grad():
        raw = model(x)
    w, h = SAMPLE_SIZE
    for max_det in (300, 7):
        dets = postprocess(raw, meta, conf=0.0, iou=0.45, max_det=max_det)
        assert len(dets) == 2
        for d in dets:
            assert d.shape == (max_det, 6)  # conf 0 keeps far more than max_det candidates
            assert torch.all(d[:, 0] >= 0) and torch.all(d[:, 2] <= w) and torch.all(d[:, 1] >= 0)
            assert torch.all(d[:, 3] <= h) and torch.all(d[:, 0] <= d[:, 2]) and torch.all(d[:, 1] <= d[:, 3])
            assert torch.all(d[:-1, 4] >= d[1:, 4])
    # A randomly initialised detector starts with low objectness: nothing passes the default conf.
    assert all(len(d) == 0 for d in postprocess(raw, meta))


def test_user_models_get_their_outputs_as_they_are():
    raw = {"logits": torch.ones(2)}
    assert FACTORY.postprocess(None, raw, [], 0.25, 0.45, 300) is raw



def test_corrupt_image_with_a_replaced_pillow_opener(tmp_path, monkeypatch):
    """A package that replaces PIL.Image.open (Ultralytics does, installing pi-heif from the
    network on an unidentified file) does not change what a corrupt image is: skipped, one line."""
    import sys
    import types

    from PIL import Image

    calls = []
    fake = types.ModuleType("fake_patches")

    def reaching_for_the_network(*args, **kwargs):
        calls.append(args)
        raise ModuleNotFoundError("No module named 'pi_heif'")

    reaching_for_the_network.__module__ = "fake_patches"
    fake._image_open = Image.open
    monkeypatch.setitem(sys.modules, "fake_patches", fake)
    monkeypatch.setattr(Image, "open", reaching_for_the_network)
    (tmp_path / "x.jpg").write_bytes(b"broken")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UsageError, match="corrupt"):
            load_sources(str(tmp_path))
    assert calls == []
