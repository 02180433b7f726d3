"""Turn one composed job config into the `CaptureSettings` the capture runs.

A sweep job must be exactly the capture `yoloprof run`/`infer` would have run with the same values,
so nothing is translated by hand: each setting is read from the place its schema field names
(`Spec.hydra`: top level, `capture.*`, `data.*`), a setting that its mode does not have takes the
mode's default (as the command line does), and `CaptureSettings.validate` judges the values. Only the
model and data groups are interpreted here: the built-in factory becomes `model="yolo"`, any other
`_target_` is passed on as an importable factory with its keyword arguments.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from yoloprof.config.axes import hashed_values, hydra_key, pooled
from yoloprof.config.capture_settings import FIELDS, CaptureSettings, default_of, spec_of, unknown_key_message
from yoloprof.errors import UsageError

BUILTIN_TARGET = "yoloprof.workloads.models.build_model"
# Keys of the built-in model entry that are interpolated from top-level settings, not kwargs.
_BUILTIN_KEYS = ("name", "size", "num_classes", "seed", "weights")
# Nodes whose keys are open: a user model's factory and a user task take any keyword arguments;
# hydra is Hydra's.
_OPEN_NODES = ("model", "hydra", "task")


def _plain(value: Any) -> Any:
    """Enum members (from the structured schema) as their names; containers recursively."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def node_dict(node: Any, *, resolve: bool = True) -> dict[str, Any]:
    """A mapping node as a plain dict. `OmegaConf.to_container` is typed as any container (or a
    string or None), so each caller would otherwise narrow it; a list node here is a schema fault."""
    value = OmegaConf.to_container(node, resolve=resolve)
    if not isinstance(value, dict):
        raise TypeError(f"expected a mapping config node, got {type(value).__name__}")
    return cast("dict[str, Any]", value)  # yoloprof's config keys are strings (schema and YAML)


def node_list(node: Any, *, resolve: bool = True) -> list[Any]:
    """A sequence node as a plain list (see node_dict)."""
    value = OmegaConf.to_container(node, resolve=resolve)
    if not isinstance(value, list):
        raise TypeError(f"expected a sequence config node, got {type(value).__name__}")
    return value


# The key of a model family's config entry (conf/model/ultralytics.yaml: `kind: ultralytics`).
FAMILY_KEY = "kind"
# Keys of any model entry that are hooks, not the model's keyword arguments.
_HOOK_KEYS = ("loss", "postprocess")


def _family_fields(model: dict[str, Any]) -> dict[str, Any]:
    """`kind: <family>` entries: `model=ultralytics model.cfg=yolov8n.yaml` -> the setting
    `ultralytics:yolov8n.yaml` (the family's name key: config/model_families.py), its other keys
    the builder's keyword arguments."""
    from yoloprof.config.model_families import FAMILIES, NAMED, SEPARATOR

    family = model.pop(FAMILY_KEY)
    if family not in NAMED:
        raise UsageError(f"model.{FAMILY_KEY}={family}: unknown model family; families: {', '.join(NAMED)}")
    key = FAMILIES[family].name_key or "name"
    name = model.pop(key, None)
    if not name:
        raise UsageError(f"model={family}: name the model with model.{key}=..., e.g. "
                         f"model.{key}={FAMILIES[family].example}")
    hooks = {k: model.pop(k, None) for k in _HOOK_KEYS}
    return {"model": f"{family}{SEPARATOR}{name}", "model_kwargs": model, **hooks}


def model_fields(cfg: DictConfig) -> dict[str, Any]:
    """The CaptureSettings fields that come from the `model` group."""
    model = _plain(OmegaConf.to_container(cfg.model, resolve=True))
    if FAMILY_KEY in model and "_target_" not in model:
        return _family_fields(model)
    target = model.pop("_target_", None)
    if not target:
        raise UsageError("model config has no _target_ (an importable factory of an nn.Module)")
    if target == BUILTIN_TARGET:
        return {"model": model.get("name") or "yolo",
                "model_kwargs": {k: v for k, v in model.items() if k not in _BUILTIN_KEYS}}
    if model.get("name") == "yolo":
        # `model._target_=pkg.Factory` on the default (built-in) entry: its keys are not the
        # factory's arguments; pass only what the user added (`+model.width=32`)
        model = {k: v for k, v in model.items() if k not in _BUILTIN_KEYS}
    hooks = {k: model.pop(k, None) for k in _HOOK_KEYS}
    return {"model": target, "model_kwargs": model, **hooks}


def job_values(cfg: DictConfig) -> dict[str, Any]:
    """The job config as plain values, without the `hydra` node (its `${hydra:}` interpolations
    only resolve inside a running job)."""
    return {str(key): _plain(OmegaConf.to_container(cfg[key], resolve=True))
            if OmegaConf.is_config(cfg[key]) else _plain(cfg[key])
            for key in cfg.keys() if key != "hydra"}


def check_known_keys(values: dict[str, Any]) -> None:
    """Refuse keys the schema does not have (`+bacth=4`, a sweep file's typo), naming the closest
    known key: Hydra's `+` adds a key even to a closed struct, and the capture would ignore it."""
    from yoloprof.config.schema import known_keys

    known = known_keys()
    unknown = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            dotted = prefix + str(key)
            if not prefix and key in _OPEN_NODES:
                continue
            if isinstance(value, dict) and any(k.startswith(dotted + ".") for k in known):
                walk(value, dotted + ".")
            elif dotted not in known:
                unknown.append(dotted)
    walk(values, "")
    if unknown:
        raise UsageError("unknown key(s) " + ", ".join(unknown_key_message(k, known) for k in sorted(unknown))
                         + "; extra keyword arguments of a model factory go under model.*")


def _read(values: dict[str, Any], name: str) -> Any:
    """A setting's value at the place its schema field names."""
    where = spec_of(name).hydra
    path = [name] if where == "top" else [where, name] if where == "capture" else str(where).split(".")
    node: Any = values
    for part in path:
        node = node[part]
    return node


def data_source(data: dict[str, Any], mode: str) -> str | None:
    """`data=synthetic` is generated images for training and the bundled sample for inference.
    Any other data group needs `data.path`: without it the job would measure the default data
    while labelled `data=yolo`, so it is refused before any job runs, naming the key."""
    if data.get("name") == "synthetic":
        return "synthetic" if mode == "train" else None
    path = data.get("path")
    if path in (None, "", "???"):
        raise UsageError(f"data={data.get('name')} needs data.path (a data.yaml or dataset folder for "
                         "training, an image or folder for inference), e.g. data.path=datasets/coco8/data.yaml")
    return path


MODE_WORDS = {"train": "training", "infer": "inference"}
COUNTS = {"train": "capture.steps", "infer": "capture.runs"}  # a mode's measured iterations


def ignored_settings(values: dict[str, Any]) -> list[str]:
    """Warnings for the keys a job sets that its mode does not use (`capture.steps=8` in an
    inference sweep, whose count is `capture.runs`): the capture would silently ignore them."""
    mode = values["mode"]["name"]
    out = []
    for name in FIELDS:
        spec = spec_of(name)
        if spec.hydra is None or mode in spec.modes:
            continue
        try:
            value = _read(values, name)
        except (KeyError, TypeError):
            continue
        if value != default_of(name, mode):
            key, word = hydra_key(name, spec), MODE_WORDS[mode]
            instead = f"; {COUNTS[mode]} counts what it measures" if key in COUNTS.values() else ""
            out.append(f"{key}={value} is ignored in {'an' if word[0] in 'aeiou' else 'a'} {word} sweep (it "
                       f"applies to {', '.join(MODE_WORDS[m] for m in spec.modes)}){instead}")
    return out


def settings_from_cfg(cfg: DictConfig) -> CaptureSettings:
    """CaptureSettings for one job config (validated: raises UsageError naming the setting)."""
    values = job_values(cfg)
    check_known_keys(values)
    mode = values["mode"]["name"]
    fields: dict[str, Any] = {}
    for name in FIELDS:
        spec = spec_of(name)
        if spec.hydra is None:
            continue
        if mode not in spec.modes and spec.per_mode is not None:
            fields[name] = spec.per_mode[mode]  # e.g. steps in infer: as the command line has it
        else:
            fields[name] = _read(values, name)
    fields["data"] = data_source(values["data"], mode)
    fields.update(model_fields(cfg))
    return CaptureSettings(mode=mode, **fields).validate()


def _digest(values: dict[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _hashed(settings: CaptureSettings, task: dict[str, Any] | None) -> dict[str, Any]:
    """The resolved settings, so `device=0` and `device=cuda:0`, or `precision=auto` and its
    effective dtype, are one capture; plus a user task's target and arguments when one runs. A
    setting added later (`Spec.hashed="unless_default"`) enters only away from its default."""
    values = hashed_values(settings.resolved())
    if task is not None:  # a user-task job: its target and arguments decide what runs
        values["task"] = task
    return values


def config_hash(settings: CaptureSettings, task: dict[str, Any] | None = None) -> str:
    """Resume key: equal hashes mean the same capture (trial included)."""
    return _digest(_hashed(settings, task))


def group_hash(settings: CaptureSettings, task: dict[str, Any] | None = None) -> str:
    """Pooling key: trials of one configuration share it (the pooled settings, trial and seed,
    left out: `Spec.pooled`)."""
    values = _hashed(settings, task)
    for key in pooled(type(settings)):
        values.pop(key, None)
    return _digest(values)


def check_target(target: str) -> None:
    """Fail before the first job when a model `_target_` does not import, naming it and why, in
    the CLI's words (`config.targets.locate`)."""
    from yoloprof.config.targets import locate

    try:
        locate(target)
    except UsageError as exc:
        reason = str(exc).removeprefix(f"cannot import {target!r}: ")
        raise UsageError(f"model _target_ {target!r} does not import: {reason}") from None
