"""Turn one composed job config into the `CaptureSettings` the capture runs.

A sweep job must be exactly the capture `yoloprof run`/`infer` would have run with the same values,
so the sweep does not interpret anything itself: it maps keys and lets `CaptureSettings.validate`
judge them. The model group is translated here: the built-in factory becomes `model="yolo"`, any
other `_target_` is passed on as an importable factory with its keyword arguments.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf

from yoloprof.capture.settings import CaptureSettings
from yoloprof.errors import UsageError

BUILTIN_TARGET = "yoloprof.workloads.models.build_model"
# Keys of the built-in model entry that map onto CaptureSettings fields instead of kwargs.
_BUILTIN_KEYS = ("name", "size", "num_classes", "seed", "weights")
# Device strings the capture understands; anything else is a typo we can catch before job 1.
DEVICE_RE = re.compile(r"^(cpu|\d+|cuda(:\d+)?)$")
DEVICE_HELP = "cpu, cuda, cuda:N or N (a CUDA index)"
# What pools trials of one configuration: everything but the trial number and its seed.
_GROUP_EXCLUDE = ("trial", "seed")


def _plain(value: Any) -> Any:
    """Enum members (from the structured schema) as their names; containers recursively."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def model_fields(cfg: DictConfig) -> dict[str, Any]:
    """The CaptureSettings fields that come from the `model` group."""
    model = _plain(OmegaConf.to_container(cfg.model, resolve=True))
    target = model.pop("_target_", None)
    if not target:
        raise UsageError("model config has no _target_ (an importable factory of an nn.Module)")
    if target == BUILTIN_TARGET:
        return {"model": model.get("name") or "yolo", "num_classes": int(model.get("num_classes", 80)),
                "model_kwargs": {k: v for k, v in model.items() if k not in _BUILTIN_KEYS}}
    if model.get("name") == "yolo":
        # `model._target_=pkg.Factory` on the default (built-in) entry: its keys are not the
        # factory's arguments; pass only what the user added (`+model.width=32`)
        model = {k: v for k, v in model.items() if k not in _BUILTIN_KEYS}
    loss = model.pop("loss", None)
    return {"model": target, "model_kwargs": model, "loss": loss}


def job_values(cfg: DictConfig) -> dict[str, Any]:
    """The job config as plain values, without the `hydra` node (its `${hydra:}` interpolations
    only resolve inside a running job)."""
    return {key: _plain(OmegaConf.to_container(cfg[key], resolve=True))
            if OmegaConf.is_config(cfg[key]) else _plain(cfg[key])
            for key in cfg.keys() if key != "hydra"}


def settings_from_cfg(cfg: DictConfig) -> CaptureSettings:
    """CaptureSettings for one job config (validated: raises UsageError naming the setting)."""
    top = job_values(cfg)
    mode, cap, data = top["mode"]["name"], top["capture"], top["data"]
    device = str(top["device"])
    if not DEVICE_RE.match(device):
        raise UsageError(f"invalid device {device!r}; valid: {DEVICE_HELP}")
    source = data.get("path")
    if data.get("name") == "synthetic":
        source = "synthetic" if mode == "train" else None
    fields = dict(
        size=top["size"], weights=str(top["weights"]), data=source, batch=top["batch"],
        imgsz=top["imgsz"], workers=top["workers"], amp=top["amp"], amp_dtype=top["amp_dtype"],
        warmup=cap["warmup"], steps=cap["steps"] if mode == "train" else None,
        runs=cap["runs"] if mode == "infer" else None, repeat=top["repeat"], device=device,
        conf=cap["conf"], iou=cap["iou"], max_det=cap["max_det"], trace=cap["trace"],
        trace_gzip=cap["trace_gzip"], modules=cap["modules"], python_hotspots=cap["python_hotspots"],
        nvtx=cap["nvtx"], synthetic_images=data.get("images"), seed=top["seed"],
        lr=cap["lr"], trial=top["trial"],
    )
    fields.update(model_fields(cfg))
    settings = CaptureSettings(mode=mode, **fields)
    return settings.validate()


def _digest(values: dict[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _hashed(settings: CaptureSettings, task: dict[str, Any] | None) -> dict[str, Any]:
    values = settings.to_dict()
    if task is not None:  # a user-task job: its target and arguments decide what runs
        values["task"] = task
    return values


def config_hash(settings: CaptureSettings, task: dict[str, Any] | None = None) -> str:
    """Resume key: equal hashes mean the same capture (trial included)."""
    return _digest(_hashed(settings, task))


def group_hash(settings: CaptureSettings, task: dict[str, Any] | None = None) -> str:
    """Pooling key: trials of one configuration share it."""
    values = _hashed(settings, task)
    for key in _GROUP_EXCLUDE:
        values.pop(key, None)
    return _digest(values)


def check_target(target: str) -> None:
    """Fail before the first job when a model `_target_` does not import, naming it and why."""
    from hydra._internal.utils import _locate  # hydra.utils.get_object also logs an error

    try:
        _locate(target)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to see
        cause = exc.__cause__ or exc
        raise UsageError(f"model _target_ {target!r} does not import: "
                         f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}") from exc
