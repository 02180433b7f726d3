"""The model families' adapters: which adapter serves the model a setting names (the table of
names, packages and extras is config/model_families.py), and the user's hooks over any of them.

A model setting names its family: `yolo` (the built-in detector), `ultralytics:yolov8n.yaml`,
`libreyolo:yolo9`, `torchvision:resnet18`; anything else is a user's factory by dotted path
(`mymodels.Net`), or, from Python, a callable or an `nn.Module`. Sweeps spell the same with the
config group `model=<family>` and the family's name key (`model.cfg=`, `model.family=`,
`model.name=`: `name_key` below). A family's package is an optional extra of yoloprof; choosing a
family whose package is missing is one line naming the extra to install.

Two hooks work for every family (docs/workloads.md "Hooks"):
- `loss`: a dotted path to a loss factory. It is called with `model=<the module>` where its
  signature takes a `model` keyword (or **kwargs), else with no argument, and returns
  `fn(outputs, targets) -> loss | (loss, parts)`; `targets` are in the family's training format.
- `postprocess`: a dotted path to `fn(outputs, **kw)`, given of `meta`, `conf`, `iou`, `max_det`
  the keywords its signature takes; it replaces the family's post-process stage.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from yoloprof.config.model_families import BUILTIN, FACTORY, FAMILIES, family_of, split_model, stay_offline
from yoloprof.errors import UsageError
from yoloprof.workloads.family_api import Adapter, ForwardLoss, InputSize, ModelRef, RecipeInputs, TrainRecipe

__all__ = ["BUILTIN", "FACTORY", "FAMILIES", "Workload", "adapter_of", "batch_norm_checked", "check_installed",
           "check_model", "family_of",
           "input_size", "model_ref", "size_of", "split_model", "user_loss", "user_postprocess", "workload"]


def check_installed(family: str) -> None:
    """A one-line UsageError naming the extra when the family's package is not installed."""
    row = FAMILIES[family]
    if row.package is not None and importlib.util.find_spec(row.package) is None:
        raise UsageError(f"model family {family!r} needs the package {row.package!r}, which is not installed: "
                         f"pip install 'yoloprof[{row.extra}]'")


def adapter_of(family: str) -> Adapter:
    """The family's adapter (its package imported now, not before)."""
    check_installed(family)
    module, _, attr = FAMILIES[family].adapter.partition(":")
    stay_offline(FAMILIES[family].package or module)
    with environment_kept():
        package = FAMILIES[family].package
        if package:
            importlib.import_module(package)  # its import-time settings, then taken back
        return getattr(importlib.import_module(module), attr)


@contextlib.contextmanager
def environment_kept() -> Iterator[None]:
    """The process environment as it was, after a family's package is imported: Ultralytics sets
    OMP_NUM_THREADS=1, TORCH_CPP_LOG_LEVEL=ERROR and KINETO_LOG_LEVEL=5 on import, which every
    process started later (sweep workers, `compare --run-a` captures) would inherit, with other
    threads and torch's warnings hidden. What the import set is taken back; the offline switches
    (`stay_offline`) were set before it and stay."""
    import os

    before = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]
        for key, value in before.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


def model_ref(settings: Any) -> ModelRef:
    """What the capture settings say about the model, for its family's adapter; `imgsz` is the size
    the model runs at (`Adapter.input_size`), None where it ignores it."""
    import dataclasses

    ref = _asked(settings)
    return dataclasses.replace(ref, imgsz=adapter_of(ref.family).input_size(ref, settings.imgsz).imgsz)


def _asked(settings: Any) -> ModelRef:
    """The settings' model as asked, before its family says what `imgsz` becomes."""
    family, name = split_model(settings.model)
    return ModelRef(family=family, name=name, size=settings.size, num_classes=settings.num_classes,
                    seed=settings.seed, weights=settings.weights, kwargs=dict(settings.model_kwargs or {}))


def size_of(settings: Any) -> str | None:
    """The size a profile records: the family's size where it has sizes, else None (a torchvision
    builder or an Ultralytics yaml has its scale in its name; a user's factory has none)."""
    family = family_of(settings.model)
    if family == BUILTIN:
        return str(settings.size)
    if family == FACTORY:
        return None
    sizes = getattr(adapter_of(family), "sizes", None)
    return None if sizes is None else str(settings.size)


def input_size(settings: Any) -> InputSize:
    """What `imgsz` is to the chosen model (rounded up, followed by its transform, or ignored)."""
    ref = _asked(settings)
    return adapter_of(ref.family).input_size(ref, settings.imgsz)


def _takes(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _as_pair(value: Any, target: str) -> tuple[Any, dict[str, Any]]:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
        return value
    numel = getattr(value, "numel", None)
    if numel is not None and numel() == 1:
        return value.reshape(()), {}
    raise UsageError(f"loss {target!r} must return a scalar tensor or (scalar, dict), got {type(value).__name__}")


def user_loss(model: Any, target: str) -> ForwardLoss:
    """The forward + loss of a user's loss factory `target` (see the module docstring)."""
    from yoloprof.workloads.models import import_target

    factory = import_target(target)
    if not callable(factory):
        raise UsageError(f"--loss {target}: not callable")
    try:
        fn = factory(model=model) if _takes(factory, "model") else factory()
    except Exception as exc:  # noqa: BLE001 - user code: report, do not crash with a traceback
        raise UsageError(f"--loss {target}: calling the loss factory failed: {type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise UsageError(f"--loss {target}: the factory returned a {type(fn).__name__}, not a callable")
    return lambda m, inputs, targets: _as_pair(fn(m(inputs), targets), target)


POSTPROCESS_KEYWORDS = ("meta", "conf", "iou", "max_det")


def user_postprocess(target: str) -> Callable[..., Any]:
    """`(model, raw, meta, conf, iou, max_det) -> fn(raw, **the keywords fn takes)`."""
    from yoloprof.workloads.models import import_target

    fn = import_target(target)
    if not callable(fn):
        raise UsageError(f"--postprocess {target}: not callable")
    taken = [k for k in POSTPROCESS_KEYWORDS if _takes(fn, k)]

    def post(model: Any, raw: Any, meta: Any, conf: float, iou: float, max_det: int) -> Any:
        given = {"meta": meta, "conf": conf, "iou": iou, "max_det": max_det}
        return fn(raw, **{k: given[k] for k in taken})
    return post


@dataclass
class Workload:
    """The chosen model's pieces for one capture: its adapter and reference, with the user's loss
    and post-process hooks in place of the family's where given."""

    adapter: Adapter
    ref: ModelRef
    loss: str | None = None
    postprocess_target: str | None = None

    def build(self) -> Any:
        return self.adapter.build(self.ref)

    def train_recipe(self, model: Any, inputs: RecipeInputs) -> TrainRecipe:
        return self.adapter.train_recipe(model, inputs)

    def forward_loss(self, model: Any) -> ForwardLoss:
        fn = user_loss(model, self.loss) if self.loss else self.adapter.make_loss(model, None)
        return batch_norm_checked(fn, self.ref)

    def postprocess(self) -> Callable[..., Any]:
        return user_postprocess(self.postprocess_target) if self.postprocess_target else self.adapter.postprocess


BATCH_NORM_ONE = "Expected more than 1 value per channel when training"  # torch's batch_norm refusal


def batch_norm_checked(fn: ForwardLoss, ref: ModelRef) -> ForwardLoss:
    """`fn`, with torch's refusal of a batch norm over one value per channel (a batch of 1 reaching
    a 1x1 feature map: SSDlite's extra layers, a classifier's pooled head) as one UsageError line
    naming `--batch >= 2`, for every family. It surfaces from the first (warm-up) step, before
    anything is written."""
    label = ref.family if ref.family in (BUILTIN, FACTORY) else f"{ref.family}:{ref.name}"

    def step(model: Any, inputs: Any, targets: Any) -> tuple[Any, dict[str, Any]]:
        try:
            return fn(model, inputs, targets)
        except ValueError as exc:
            if BATCH_NORM_ONE not in str(exc):
                raise
            shape = str(exc).rpartition("input size ")[2].replace("torch.Size(", "").rstrip(")") or "?"
            raise UsageError(f"training {label} needs --batch >= 2: at --batch 1 one of its batch norm layers "
                             f"gets a single value per channel (input {shape}), which torch refuses") from None
    return step


def check_model(settings: Any, strict_size: bool = True) -> None:
    """The model's name, and its size, as its family knows them: before any data is read or any
    job of a sweep runs (no model is built). A family without sizes (its scale is in the model's
    name: yolov8s.yaml, resnet50) ignores `size`: the command line (`strict_size`) refuses one
    other than the default; a sweep, where one `size=t` may serve several families' jobs, refuses
    only a size that no family has (`size=z`)."""
    from yoloprof.config.capture_settings import default_of, flag_of

    family = family_of(settings.model)
    if family in (BUILTIN, FACTORY):
        return
    adapter = adapter_of(family)
    size = settings.size
    if getattr(adapter, "sizes", None) is None and size != default_of("size", settings.mode) and \
            (strict_size or size not in known_sizes()):
        given, drop = (f"{flag_of('size')} {size}", flag_of("size")) if strict_size else (f"size={size}", "it")
        raise UsageError(f"{given}: {family} models carry their size in their name "
                         f"(e.g. {FAMILIES[family].example}); drop {drop}")
    adapter.check(_asked(settings))


def known_sizes() -> set[str]:
    """Every size a family with sizes has (the built-in's, and each installed sized family's)."""
    from yoloprof.config.capture_settings import SIZES
    from yoloprof.config.model_families import SIZED

    out = set(SIZES)
    for family in SIZED:
        if family != BUILTIN and FAMILIES[family].package and \
                importlib.util.find_spec(str(FAMILIES[family].package)) is not None:
            out.update(getattr(adapter_of(family), "sizes", None) or ())
    return out


def workload(settings: Any) -> Workload:
    """The workload of these capture settings (the family's package imported now)."""
    ref = model_ref(settings)
    return Workload(adapter_of(ref.family), ref, loss=settings.loss,
                    postprocess_target=getattr(settings, "postprocess", None))
