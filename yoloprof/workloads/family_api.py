"""The contract of a model family (DESIGN.md section 3, "Model families").

A family (the built-in detector, a user's factory, Ultralytics, LibreYOLO, torchvision) is one row
of `workloads/families.py`'s table; the row names the module and attribute of its `Adapter`,
imported only when that family is chosen. Capture code asks the adapter and never branches on a
family's name: the training step is `to_device` -> `forward_loss` -> backward -> [clip] ->
optimizer -> [ema] as the family's trainer runs it (`train_recipe`: its training-time heads, its
optimizer with its parameter groups, clipping, EMA, gradient accumulation), the inference call
`preprocess` -> `forward` -> `postprocess`, each timed as its phase or stage.

Data reaches a family in one format, the loader's: `(images uint8 [B, 3, H, W], targets float
[M, 6])`, target rows (index of the image in the batch, class, cx, cy, w, h) normalised to [0, 1].
`to_device` turns that into what the family's loss wants (an Ultralytics batch dict, torchvision's
list of target dicts in pixels, ...). Inference inputs are image sources (paths, bytes or PIL
images): decoding belongs to the timed pre-process, as in the built-in pipeline.

No adapter may download anything: models are built from their configs with seeded random weights,
or loaded from a checkpoint file of that family (`ModelRef.weights`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# forward + loss of one training step: (model, inputs, targets) -> (scalar loss, {part: float tensor})
ForwardLoss = Callable[[Any, Any, Any], tuple[Any, dict[str, Any]]]


@dataclass(frozen=True)
class ModelRef:
    """What the settings say about the model, in the family's own words."""

    family: str  # the table's key: "yolo", "factory", "ultralytics", "libreyolo", "torchvision"
    name: Any  # the family's model: an Ultralytics yaml or .pt, a LibreYOLO family ("yolo9"), a torchvision builder
    size: str | None = None  # a family's size letter where it has sizes (LibreYOLO "t", built-in "n"), else None
    num_classes: int = 80
    seed: int = 0
    weights: str = "none"  # "none" = seeded random init; else a checkpoint file of this family
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # --model-arg KEY=VALUE / extra model.* keys
    # the size the trial runs at (`Adapter.input_size(...).imgsz`), for families whose build depends
    # on it (torchvision's detector transforms, ViT position embeddings); None = the model's default
    imgsz: int | None = None


@dataclass(frozen=True)
class RecipeInputs:
    """What a family's trainer would size its recipe by: the capture's batch, the number of images
    it trains on (Ultralytics' `optimizer=auto` counts iterations from it), `--lr` (the built-in
    detector's and a user factory's SGD; trainers with their own default lr keep theirs)."""

    batch: int
    images: int
    lr: float
    seed: int = 0
    num_classes: int = 80


@dataclass
class TrainRecipe:
    """One family's training step beyond forward + loss + backward, as its trainer runs it
    (docs/workloads.md "The trainer's step"). Each part present is a phase of the step: `clip`
    (the GradScaler's unscale, where there is one, then `clip()`), `optimizer` (step, scaler update,
    zero_grad) and `ema` (`ema_update()`); a part that is None is no phase at all.

    `optimizer` stays a plain `torch.optim.Optimizer`, so that a setting can rebuild it with other
    keyword arguments (`type(opt)(opt.param_groups, **{**opt.defaults, **kw})`). `optimizer_every`
    is the trainer's gradient accumulation: its optimizer (and EMA) run once every that many
    iterations; the timed step runs them every iteration and the profile amortises them
    (capturing/passes/recipe_figures.py). `about` describes the recipe for the profile
    (`train_recipe` section: source, optimizer, groups, clipping, EMA)."""

    optimizer: Any
    clip: Callable[[], Any] | None = None
    ema: Any = None  # the library's EMA object, or None
    ema_update: Callable[[], Any] | None = None
    optimizer_every: int = 1
    about: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InputSize:
    """What `imgsz` means to a model: the size it really runs at, or None where it ignores it (then
    `imgsz` is refused as a sweep axis). `note` is a warning for the profile (e.g. rounded up)."""

    imgsz: int | None
    note: str | None = None


def _same(inputs: Any) -> Any:
    return inputs


def _as_is(outputs: Any, inputs: Any) -> Any:
    return outputs


@dataclass(frozen=True)
class ExportForm:
    """A family's network as an inference runtime takes it (`Adapter.export_network`, optional;
    without it the model itself is the export form): `network` maps one float tensor to tensors
    (a tensor, or tuples, lists and dicts of them); `tensor(inputs)` is that tensor taken from
    what `preprocess` returned; `raw(outputs, inputs)` rebuilds from the network's outputs what
    `postprocess` reads as `raw` (the adapter's `forward` output)."""

    network: Any
    tensor: Callable[[Any], Any] = _same
    raw: Callable[[Any, Any], Any] = _as_is


class Adapter(Protocol):
    """One family's pieces. Every method may raise `yoloprof.errors.UsageError` (one line, exit 2)."""

    sizes: tuple[str, ...] | None  # valid `size` values; None = the family has no sizes

    def check(self, ref: ModelRef) -> None:
        """The model's name (and size, where the family has sizes) are ones the family knows:
        cheap (no model built), for the pre-flight of a capture or a sweep; UsageError if not."""

    def build(self, ref: ModelRef) -> Any:
        """The `torch.nn.Module` (seeded, on the CPU, in train mode); never downloads."""

    def input_size(self, ref: ModelRef, imgsz: int) -> InputSize:
        """What `imgsz` becomes for this model (rounded up to its stride, followed by its
        transform, or ignored)."""

    def to_device(self, model: Any, images: Any, targets: Any, device: Any) -> tuple[Any, Any]:
        """Loader batch -> (inputs, targets) on `device` in the family's training format."""

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        """The family's trainer's step around `model` (on its device, in train mode): its
        training-time configuration applied to `model` (LibreYOLO's PGI branch), its optimizer,
        clipping, EMA and accumulation, built with the library's own code where it has one."""

    def make_loss(self, model: Any, loss: str | None = None) -> ForwardLoss:
        """The training step's forward + loss, with the family's own loss (or the user's loss
        factory `loss`, a dotted path called with the model where it accepts one)."""

    def preprocess(self, model: Any, images: Sequence[Any], imgsz: int, device: Any) -> tuple[Any, Any]:
        """Image sources -> (model input on `device`, meta for the post-process)."""

    def forward(self, model: Any, inputs: Any) -> Any:
        """The network alone (no pre-process, no NMS)."""

    def postprocess(self, model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        """Raw outputs -> detections (NMS included) or the outputs as they are for non-detectors."""

    # optional: `export_network(model) -> ExportForm` (the network an inference runtime exports and
    # runs; may raise errors.RuntimeNotApplicable); an adapter without it hands over the model
