"""The LibreYOLO family: `--model libreyolo:yolo9 --size t` (sweeps `model=libreyolo
model.family=yolo9 size=t`): any family LibreYOLO registers (`yolo9`, `yolo9_e2e`, `yolox`, ...),
at any size that family has (`c` included), built as `LibreYOLO9._from_scratch(size=...)` builds it.

LibreYOLO keeps a model as a wrapper (`BaseModel`: pre-processing, post-processing, trainer) around
the `nn.Module` it trains (`wrapper.model`). The capture times that module; the wrapper rides on it
as `module._yoloprof_wrapper` for the pre- and post-process stages. Its pieces, where they live:
- build: the registered class's `_from_scratch(size, nb_classes, device="cpu", seed)` (LibreYOLO's
  own seeded scratch build; nothing downloaded); `--weights FILE` through the public factory
  `libreyolo.LibreYOLO(FILE, size, nb_classes)`, a local file only;
- training (the YOLOv9 families, whose trainer's step is `model(imgs, targets=targets)`, its
  `YOLO9Trainer.on_forward`): images float in [0, 1], targets `[B, max_labels, 5]` (class, x1, y1,
  x2, y2 normalised, padding rows class -1) as its `YOLO9TrainTransform` hands them over, the loss
  `outputs["total_loss"]` as its trainer backpropagates, with the PGI auxiliary branch on as
  `LibreYOLO9.train()` has it, and its trainer's optimizer and EMA (workloads/recipe_libreyolo.py).
  Other families' trainers feed other
  target formats: training them is refused with one line (their inference works);
- inference: its `_preprocess` per image (letterbox to `imgsz`, its own pad placement), the
  module's forward, its `_postprocess` per image (decode + NMS, boxes in original pixels): these
  are LibreYOLO's private methods, the same ones its `predict` calls; no public API splits them.
- `imgsz`: rounded up to the family's `IMGSZ_STRIDE` as LibreYOLO rounds (a note says so).
- inference runtimes: the module itself is the export form (no `export_network`): its output dict
  (predictions, raw outputs, features) is flattened to tensors for the runtime and rebuilt in the
  same structure (capturing/runtimes/flat.py) for `_postprocess`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import ForwardLoss, InputSize, ModelRef, RecipeInputs, TrainRecipe

WRAPPER = "_yoloprof_wrapper"  # the attribute of the module that holds LibreYOLO's wrapper
# families whose trainer feeds `model(imgs, targets=[B, max_labels, 5] class + normalised xyxy)`
YOLO9_TARGETS = ("yolo9", "yolo9_e2e", "yolo9_p2")
DEFAULT_STRIDE = 32


def _classes() -> dict[str, Any]:
    """family -> its registered model class (LibreYOLO's own registry)."""
    import libreyolo.models  # noqa: F401 - registers every family
    from libreyolo.models.base.model import BaseModel

    return {cls.FAMILY: cls for cls in BaseModel._registry if cls.FAMILY}


def _class_of(family: str) -> Any:
    classes = _classes()
    if family not in classes:
        import difflib

        close = difflib.get_close_matches(family, list(classes), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UsageError(f"--model libreyolo:{family}: LibreYOLO has no such family{hint}")
    return classes[family]


def _sizes(cls: Any) -> list[str]:
    sizes = (cls.TASK_INPUT_SIZES or {}).get(cls.DEFAULT_TASK, cls.INPUT_SIZES) if getattr(
        cls, "TASK_INPUT_SIZES", None) else cls.INPUT_SIZES
    return list(sizes)


def wrapper_of(model: Any) -> Any:
    wrapper = getattr(model, WRAPPER, None)
    if wrapper is None:
        raise UsageError("this module was not built by the libreyolo family (no LibreYOLO wrapper)")
    return wrapper


class LibreYOLOAdapter:
    """LibreYOLO's families with their own pre-processing, loss and post-processing."""

    @property
    def sizes(self) -> tuple[str, ...]:
        return tuple(sorted({s for cls in _classes().values() for s in _sizes(cls)}))

    def check(self, ref: ModelRef) -> None:
        """The registered class of a family LibreYOLO knows, at a size it has."""
        family = str(ref.name)
        cls = _class_of(family)
        valid = _sizes(cls)
        if ref.size not in valid:
            raise UsageError(f"--size {ref.size}: LibreYOLO {family} has sizes {', '.join(valid)}")

    def build(self, ref: ModelRef) -> Any:
        family = str(ref.name)
        self.check(ref)
        cls = _class_of(family)
        import torch

        with torch.random.fork_rng(devices=[]):
            if ref.weights and ref.weights != "none":
                wrapper = self._from_checkpoint(ref, family)
            else:
                try:
                    wrapper = cls._from_scratch(size=ref.size, nb_classes=ref.num_classes, device="cpu", seed=ref.seed,
                                                **dict(ref.kwargs))
                except (TypeError, ValueError) as exc:
                    raise UsageError(f"--model libreyolo:{family}: {exc}") from None
        module = wrapper.model
        object.__setattr__(module, WRAPPER, wrapper)  # a plain attribute: not a submodule, not in state_dict
        return module.train()

    @staticmethod
    def _from_checkpoint(ref: ModelRef, family: str) -> Any:
        path = Path(ref.weights).expanduser()
        if not path.is_file():
            raise UsageError(f"--weights {ref.weights}: no such file (yoloprof never downloads weights)")
        from libreyolo import LibreYOLO

        try:
            wrapper = LibreYOLO(str(path), size=ref.size, nb_classes=ref.num_classes, device="cpu")
        except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint is one line
            raise UsageError(f"--weights {ref.weights}: not a LibreYOLO checkpoint ({type(exc).__name__}: {exc})") from None
        if getattr(wrapper, "FAMILY", family) != family:
            raise UsageError(f"--weights {ref.weights}: a LibreYOLO {wrapper.FAMILY} checkpoint, not {family}")
        return wrapper

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        stride = getattr(_class_of(str(ref.name)), "IMGSZ_STRIDE", None) or DEFAULT_STRIDE
        size = -(-imgsz // stride) * stride
        note = None if size == imgsz else (f"--imgsz {imgsz}: LibreYOLO runs {ref.name} at {size} (rounded up to "
                                           f"a multiple of {stride})")
        return InputSize(size, note)

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        """The loader's batch as the YOLOv9 trainer hands it to the model (see the module doc)."""
        import torch

        family = wrapper_of(model).FAMILY
        if family not in YOLO9_TARGETS:
            raise UsageError(f"--model libreyolo:{family}: training is supported for the YOLOv9 families "
                             f"({', '.join(YOLO9_TARGETS)}), whose trainer's targets yoloprof can build; "
                             "profile this family's inference (yoloprof infer)")
        imgs = images.to(device, non_blocking=True)
        imgs = imgs.float().div_(255.0) if imgs.dtype == torch.uint8 else imgs
        b = images.shape[0]
        idx = targets[:, 0].long()
        counts = torch.bincount(idx, minlength=b) if len(idx) else torch.zeros(b, dtype=torch.long)
        padded = torch.zeros(b, max(int(counts.max()) if len(idx) else 0, 1), 5)
        padded[..., 0] = -1
        c, half = targets[:, 2:4], targets[:, 4:6] / 2
        rows = torch.cat((targets[:, 1:2], (c - half).clamp(0, 1), (c + half).clamp(0, 1)), 1)  # as its transform clips
        order = torch.argsort(idx, stable=True)
        slot = torch.arange(len(idx)) - torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts)
        padded[idx[order], slot] = rows[order]
        return imgs, padded.to(device, non_blocking=True)

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        """Its trainer's PGI branch, optimizer, clipping, EMA (workloads/recipe_libreyolo.py)."""
        from yoloprof.workloads.recipe_libreyolo import recipe

        return recipe(model, wrapper_of(model), inputs)

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        def forward_loss(m: Any, inputs: Any, targets: Any) -> tuple[Any, dict[str, Any]]:
            out = m(inputs, targets=targets)
            parts = {k: v.detach() for k, v in out.items() if k in ("box", "cls", "dfl") and hasattr(v, "detach")}
            return out["total_loss"], parts
        return forward_loss

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        import torch

        from yoloprof.workloads.pipeline import decode

        wrapper = wrapper_of(model)
        done = [wrapper._preprocess(decode(item), color_format="rgb", input_size=imgsz) for item in images]
        x = torch.cat([d[0] for d in done]).to(device, non_blocking=True)
        return x, [(d[2], d[3], imgsz) for d in done]  # (original (w, h), ratio, input size) per image

    def forward(self, model: Any, inputs: Any) -> Any:
        return model(inputs)

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        wrapper = wrapper_of(model)
        return [wrapper._postprocess(_one(raw, i), conf, iou, size, max_det=max_det, ratio=ratio, input_size=imgsz)
                for i, (size, ratio, imgsz) in enumerate(meta)]


def _one(output: Any, i: int) -> Any:
    """Image i of a batched output: every tensor sliced at the batch dimension, as LibreYOLO's
    post-process takes one image's output at a time."""
    import torch

    if isinstance(output, torch.Tensor):
        return output[i:i + 1] if output.dim() else output
    if isinstance(output, dict):
        return {k: _one(v, i) for k, v in output.items()}
    if isinstance(output, (list, tuple)):
        return type(output)(_one(v, i) for v in output)
    return output


ADAPTER = LibreYOLOAdapter()
