"""The Ultralytics family: `--model ultralytics:yolov8n.yaml` (sweeps `model=ultralytics
model.cfg=yolov8n.yaml`), any Ultralytics detection model yaml (`yolo11n.yaml`, a path to one's
own) or a `.pt` checkpoint file.

What is Ultralytics' own, called through its public modules:
- the network: `ultralytics.nn.tasks.DetectionModel(cfg, nc=num_classes)` with seeded random
  weights (a yaml's scale letter picks the size, as Ultralytics reads it); a `.pt` file through
  `load_checkpoint` (a pickle: it runs code from the file, as `YOLO("file.pt")` does);
  `--weights FILE.pt` loads such a checkpoint's weights over the built model (`DetectionModel.load`);
- training: the batch dict its trainer hands the model (`img` in [0, 1], `batch_idx`, `cls`,
  `bboxes` normalised xywh) and the model's own criterion (`v8DetectionLoss`, or `E2ELoss` for
  end-to-end heads) with the trainer's default hyperparameters (`box`, `cls`, `dfl` from
  Ultralytics' default.yaml); the scalar is `loss.sum()`, as `BaseTrainer` backpropagates; the
  trainer's optimizer, clipping, EMA and accumulation (workloads/recipe_ultralytics.py);
- inference: its `LetterBox` (square `imgsz`, `auto=False`: one batch shape), HWC -> CHW, / 255
  (the predictor's steps; the image is decoded as RGB here, where the predictor decodes BGR and
  flips it: the same tensor), then `non_max_suppression` and `scale_boxes` back to each image's
  pixels, as `DetectionPredictor.postprocess` does. One [K, 6] tensor (x1, y1, x2, y2, score,
  class) per image;
- inference runtimes (`export_network`): the model with its detection head in Ultralytics' export
  mode (`Detect.export`, as its Exporter sets it) for the duration of each call, so it returns the
  one decoded tensor [B, 4 + nc, anchors] (end-to-end heads: [B, max_det, 6]) that
  `non_max_suppression` reads, instead of the (tensor, raw dict) pair that tracing cannot follow.

Nothing is downloaded: a name that is neither a packaged yaml nor an existing file, or a URL, is
refused before Ultralytics could fetch it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import ExportForm, ForwardLoss, InputSize, ModelRef, RecipeInputs, TrainRecipe

YAML_SUFFIXES = (".yaml", ".yml")
FROZEN = (".dfl",)  # layers the Ultralytics trainer always freezes (BaseTrainer's always_freeze_names)
REMOTE = ("http://", "https://", "ul://", "rtsp://", "s3://", "gs://")


def _is_remote(name: str) -> bool:
    return str(name).lower().startswith(REMOTE)


def _hyperparameters() -> Any:
    """The trainer's defaults (default.yaml) as the namespace `model.args` is during training."""
    from ultralytics.cfg import get_cfg
    from ultralytics.utils import DEFAULT_CFG

    return get_cfg(DEFAULT_CFG)


def _local_file(path: str, what: str) -> Path:
    """`path` as an existing local file; a URL or a missing file is refused (never a download)."""
    file = Path(path).expanduser()
    if _is_remote(path) or not file.is_file():
        raise UsageError(f"{what} {path}: no such file (yoloprof never downloads weights)")
    return file


def _checkpoint(path: str, what: str) -> Any:
    """A local `.pt` file through Ultralytics' own loader; never a download."""
    file = _local_file(path, what)
    from ultralytics.nn.tasks import load_checkpoint

    try:
        model, _ = load_checkpoint(str(file))
    except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint is one line
        raise UsageError(f"{what} {path}: not an Ultralytics checkpoint ({type(exc).__name__}: {exc})") from None
    return model


def _yaml(name: str) -> str:
    """A yaml Ultralytics resolves locally: an existing file, or one packaged with it."""
    if _is_remote(name):
        raise UsageError(f"--model ultralytics:{name}: a URL; yoloprof never downloads (give a local yaml or .pt)")
    if Path(name).expanduser().is_file():
        return str(Path(name).expanduser())
    from ultralytics.nn.tasks import yaml_model_load

    try:
        yaml_model_load(name)
    except Exception:  # noqa: BLE001 - Ultralytics raises FileNotFoundError and others
        raise UsageError(f"--model ultralytics:{name}: no such model yaml (a file, or one packaged with "
                         "Ultralytics such as yolov8n.yaml, yolo11n.yaml)") from None
    return name


def _max_stride(name: str) -> int:
    """The largest stride of the model's detection head: 64 for the P6 models, else 32."""
    stem = Path(str(name)).stem
    return 64 if "-p6" in stem or any(stem.startswith(f"yolov{d}") and stem[len(f"yolov{d}") + 1:] == "6"
                                      for d in (5, 8)) else 32


class UltralyticsAdapter:
    """Ultralytics' detection models with their own loss, letterbox and NMS."""

    sizes = None  # the scale letter is in the yaml's name (yolov8n.yaml)

    def check(self, ref: ModelRef) -> None:
        """A yaml that resolves (a file, or packaged with Ultralytics) or a local .pt file."""
        name = str(ref.name)
        if name.endswith(".pt"):
            _local_file(name, f"--model ultralytics:{name}")
        elif name.endswith(YAML_SUFFIXES):
            _yaml(name)
        else:
            raise UsageError(f"--model ultralytics:{name}: expected a model yaml (yolov8n.yaml) or a .pt file")

    def build(self, ref: ModelRef) -> Any:
        import torch

        name = str(ref.name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(ref.seed)
            if name.endswith(".pt"):
                model = _checkpoint(name, f"--model ultralytics:{name}")
            elif name.endswith(YAML_SUFFIXES):
                from ultralytics.nn.tasks import DetectionModel

                try:
                    model = DetectionModel(_yaml(name), nc=ref.num_classes, verbose=False, **dict(ref.kwargs))
                except UsageError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a yaml Ultralytics cannot build
                    raise UsageError(f"--model ultralytics:{name}: Ultralytics cannot build it "
                                     f"({type(exc).__name__}: {exc})") from None
            else:
                raise UsageError(f"--model ultralytics:{name}: expected a model yaml (yolov8n.yaml) or a .pt file")
        if ref.weights and ref.weights != "none":
            model.load(_checkpoint(ref.weights, "--weights"), verbose=False)
        model.args = _hyperparameters()  # the trainer's hyperparameters, as its loss reads them
        model.criterion = None
        for name, p in model.named_parameters():  # as BaseTrainer: all trainable, the DFL layer frozen
            p.requires_grad_(not any(frozen in name for frozen in FROZEN))
        return model.float().train()

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        stride = _max_stride(str(ref.name))
        size = -(-imgsz // stride) * stride
        note = None if size == imgsz else (f"--imgsz {imgsz}: Ultralytics runs {ref.name} at {size} (a multiple of "
                                           f"its stride {stride})")
        return InputSize(size, note)

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        """The trainer's `preprocess_batch`: tensors to the device, the images / 255 there."""
        import torch

        img = images.to(device, non_blocking=True)
        img = img.float() / 255 if img.dtype == torch.uint8 else img
        t = targets.to(device, non_blocking=True)
        return img, {"img": img, "batch_idx": t[:, 0], "cls": t[:, 1:2], "bboxes": t[:, 2:6]}

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        """BaseTrainer's optimizer, clipping, EMA and accumulation (workloads/recipe_ultralytics.py)."""
        from yoloprof.workloads.recipe_ultralytics import recipe

        return recipe(model, inputs)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        def forward_loss(m: Any, inputs: Any, batch: Any) -> tuple[Any, dict[str, Any]]:
            total, items = m.loss(batch, m(inputs))  # DetectionModel.loss: its criterion, built once
            parts = dict(items) if isinstance(items, dict) else {
                n: v for n, v in zip(("box", "cls", "dfl"), items.detach().flatten().tolist())}
            return total.sum(), parts
        return forward_loss

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        import numpy as np
        import torch
        from ultralytics.data.augment import LetterBox

        from yoloprof.workloads.pipeline import decode

        box = LetterBox((imgsz, imgsz), auto=False, stride=int(max(model.stride)))
        arrays = [np.asarray(decode(item)) for item in images]
        shapes = [a.shape[:2] for a in arrays]
        boxed: list[Any] = [box(image=a) for a in arrays]  # LetterBox(image=...) returns the image
        batch = torch.from_numpy(np.stack(boxed)).to(device)
        x = batch.permute(0, 3, 1, 2).contiguous().float().div_(255)
        return x, (tuple(x.shape[2:]), shapes)  # meta: the network input's (h, w), each original's

    def forward(self, model: Any, inputs: Any) -> Any:
        return model(inputs)

    def export_network(self, model: Any) -> ExportForm:
        return ExportForm(_export_mode_network(model))

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        from ultralytics.utils import nms, ops

        input_hw, shapes = meta
        dets = nms.non_max_suppression(raw, conf, iou, None, False, max_det=max_det, nc=0,
                                       end2end=getattr(model, "end2end", False))
        for d, shape in zip(dets, shapes):
            d[:, :4] = ops.scale_boxes(input_hw, d[:, :4], shape)
        return dets


def _export_mode_network(model: Any) -> Any:
    """The model as a module whose call runs its heads in export mode (restored after each call:
    the eager model the capture also runs is unchanged)."""
    import torch
    from ultralytics.nn.modules.head import Detect, RTDETRDecoder

    class ExportMode(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner
            self.heads = [m for m in inner.modules() if isinstance(m, (Detect, RTDETRDecoder))]

        def forward(self, x: Any) -> Any:
            before = [h.export for h in self.heads]
            for head in self.heads:
                head.export = True
            try:
                return self.inner(x)
            finally:
                for head, was in zip(self.heads, before):
                    head.export = was

    return ExportMode(model)


ADAPTER = UltralyticsAdapter()
