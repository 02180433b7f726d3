"""The model-family table (config/model_families.py, workloads/families.py): how a model setting
names its family, the hooks every family takes (a loss factory given the model, a post-process
target), `--model-arg`, the sweep spellings of each family, and the one-line error of a missing
extra."""

from __future__ import annotations

import pytest
import torch

from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.cli_args import key_values
from yoloprof.config.model_families import FAMILIES, NAMED, split_model
from yoloprof.errors import UsageError
from yoloprof.workloads import families


@pytest.mark.parametrize("model, expected", [
    ("yolo", ("yolo", "yolo")),
    ("mymodels.Net", ("factory", "mymodels.Net")),
    ("ultralytics:yolov8n.yaml", ("ultralytics", "yolov8n.yaml")),
    ("libreyolo:yolo9", ("libreyolo", "yolo9")),
    ("torchvision:ssdlite320_mobilenet_v3_large", ("torchvision", "ssdlite320_mobilenet_v3_large")),
    ("ultralytics:sub/dir/my.yaml", ("ultralytics", "sub/dir/my.yaml")),
])
def test_a_model_setting_names_its_family(model, expected):
    assert split_model(model) == expected


def test_an_unknown_family_or_a_missing_name_is_one_line():
    with pytest.raises(UsageError, match=r"unknown model family 'keras'; families: ultralytics:<name>"):
        split_model("keras:resnet")
    with pytest.raises(UsageError, match=r"name the torchvision model, e.g. torchvision:resnet18"):
        split_model("torchvision:")


def test_a_missing_extra_names_the_pip_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "libreyolo" else real(name, *a))
    with pytest.raises(UsageError) as err:
        families.adapter_of("libreyolo")
    assert str(err.value) == ("model family 'libreyolo' needs the package 'libreyolo', which is not installed: "
                              "pip install 'yoloprof[libreyolo]'")
    assert "\n" not in str(err.value)


def test_every_named_family_is_an_extra_of_the_project():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {FAMILIES[f].extra for f in NAMED} <= set(extras)


def test_model_args_are_read_as_hydra_reads_scalars():
    assert key_values(["width=16", "bias=false", "scale=0.5", "name=tiny", "act=null", "empty="], "--model-arg") == {
        "width": 16, "bias": False, "scale": 0.5, "name": "tiny", "act": None, "empty": ""}
    with pytest.raises(UsageError, match="--model-arg 'width': expected KEY=VALUE"):
        key_values(["width"], "--model-arg")


def test_a_loss_factory_receives_the_model_where_it_takes_it(user_module):
    import famhooks

    model = torch.nn.Conv2d(3, 2, 1)
    x = torch.ones(1, 3, 4, 4)
    loss, parts = families.user_loss(model, "famhooks.loss_with_model")(model, x, None)
    assert famhooks.SEEN["model"] is model
    assert loss.item() == pytest.approx(model(x).square().mean().item()) and set(parts) == {"sq"}
    loss, parts = families.user_loss(model, "famhooks.loss_plain")(model, x, None)
    assert loss.item() == pytest.approx(model(x).abs().mean().item()) and parts == {}


def test_a_postprocess_target_gets_the_keywords_it_takes(user_module):
    post = families.user_postprocess("famhooks.post")
    out = post(None, torch.arange(12.0).reshape(1, 12), None, 9.5, 0.45, 3)
    assert out.tolist() == [[True, True, False]]  # top-3 of 0..11 are 11, 10, 9 against conf 9.5


def test_a_workload_uses_the_hooks_over_the_family(user_module):
    s = CaptureSettings.for_mode("train", model="famhooks.net", model_kwargs={"width": 3}, loss="famhooks.loss_plain",
                                 device="cpu").validate()
    work = families.workload(s)
    model = work.build()
    assert model.out_channels == 3 and work.ref.family == "factory"
    loss, _ = work.forward_loss(model)(model, torch.ones(1, 3, 8, 8), None)
    assert loss.item() == pytest.approx(model(torch.ones(1, 3, 8, 8)).abs().mean().item())


def test_size_is_refused_for_the_builtin_only_by_its_own_sizes():
    with pytest.raises(UsageError, match=r"--size c: the built-in detector's sizes are n, t, s, m, l"):
        CaptureSettings.for_mode("train", size="c").validate()
    CaptureSettings.for_mode("train", model="libreyolo:yolo9", size="c").validate()  # the family checks it


def test_a_family_model_takes_an_imgsz_its_family_rounds():
    CaptureSettings.for_mode("infer", model="libreyolo:yolo9", size="t", imgsz=100).validate()
    with pytest.raises(UsageError, match="multiple of 32"):
        CaptureSettings.for_mode("infer", imgsz=100).validate()


@pytest.mark.parametrize("overrides, model, kwargs", [
    (["model=ultralytics", "model.cfg=yolov8n.yaml"], "ultralytics:yolov8n.yaml", {}),
    (["model=ultralytics", "model.cfg=yolo11n.yaml"], "ultralytics:yolo11n.yaml", {}),
    (["model=libreyolo", "model.family=yolo9", "size=t"], "libreyolo:yolo9", {}),
    (["model=torchvision", "model.name=ssdlite320_mobilenet_v3_large"],
     "torchvision:ssdlite320_mobilenet_v3_large", {}),
    (["model=torchvision", "model.name=resnet18", "+model.zero_init_residual=true"], "torchvision:resnet18",
     {"zero_init_residual": True}),
])
def test_the_sweep_spellings_of_each_family(hydra_compose, overrides, model, kwargs):
    from yoloprof.config.translate import settings_from_cfg

    s = settings_from_cfg(hydra_compose(overrides))
    assert (s.model, dict(s.model_kwargs)) == (model, kwargs)
    if "size=t" in overrides:
        assert s.size == "t"


def test_summary_header_has_no_size_for_a_model_without_sizes():
    from yoloprof.readers.summary import _workload

    assert "size" not in _workload({"config": {"model": "mymodels.Net", "size": "n"}})
    assert "size" not in _workload({"config": {"model": "torchvision:resnet18", "size": "n"}})
    assert _workload({"config": {"model": "yolo", "size": "s"}})["size"] == "s"
    assert _workload({"config": {"model": "libreyolo:yolo9", "size": "t"}})["size"] == "t"


def test_an_ultralytics_yolo_wrapper_from_a_factory_is_unwrapped(tmp_path, monkeypatch):
    """`model._target_=ultralytics.YOLO model.model=yolov8n.yaml`: the capture gets the network;
    YOLO.train (a whole training run that downloads coco8 and writes runs/detect) never runs."""
    pytest.importorskip("ultralytics")
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    from ultralytics import YOLO
    from ultralytics.nn.tasks import DetectionModel

    from yoloprof.workloads.models import build_model

    monkeypatch.setattr(YOLO, "train", lambda self, *a, **k: pytest.fail("YOLO.train ran"))
    model = build_model("ultralytics.YOLO", kwargs={"model": "yolov8n.yaml", "verbose": False})
    assert type(model) is DetectionModel
    model.train(False)
    assert not (tmp_path / "runs").exists()


def test_an_imgsz_axis_over_a_model_that_ignores_it_is_refused(monkeypatch):
    """An adapter that says a model ignores imgsz (InputSize(None)): a sweep over imgsz is refused,
    one over batch is not, and a single capture notes it."""
    from yoloprof.capturing.builtin.capture_entry import input_size_notes
    from yoloprof.sweep.plan import check_imgsz_axis
    from yoloprof.workloads.family_api import InputSize

    monkeypatch.setattr(families, "input_size", lambda s: InputSize(None, "it resizes to 224 itself")
                        if s.model.startswith("torchvision:") else InputSize(s.imgsz))
    fixed = [CaptureSettings.for_mode("infer", model="torchvision:resnet18", imgsz=i) for i in (64, 96)]
    with pytest.raises(UsageError, match=r"imgsz is swept but model torchvision:resnet18 ignores it "
                                         r"\(it resizes to 224 itself\)"):
        check_imgsz_axis(fixed)
    check_imgsz_axis([CaptureSettings.for_mode("infer", model="torchvision:resnet18", batch=b) for b in (1, 2)])
    check_imgsz_axis([CaptureSettings.for_mode("infer", imgsz=i) for i in (64, 96)])
    assert input_size_notes(fixed[0]) == ["it resizes to 224 itself"]


def test_a_family_import_leaves_the_environment_as_it_was(monkeypatch):
    """Ultralytics sets OMP_NUM_THREADS, TORCH_CPP_LOG_LEVEL, ... on import; processes started
    after it (sweep workers) must not inherit them."""
    import os

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = {k: v for k, v in os.environ.items() if k != "YOLO_OFFLINE"}
    with families.environment_kept():
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["PATH"] = "changed"
    assert {k: v for k, v in os.environ.items() if k != "YOLO_OFFLINE"} == before
