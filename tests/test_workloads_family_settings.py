"""The families' own post-process settings (conf, iou, max_det), checked against the libraries'
own constructors; names and sizes checked before any work; batch norm at batch 1; a checkpoint's
class count (docs/workloads.md "Post-process settings", docs/errors.md)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.model_families import split_model
from yoloprof.config.postprocess_defaults import family_defaults, origins
from yoloprof.config.translate import config_hash, ignored_settings
from yoloprof.errors import UsageError

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

SSDLITE = "torchvision:ssdlite320_mobilenet_v3_large"
QUICK = ["--device", "cpu", "--warmup", "0", "--warmup-max", "0", "--no-trace", "--no-modules"]


def _defaults(fn: object, *names: str) -> tuple[object, ...]:
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    return tuple(params[n].default for n in names)


def _triple(model: str, **kwargs: object) -> tuple[float, float, int]:
    d = family_defaults(model, kwargs)
    return d.conf, d.iou, d.max_det


def test_torchvision_defaults_are_the_constructors_own():
    from torchvision.models import detection as det

    single = ("score_thresh", "nms_thresh", "detections_per_img")
    roi = ("box_score_thresh", "box_nms_thresh", "box_detections_per_img")
    assert _triple("torchvision:ssd300_vgg16") == _defaults(det.ssd.SSD.__init__, *single) == (0.01, 0.45, 200)
    assert _triple("torchvision:retinanet_resnet50_fpn_v2") == _defaults(det.RetinaNet.__init__, *single)
    assert _triple("torchvision:fcos_resnet50_fpn") == _defaults(det.FCOS.__init__, *single) == (0.2, 0.6, 100)
    for builder, cls in (("fasterrcnn_resnet50_fpn", det.FasterRCNN), ("maskrcnn_resnet50_fpn", det.MaskRCNN),
                         ("keypointrcnn_resnet50_fpn", det.KeypointRCNN)):
        assert _triple(f"torchvision:{builder}") == _defaults(cls.__init__, *roi) == (0.05, 0.5, 100)
    # SSDlite's builder passes its own (the numbers); the built model holds them
    model = torchvision.models.get_model(SSDLITE.split(":")[1], weights=None, weights_backbone=None, num_classes=3)
    assert _triple(SSDLITE) == (model.score_thresh, model.nms_thresh, model.detections_per_img) == (0.001, 0.55, 300)
    # a builder keyword is the model's own value
    assert _triple(SSDLITE, score_thresh=0.3) == (0.3, 0.55, 300)
    assert _triple("torchvision:fasterrcnn_resnet50_fpn", box_detections_per_img=7) == (0.05, 0.5, 7)
    assert _triple("torchvision:resnet18") == (0.25, 0.45, 300)  # a classifier: none of its own, unused


def test_other_families_defaults_are_their_libraries_own():
    from yoloprof.workloads import pipeline

    assert _triple("yolo") == _defaults(pipeline.postprocess, "conf", "iou", "max_det") == (0.25, 0.45, 300)
    assert _triple("mymodels.Net") == (0.25, 0.45, 300)
    libre = pytest.importorskip("libreyolo.models.base.inference")
    assert _triple("libreyolo:yolo9") == _defaults(libre.InferenceRunner.__call__, "conf", "iou", "max_det")
    pytest.importorskip("ultralytics")
    from ultralytics.utils import DEFAULT_CFG_DICT

    # default.yaml leaves conf empty: BasePredictor.__init__ sets 0.25 (read by hand)
    assert DEFAULT_CFG_DICT["conf"] is None
    assert _triple("ultralytics:yolov8n.yaml") == (0.25, DEFAULT_CFG_DICT["iou"], DEFAULT_CFG_DICT["max_det"]) \
        == (0.25, 0.7, 300)


def test_resolved_settings_hold_the_values_that_run_and_overrides_win():
    s = CaptureSettings.for_mode("infer", model=SSDLITE, iou=0.6).validate()
    assert origins({"conf": s.conf, "iou": s.iou, "max_det": s.max_det}) == \
        {"conf": "family", "iou": "user", "max_det": "family"}
    r = s.resolved()
    assert (r.conf, r.iou, r.max_det) == (0.001, 0.6, 300)
    assert r.resolved() == r
    train = CaptureSettings.for_mode("train", model=SSDLITE).resolved()  # no post-process: yoloprof's, unused
    assert (train.conf, train.iou, train.max_det) == (0.25, 0.45, 300)


def test_configuration_hashes_of_the_yoloprof_defaults_are_kept():
    """Before the family defaults, conf/iou/max_det were 0.25/0.45/300 for every model: where that
    is still what runs (the built-in detector; any training) the hash is the one from then."""
    for mode, model in (("infer", "yolo"), ("train", "yolo"), ("train", SSDLITE), ("infer", "torchvision:resnet18")):
        now = CaptureSettings.for_mode(mode, model=model)
        then = CaptureSettings.for_mode(mode, model=model, conf=0.25, iou=0.45, max_det=300)
        assert config_hash(now) == config_hash(then), (mode, model)
    ssd = CaptureSettings.for_mode("infer", model=SSDLITE)
    assert config_hash(ssd) != config_hash(CaptureSettings.for_mode("infer", model=SSDLITE, conf=0.25, iou=0.45,
                                                                    max_det=300))
    assert config_hash(ssd) == config_hash(CaptureSettings.for_mode("infer", model=SSDLITE, conf=0.001))


def test_ssdlite_postprocess_runs_at_its_own_thresholds():
    """With seeded random weights every class scores about 1/91: SSDlite's own 0.001 keeps its
    300 detections, yoloprof's old 0.25 kept none, which is why the post-process was under-timed."""
    from yoloprof.workloads.family_api import ModelRef
    from yoloprof.workloads.family_torchvision import ADAPTER
    from yoloprof.workloads.pipeline import load_sources

    r = CaptureSettings.for_mode("infer", model=SSDLITE).resolved()
    model = ADAPTER.build(ModelRef("torchvision", SSDLITE.split(":")[1], imgsz=64)).eval()
    with torch.inference_mode():
        x, meta = ADAPTER.preprocess(model, load_sources(None)[:1], 64, "cpu")
        raw = ADAPTER.forward(model, x)
        own = ADAPTER.postprocess(model, raw, meta, r.conf, r.iou, r.max_det)
        assert (model.score_thresh, model.nms_thresh, model.detections_per_img) == (0.001, 0.55, 300)
        old = ADAPTER.postprocess(model, raw, meta, 0.25, 0.45, 300)
    assert len(own[0]["scores"]) == 300 and float(own[0]["scores"].min()) >= 0.001
    assert len(old[0]["scores"]) == 0


def test_ssdlite_infer_capture_records_its_own_values(tmp_path):
    from yoloprof.cli import main

    out = tmp_path / "p"
    assert main(["infer", "--model", SSDLITE, "--imgsz", "64", "--runs", "2", "--max-det", "50", *QUICK,
                 "--project", str(out)]) == 0
    config = json.loads((out / "infer" / "profile.json").read_text())["config"]
    assert (config["conf"], config["iou"], config["max_det"]) == (0.001, 0.55, 50)
    assert config["postprocess_from"] == {"conf": "family", "iou": "family", "max_det": "user"}


def test_batch_one_batch_norm_is_a_usage_error(tmp_path, capsys):
    from yoloprof.cli import main

    code = main(["run", "--model", SSDLITE, "--batch", "1", "--imgsz", "64", "--steps", "1", *QUICK,
                 "--project", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--batch >= 2" in err[0] and "internal error" not in err[0]


def test_batch_norm_refusal_of_any_family_names_the_batch():
    from yoloprof.workloads.families import batch_norm_checked
    from yoloprof.workloads.family_api import ModelRef

    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).train()
    step = batch_norm_checked(lambda m, x, t: (m(x).sum(), {}), ModelRef("factory", "mymodels.Net"))
    assert step(net, torch.ones(2, 3), None)[0].ndim == 0  # batch 2 runs
    with pytest.raises(UsageError, match=r"training factory needs --batch >= 2.*\[1, 4\]"):
        step(net, torch.ones(1, 3), None)
    with pytest.raises(ValueError, match="other"):  # anything else passes through
        batch_norm_checked(lambda m, x, t: (_ for _ in ()).throw(ValueError("other")), ModelRef("yolo", "yolo"))(
            net, None, None)


@pytest.mark.parametrize("model, size, words", [
    ("torchvision:not_a_model", "n", "unknown torchvision model 'not_a_model'"),
    ("torchvision:resnet18", "s", "--size s: torchvision models carry their size in their name"),
    ("ultralytics:nope.yaml", "n", "no such model yaml"),
    ("ultralytics:yolov8n.yaml", "z", "--size z: ultralytics models carry their size"),
    ("ultralytics:missing.pt", "n", "no such file"),
    ("libreyolo:yolo99", "t", "LibreYOLO has no such family (did you mean yolo9"),
    ("libreyolo:yolo9", "z", "--size z: LibreYOLO yolo9 has sizes"),
])
def test_every_familys_names_and_sizes_are_checked_without_a_build(model, size, words):
    from yoloprof.workloads.families import check_installed, check_model

    family = split_model(model)[0]
    try:
        check_installed(family)
    except UsageError:
        pytest.skip(f"{family} not installed")
    with pytest.raises(UsageError) as err:
        check_model(CaptureSettings.for_mode("infer", model=model, size=size))
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_sweeps_size_may_serve_other_families():
    """`model=libreyolo,torchvision size=t`: t is LibreYOLO's, ignored by torchvision's builder."""
    from yoloprof.workloads.families import check_model

    settings = CaptureSettings.for_mode("infer", model="torchvision:resnet18", size="t")
    check_model(settings, strict_size=False)
    with pytest.raises(UsageError, match="--size t: torchvision models carry their size in their name"):
        check_model(settings)


def test_a_misspelt_family_gets_did_you_mean():
    with pytest.raises(UsageError, match=r"did you mean ultralytics:yolov8n.yaml\?"):
        split_model("ultralitics:yolov8n.yaml")


def test_keys_of_the_other_mode_are_warned_about():
    assert ignored_settings({"mode": {"name": "infer"}, "capture": {"steps": 8, "runs": 3, "lr": 0.01}}) == [
        "capture.steps=8 is ignored in an inference sweep (it applies to training); capture.runs counts what "
        "it measures"]
    assert ignored_settings({"mode": {"name": "train"}, "capture": {"conf": 0.3, "runs": None}}) == [
        "capture.conf=0.3 is ignored in a training sweep (it applies to inference)"]


@pytest.mark.parametrize("grid, words", [
    (["model=torchvision", "model.name=not_a_model,resnet18"], "unknown torchvision model 'not_a_model'"),
    (["model=torchvision", "model.name=resnet18", "size=n,z"], "size=z: torchvision models carry"),
    (["model=ultralytics", "model.cfg=yolov8n.yaml,nope.yaml"], "ultralytics:nope.yaml: no such model yaml"),
])
def test_sweep_preflight_refuses_bad_names_before_any_job(sweep_env, tmp_path, grid, words):
    from yoloprof.sweep.app import main

    with pytest.raises(UsageError) as err:
        main(["-m", *grid, "device=cpu", "analysis.enabled=false", "launch.isolation=inprocess"])
    assert words in str(err.value) and "job " in str(err.value)
    assert not list(tmp_path.glob("runs/profile/sweeps/*/*")), "a job ran or a sweep dir was left"


def test_sweep_cli_exit_2_and_the_ignored_steps_warning(sweep_env, tmp_path, capsys):
    from yoloprof.cli import main

    assert main(["sweep", "-m", "model=ultralytics", "model.cfg=nope.yaml", "device=cpu"]) == 2
    assert "no such model yaml" in capsys.readouterr().err
    assert not list(tmp_path.glob("runs/profile/sweeps/*/*"))
    assert main(["sweep", "-m", "mode=infer", "capture.steps=8", "batch=1,2", "device=cpu",
                 "analysis.enabled=false", "launch.isolation=inprocess"]) == 0
    assert "capture.steps=8 is ignored in an inference sweep" in capsys.readouterr().err


def _state(tmp_path: Path, name: str, **kw: object) -> str:
    path = tmp_path / f"{name}.pth"
    torch.save(torchvision.models.get_model(name, weights=None, **kw).state_dict(), path)
    return str(path)


def test_checkpoint_class_count_is_followed_or_named(tmp_path):
    from yoloprof.workloads.family_api import ModelRef
    from yoloprof.workloads.family_torchvision import ADAPTER

    stock = _state(tmp_path, "resnet18")  # torchvision's own 1000 classes
    with pytest.warns(UserWarning, match="1000 classes.*not --num-classes 80"):
        model = ADAPTER.build(ModelRef("torchvision", "resnet18", weights=stock))
    assert model.fc.out_features == 1000
    assert torch.equal(model.fc.weight, torch.load(stock)["fc.weight"])
    small = _state(tmp_path, "resnet18", num_classes=10)
    with pytest.raises(UsageError, match=r"10 classes, fewer than --num-classes 80: pass --num-classes 10$"):
        ADAPTER.build(ModelRef("torchvision", "resnet18", weights=small))
    assert ADAPTER.build(ModelRef("torchvision", "resnet18", weights=small, num_classes=10)).fc.out_features == 10
    # a detector's head: anchors x classes channels, background included (91 = COCO's 90 + 1)
    coco = _state(tmp_path, SSDLITE.split(":")[1], weights_backbone=None, num_classes=91)
    with pytest.warns(UserWarning, match="90 classes \\(plus background\\)"):
        ssd = ADAPTER.build(ModelRef("torchvision", SSDLITE.split(":")[1], weights=coco))
    own = torch.load(coco)
    assert all(torch.equal(v, own[k]) for k, v in ssd.state_dict().items())


def test_a_state_dict_that_does_not_fit_is_one_whole_line(tmp_path):
    from yoloprof.workloads.family_api import ModelRef
    from yoloprof.workloads.family_torchvision import ADAPTER

    path = tmp_path / "odd.pth"
    torch.save({"conv1.weight": torch.zeros(1)}, path)
    with pytest.raises(UsageError) as err:
        ADAPTER.build(ModelRef("torchvision", "resnet18", weights=str(path)))
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"cannot load torchvision weights {str(path)!r}: RuntimeError: "
                                               "Error(s) in loading state_dict for ResNet: Missing key(s)")
