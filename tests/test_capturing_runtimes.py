"""Inference runtimes (capturing/runtimes/) against eager PyTorch: for each family (YOLOv8n from
Ultralytics' yaml, torchvision's SSDlite, LibreYOLO9-t, the built-in detector) and each runtime,
the network's outputs equal the eager model's own call within float32 tolerance, and the family's
own post-process makes the same detections from them. Levels that cannot apply are one line."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest
import torch
from torch.utils import _pytree as pytree

from helpers.fixtures_runtimes import CONF, CPU, IMGSZ, IOU, MAX_DET
from yoloprof.capturing.builtin.capture_entry import intra_op_threads
from yoloprof.capturing.runtimes import family_runtime, load_runtime
from yoloprof.capturing.runtimes.packages import EXTRAS
from yoloprof.capturing.runtimes.flat import Flattened
from yoloprof.config import knobs
from yoloprof.errors import RuntimeNotApplicable, UsageError, run_guarded
from yoloprof.workloads.family_api import ModelRef

RTOL = 1e-4  # float32 kernels of another library: relative to the output's largest magnitude
RUNTIMES = tuple(level for level in knobs.RUNTIMES if level != knobs.BY_NAME["runtime"].default)
pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _needs(level: str) -> None:
    """Skip, naming the extra, where the runtime's packages (its own and onnx) are not installed."""
    if level in EXTRAS and any(importlib.util.find_spec(p) is None for p in (level, "onnx")):  # named as its package
        pytest.skip(f"runtime {level} needs pip install 'yoloprof[{EXTRAS[level]}]'")


def _close(got: Any, want: Any) -> None:
    a = [torch.as_tensor(t).float() for t in pytree.tree_leaves(got)]
    b = [torch.as_tensor(t).float() for t in pytree.tree_leaves(want)]
    assert len(a) == len(b)
    for g, w in zip(a, b):
        assert g.shape == w.shape
        scale = float(w.abs().max()) if w.numel() else 1.0
        assert torch.allclose(g, w, rtol=0, atol=RTOL * max(scale, 1e-6)), float((g - w).abs().max())


@pytest.mark.parametrize("level", RUNTIMES)
def test_runtime_outputs_and_detections_match_eager(runtime_family: dict[str, Any], level: str) -> None:
    family = runtime_family
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


# ---- levels that cannot apply, precision, structure ------------------------------------------------


class Bessel(torch.nn.Module):
    """An op the ONNX exporter has no symbolic for (TorchScript traces it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.bessel_j0(x)


class Tiny(torch.nn.Module):
    """A seeded conv net returning a structure: a dict with a list of tensors and an int."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        y = self.bn(self.conv(x)).relu()
        return {"maps": [y, y.mean(dim=(2, 3))], "channels": 8}


EXAMPLE = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("level", ["onnxruntime", "openvino"])
def test_an_op_onnx_cannot_export_is_one_line_not_applicable(level: str, capfd: Any) -> None:
    _needs(level)
    with pytest.raises(RuntimeNotApplicable) as info:
        load_runtime(level, Bessel(), EXAMPLE, CPU, "float32")
    message = str(info.value)
    assert "\n" not in message and "bessel_j0" in message and message.startswith(f"runtime {level}: ")
    assert "graph" not in capfd.readouterr().out  # the exporter's C++ log of the whole graph stays off stdout
    assert isinstance(info.value, UsageError)  # the CLI's one line and exit 2
    assert run_guarded(lambda: load_runtime(level, Bessel(), EXAMPLE, CPU, "float32")) == 2


def test_torchscript_runs_what_onnx_cannot() -> None:
    loaded = load_runtime("torchscript", Bessel(), EXAMPLE, CPU, "float32")
    assert torch.equal(loaded.forward(EXAMPLE), torch.special.bessel_j0(EXAMPLE))


@pytest.mark.parametrize("level", RUNTIMES)
def test_outputs_keep_the_networks_structure(level: str) -> None:
    _needs(level)
    net = Tiny().eval()
    loaded = load_runtime(level, net, EXAMPLE, CPU, "float32")
    got = loaded.forward(EXAMPLE)
    with torch.no_grad():
        want = net(EXAMPLE)
    assert set(got) == {"maps", "channels"} and got["channels"] == 8 and isinstance(got["maps"], list)
    _close(got["maps"], want["maps"])


@pytest.mark.parametrize("level", RUNTIMES)
def test_another_input_shape_is_refused(level: str) -> None:
    _needs(level)
    loaded = load_runtime(level, Tiny(), EXAMPLE, CPU, "float32")
    with pytest.raises(RuntimeNotApplicable, match=r"built for input shape \[2, 3, 16, 16\], got \[1, 3, 16, 16\]"):
        loaded.forward(EXAMPLE[:1])


def test_torchscript_bfloat16_is_the_autocast_arithmetic() -> None:
    net = Tiny().eval()
    got = load_runtime("torchscript", net, EXAMPLE, CPU, "bfloat16").forward(EXAMPLE)["maps"][0]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = net(EXAMPLE)["maps"][0]
    assert got.dtype == want.dtype == torch.bfloat16
    assert torch.allclose(got.float(), want.float(), atol=1e-2)


def test_onnxruntime_refuses_reduced_precision() -> None:
    _needs("onnxruntime")
    with pytest.raises(RuntimeNotApplicable, match="precision bfloat16"):
        load_runtime("onnxruntime", Tiny(), EXAMPLE, CPU, "bfloat16")


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_openvino_precision_is_its_inference_hint_where_the_cpu_has_it(precision: str) -> None:
    _needs("openvino")
    import openvino as ov

    from yoloprof.capturing.runtimes.openvino_runtime import PRECISION_HINT

    net = Tiny().eval()
    capability = PRECISION_HINT[precision][1]
    if capability not in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        with pytest.raises(RuntimeNotApplicable, match=f"lacks {capability}"):
            load_runtime("openvino", net, EXAMPLE, CPU, precision)
        return
    loaded = load_runtime("openvino", net, EXAMPLE, CPU, precision)
    assert f"precision hint {PRECISION_HINT[precision][0]}" in (loaded.note or "")
    with torch.no_grad():
        want = net(EXAMPLE)["maps"][0]
    got = loaded.forward(EXAMPLE)["maps"][0]
    assert torch.allclose(got.float(), want, atol=5e-2 * float(want.abs().max()))


def test_openvino_float32_hint_holds_float32_arithmetic() -> None:
    """The CPU plugin's default on a BF16 CPU would be bf16: the f32 hint keeps float32 accuracy."""
    _needs("openvino")
    net = Tiny().eval()
    loaded = load_runtime("openvino", net, EXAMPLE, CPU, "float32")
    assert "precision hint f32" in (loaded.note or "")
    with torch.no_grad():
        _close(loaded.forward(EXAMPLE)["maps"], net(EXAMPLE)["maps"])


@pytest.mark.parametrize("level, package", [("onnxruntime", "onnxruntime"), ("openvino", "openvino"),
                                            ("onnxruntime", "onnx"), ("openvino", "onnx")])
def test_a_missing_package_is_one_line_naming_the_extra(level: str, package: str, monkeypatch: Any) -> None:
    _needs(level)
    monkeypatch.setitem(sys.modules, package, None)  # `import package` raises ImportError
    extra = EXTRAS[level]
    with pytest.raises(RuntimeNotApplicable, match=rf"needs the package '{package}'.*pip install 'yoloprof\[{extra}\]'"):
        load_runtime(level, Tiny(), EXAMPLE, CPU, "float32")


def test_onnxruntime_takes_torchs_intra_op_threads() -> None:
    _needs("onnxruntime")
    with intra_op_threads(3):  # not the module's 1 (torch_one_thread), not a machine's default
        assert "3 threads" in (load_runtime("onnxruntime", Tiny(), EXAMPLE, CPU, "float32").note or "")


def test_no_device_plugin_is_not_applicable() -> None:
    _needs("openvino")
    with pytest.raises(RuntimeNotApplicable, match="no OpenVINO device plugin for torch device meta"):
        load_runtime("openvino", Tiny(), EXAMPLE, torch.device("meta"), "float32")


def test_unknown_and_eager_levels_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="expected one of eager, torchscript"):
        load_runtime("tensorrt", Tiny(), EXAMPLE, CPU, "float32")
    with pytest.raises(UsageError, match="nothing to load"):
        load_runtime("eager", Tiny(), EXAMPLE, CPU, "float32")


def test_flattened_rebuilds_the_hand_written_structure() -> None:
    class Nest(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return (x + 1, {"b": [x * 2, 7], "a": x.sum()})

    flat = Flattened(Nest(), EXAMPLE)
    leaves = flat(EXAMPLE)
    assert flat.count == 3 and len(leaves) == 3
    rebuilt = flat.rebuild(leaves)
    x = EXAMPLE
    assert isinstance(rebuilt, tuple) and set(rebuilt[1]) == {"a", "b"} and rebuilt[1]["b"][1] == 7
    assert torch.equal(rebuilt[0], x + 1) and torch.equal(rebuilt[1]["b"][0], x * 2)
    assert torch.equal(rebuilt[1]["a"], x.sum())


def test_a_two_stage_detector_is_not_applicable() -> None:
    pytest.importorskip("torchvision")
    from yoloprof.workloads.family_torchvision import ADAPTER

    model = ADAPTER.build(ModelRef("torchvision", "fasterrcnn_mobilenet_v3_large_320_fpn", num_classes=3, imgsz=IMGSZ))
    with pytest.raises(RuntimeNotApplicable, match="two-stage detector"):
        ADAPTER.export_network(model)


def test_the_eager_model_is_unchanged_by_the_export_form() -> None:
    pytest.importorskip("ultralytics")
    from yoloprof.workloads.family_ultralytics import ADAPTER

    model = ADAPTER.build(ModelRef("ultralytics", "yolov8n.yaml", num_classes=3)).eval()
    x = torch.rand(1, 3, IMGSZ, IMGSZ)
    with torch.no_grad():
        assert isinstance(ADAPTER.export_network(model).network(x), torch.Tensor)
        assert isinstance(model(x), tuple)  # the Detect head is back in its (predictions, raw) form


OPENVINO_OFFLINE = """
import socket, sys
def refused(*args, **kwargs):
    print("network attempt", args[:2], flush=True)
    raise OSError("offline")
socket.getaddrinfo = refused
from yoloprof.capturing.runtimes.openvino_runtime import import_openvino
import_openvino()
import openvino.tools.ovc.utils as ovc_utils
print("telemetry", ovc_utils.tm.__name__, "openvino_telemetry" in sys.modules)
"""


def test_openvino_is_imported_without_its_telemetry() -> None:
    """`import openvino` would send a usage event (its ovc tool, at import): in a fresh process
    (this one may have imported openvino already), OpenVINO's no-op stub takes its place."""
    _needs("openvino")
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", OPENVINO_OFFLINE], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "network attempt" not in done.stdout
    assert "telemetry openvino.tools.ovc.telemetry_stub False" in done.stdout
