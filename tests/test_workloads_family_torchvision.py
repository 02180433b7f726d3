"""The torchvision family adapter against torchvision's own calls.

References are independent of the adapter: `model.eval()(list_of_images)` and
`model.train()(images, targets)` called directly with targets written by hand, torchvision's
own resize/normalise transforms for the classifier, torch's FLOP counter for the work.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from PIL import Image  # noqa: E402

from yoloprof.errors import UsageError  # noqa: E402
from yoloprof.workloads.family_api import ModelRef  # noqa: E402
from yoloprof.workloads.family_torchvision import ADAPTER, IMAGENET_MEAN, IMAGENET_STD  # noqa: E402

SSDLITE = "ssdlite320_mobilenet_v3_large"
RCNN = "fasterrcnn_mobilenet_v3_large_320_fpn"
CLASSES = 3


def _ref(name: str, imgsz: int | None = 128, **kw: object) -> ModelRef:
    size = None if imgsz is None else ADAPTER.input_size(ModelRef("torchvision", name), imgsz).imgsz
    return ModelRef("torchvision", name, num_classes=CLASSES, imgsz=size, **kw)  # type: ignore[arg-type]


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in ((90, 120), (110, 70))]


def _as_float(image: Image.Image) -> torch.Tensor:
    """An image as torchvision's detectors take it: float CHW in [0, 1] (decoded independently)."""
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float() / 255.0


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")  # lossless: the decoded bytes equal the image
    return buf.getvalue()


@pytest.mark.parametrize("name", [SSDLITE, RCNN, "fcos_resnet50_fpn"])  # FCOS: outputs split per level
def test_inference_equals_the_models_own_call(name: str) -> None:
    model = ADAPTER.build(_ref(name)).eval()
    images = _images()
    sources = [images[0], _png(images[1])]  # a PIL image and encoded bytes
    conf, iou, max_det = 0.06, 0.4, 30
    with torch.inference_mode():
        for _ in range(2):  # R-CNN: thresholds set by one call apply to the next call's ROI heads
            x, meta = ADAPTER.preprocess(model, sources, 128, "cpu")
            out = ADAPTER.postprocess(model, ADAPTER.forward(model, x), meta, conf, iou, max_det)
        expected = model([_as_float(im) for im in images])
    assert len(out) == len(expected) == 2
    for got, want, image in zip(out, expected, images):
        assert 0 < len(got["boxes"]) <= max_det
        assert bool((got["scores"] >= conf).all())
        assert float(got["boxes"][:, 2].max()) <= image.width  # back in the original image's pixels
        for key in ("boxes", "scores", "labels"):
            assert got[key].shape == want[key].shape
            torch.testing.assert_close(got[key], want[key])


def test_classifier_inference_is_resize_normalise_softmax_top5() -> None:
    from torchvision.transforms.v2 import functional as F

    model = ADAPTER.build(_ref("resnet18")).eval()
    images = _images()
    with torch.inference_mode():
        x, meta = ADAPTER.preprocess(model, [_png(im) for im in images], 96, "cpu")
        out = ADAPTER.postprocess(model, ADAPTER.forward(model, x), meta, 0.25, 0.45, 300)
        ref_x = torch.stack([F.normalize(F.resize(_as_float(im), [96, 96], antialias=True), list(IMAGENET_MEAN),
                                         list(IMAGENET_STD)) for im in images])
        probs = torch.softmax(model(ref_x), dim=1)
    torch.testing.assert_close(x, ref_x, atol=1e-4, rtol=1e-4)
    for got, p in zip(out, probs):
        order = torch.argsort(p, descending=True)[:CLASSES]  # top-5 of 3 classes: all three
        assert got["labels"].tolist() == order.tolist()
        torch.testing.assert_close(got["scores"], p[order], atol=1e-5, rtol=1e-5)


# two images 128 wide, 96 high; rows (image, class, cx, cy, w, h); image 1 has one box (its second
# row has no width: dropped for the detectors, which refuse it)
ROWS = torch.tensor([[0, 1, 0.5, 0.5, 0.4, 0.3], [0, 2, 0.25, 0.75, 0.25, 0.5], [1, 0, 0.75, 0.25, 0.5, 0.5],
                     [1, 2, 0.5, 0.5, 0.0, 0.2]])
BOXES = [torch.tensor([[38.4, 33.6, 89.6, 62.4], [16.0, 48.0, 48.0, 96.0]]),  # by hand: (cx -+ w/2) * 128, ...
         torch.tensor([[64.0, 0.0, 128.0, 48.0]])]


@pytest.mark.parametrize("name", [SSDLITE, RCNN])
def test_detector_training_loss_equals_the_models_loss(name: str) -> None:
    model = ADAPTER.build(_ref(name))
    images = torch.randint(0, 256, (2, 3, 96, 128), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    inputs, targets = ADAPTER.to_device(model, images, ROWS, "cpu")
    labels = [torch.tensor([2, 3]), torch.tensor([1])]  # class + 1: both count background as label 0
    for got, boxes, lab in zip(targets, BOXES, labels):
        torch.testing.assert_close(got["boxes"], boxes)
        assert got["labels"].dtype == torch.int64 and got["labels"].tolist() == lab.tolist()
    torch.manual_seed(5)  # the R-CNN samplers draw proposals at random
    loss, parts = ADAPTER.make_loss(model, None)(model, inputs, targets)
    torch.manual_seed(5)
    expected = model.train()([im.float() / 255.0 for im in images],
                             [{"boxes": b, "labels": lab} for b, lab in zip(BOXES, labels)])
    assert set(parts) == set(expected)
    torch.testing.assert_close(loss, sum(expected.values()))
    loss.backward()


def test_classifier_training_is_cross_entropy_on_first_box_class() -> None:
    model = ADAPTER.build(_ref("resnet18"))
    images = torch.randint(0, 256, (3, 3, 64, 64), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    inputs, labels = ADAPTER.to_device(model, images, ROWS, "cpu")
    assert labels.tolist() == [1, 0, 0]  # image 0: first row's class 1; image 1: class 0; image 2: no box
    assert ADAPTER.to_device(model, images, ROWS[[1, 0, 3, 2]], "cpu")[1].tolist() == [2, 2, 0]  # first row, not min
    assert ADAPTER.to_device(model, images, ROWS[:0], "cpu")[1].tolist() == [0, 0, 0]
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    torch.testing.assert_close(inputs, (images.float() / 255.0 - mean) / std)
    loss, _ = ADAPTER.make_loss(model, None)(model, inputs, labels)
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(model(inputs), torch.tensor([1, 0, 0])))


def test_builds_never_download_and_are_seeded(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchvision.models._api as api

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)
    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)
    monkeypatch.setattr(api, "load_state_dict_from_url", refuse)
    state = torch.random.get_rng_state()
    for name in (SSDLITE, RCNN, "resnet18", "retinanet_resnet50_fpn", "fcos_resnet50_fpn"):
        ADAPTER.build(_ref(name))
    assert torch.equal(torch.random.get_rng_state(), state)  # seeding leaves the caller's generator alone
    a, b = ADAPTER.build(_ref("resnet18", seed=3)), ADAPTER.build(_ref("resnet18", seed=3))
    assert torch.equal(a.fc.weight, b.fc.weight)
    with pytest.raises(UsageError, match="weights"):
        ADAPTER.build(_ref("resnet18", kwargs={"weights": "DEFAULT"}))


def test_num_classes_follow_each_detectors_background_convention() -> None:
    ssd = ADAPTER.build(_ref(SSDLITE))
    rcnn = ADAPTER.build(_ref(RCNN))
    assert ssd.head.classification_head.num_columns == CLASSES + 1
    assert rcnn.roi_heads.box_predictor.cls_score.out_features == CLASSES + 1
    fcos = ADAPTER.build(_ref("fcos_resnet50_fpn"))
    assert fcos.head.classification_head.num_classes == CLASSES  # sigmoid classifier: no background


def test_weights_file_is_loaded(tmp_path: object) -> None:
    path = f"{tmp_path}/r18.pt"
    torch.save(ADAPTER.build(_ref("resnet18", seed=0)).state_dict(), path)
    loaded = ADAPTER.build(_ref("resnet18", seed=1, weights=path))
    assert torch.equal(loaded.fc.weight, ADAPTER.build(_ref("resnet18", seed=0)).fc.weight)
    with pytest.raises(UsageError, match="not found"):
        ADAPTER.build(_ref("resnet18", weights=f"{tmp_path}/missing.pt"))


# FLOPs at 384 over FLOPs at 256: the convolutions grow by (384 / 256) ** 2 = 2.25; the R-CNN's ROI
# heads run a fixed number of proposals through their box head whatever the size (measured 1.23)
GROWTH = {SSDLITE: 1.8, RCNN: 1.15}


@pytest.mark.parametrize("name", [SSDLITE, RCNN])
def test_imgsz_changes_the_work(name: str) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    image = Image.fromarray(np.full((200, 200, 3), 128, dtype=np.uint8))
    flops, shapes = {}, {}
    for size in (256, 384):
        model = ADAPTER.build(_ref(name, size)).eval()
        with torch.inference_mode():
            x, _ = ADAPTER.preprocess(model, [image], size, "cpu")
            with FlopCounterMode(display=False) as counter:
                ADAPTER.forward(model, x)
        flops[size], shapes[size] = counter.get_total_flops(), tuple(x.tensors.shape[-2:])
    assert shapes == {256: (256, 256), 384: (384, 384)}
    assert flops[384] > GROWTH[name] * flops[256]


def test_input_size_rounds_where_the_model_needs_it() -> None:
    assert ADAPTER.input_size(ModelRef("torchvision", "resnet18"), 100).imgsz == 100
    vit = ADAPTER.input_size(ModelRef("torchvision", "vit_b_16"), 100)
    assert vit.imgsz == 112 and vit.note and "patch" in vit.note
    assert ADAPTER.input_size(ModelRef("torchvision", "ssd300_vgg16"), 128).imgsz == 268


def test_unknown_and_unsupported_names_are_usage_errors() -> None:
    with pytest.raises(UsageError, match=r"'resnet19'.*resnet18"):
        ADAPTER.build(_ref("resnet19", None))
    with pytest.raises(UsageError, match="not a classification or detection"):
        ADAPTER.input_size(ModelRef("torchvision", "fcn_resnet50"), 128)
