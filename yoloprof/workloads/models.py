"""Model and loss factories: the built-in detector, or any importable `nn.Module` factory.

A user names a factory by dotted path (`mymodels.Net`, `pkg.sub.build(...)` with kwargs), as a
Hydra `_target_` does. The current working directory is put on `sys.path` first so a module that
lives in the user's project imports without installing it. Losses and post-processes belong to
the model families (workloads/families.py, family_builtin.py).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from yoloprof.config.model_families import stay_offline
from yoloprof.config.targets import missing_attribute
from yoloprof.errors import UsageError
from yoloprof.workloads.yolo import SIZE_SCALES, build_yolo

BUILTIN = "yolo"
LossFn = Callable[[Any, torch.Tensor], tuple[torch.Tensor, dict]]


def is_builtin(name: Any) -> bool:
    """True for the built-in detector (which gets DetectionLoss and the NMS postprocess)."""
    return isinstance(name, str) and name == BUILTIN


def _factory_name(factory: Any) -> str:
    return getattr(factory, "__qualname__", type(factory).__name__)


def import_target(target: str) -> Any:
    """Resolve 'pkg.module.attr' (the cwd on sys.path); UsageError naming the target on failure."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    importlib.invalidate_caches()  # a module written after start-up (tests, notebooks) is found
    module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise UsageError(f"model/loss target {target!r} must be a dotted path like 'mymodule.Factory'")
    stay_offline(module_name)  # `ultralytics.YOLO` as a factory: its import stays offline too
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure inside the user's module is a usage problem
        raise UsageError(f"cannot import {target!r}: {type(exc).__name__}: {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"cannot import {target!r}: {missing_attribute(module_name, module, attr)}") from None


def _call_factory(target: str, kwargs: Mapping[str, Any]) -> Any:
    factory = import_target(target)
    if not callable(factory):
        raise UsageError(f"{target!r} is not callable")
    try:
        return factory(**dict(kwargs))
    except Exception as exc:  # noqa: BLE001 - user code: report, do not crash with a traceback
        raise UsageError(f"calling {target}(**{dict(kwargs)!r}) failed: {type(exc).__name__}: {exc}") from None


def host_copy(module: nn.Module) -> nn.Module:
    """A copy of a user's module with every parameter and buffer on the CPU, made one tensor at a
    time: a plain deepcopy would make the second copy on the module's own device (twice the
    weights there, out of memory for a large model, and on the wrong GPU for `--device cuda:1`).
    The capture then moves the copy to its device. Tied tensors stay tied (each is copied once,
    through deepcopy's memo); gradients are not copied."""
    import copy

    memo: dict[int, Any] = {}
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        if id(tensor) in memo:
            continue
        on_host = tensor.detach().to("cpu", copy=True)
        memo[id(tensor)] = nn.Parameter(on_host, requires_grad=tensor.requires_grad) \
            if isinstance(tensor, nn.Parameter) else on_host
    return copy.deepcopy(module, memo)


@contextlib.contextmanager
def offloaded(model: Any) -> Iterator[str | None]:
    """A user's module that sits on one GPU waits on the CPU while the capture runs, so the device
    holds only the capture's copy; it is moved back afterwards, also after an error or Ctrl-C
    (`Module.to` moves each tensor's data in place: parameters keep their identity, an optimizer
    built over them still holds them). Yields the note for the profile, None when nothing moved."""
    if not isinstance(model, nn.Module):
        yield None
        return
    devices = {t.device for t in itertools.chain(model.parameters(), model.buffers())}
    if len(devices) != 1 or next(iter(devices)).type != "cuda":
        yield None  # on the CPU already, or spread over devices (left as it is)
        return
    home = next(iter(devices))
    model.to("cpu")
    try:
        yield (f"the model passed in sat on {home}: it waited on the CPU during the capture (so the device "
               "held only the capture's copy of its weights) and is back on it")
    finally:
        model.to(home)


def build_model(name: Any = BUILTIN, size: str = "n", num_classes: int = 80, seed: int = 0, weights: str = "none",
                kwargs: Mapping[str, Any] | None = None) -> nn.Module:
    """The built-in detector of `size`, the user factory `name` (a dotted path or a callable)
    called with `kwargs`, or a copy of an nn.Module instance (a copy: every trial starts from the
    same weights and the caller's model is never trained or moved by the capture).

    Initialisation is seeded (and the caller's RNG left untouched) so repeated captures start from
    identical weights; `weights` other than "none" then loads a state dict over them.
    """
    if isinstance(name, nn.Module):
        model = host_copy(name)
    elif callable(name):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            try:
                model = name(**dict(kwargs or {}))
            except Exception as exc:  # noqa: BLE001 - user code: report, do not crash with a traceback
                raise UsageError(f"calling {_factory_name(name)}(**{dict(kwargs or {})!r}) failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        if not isinstance(model, nn.Module):
            raise UsageError(f"{_factory_name(name)!r} returned {type(model).__name__}, not a torch.nn.Module")
    elif is_builtin(name):
        if size not in SIZE_SCALES:
            raise UsageError(f"unknown size {size!r}; valid: {', '.join(SIZE_SCALES)}")
        model = build_yolo(size, num_classes, seed)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = _call_factory(name, kwargs or {})
        if not isinstance(model, nn.Module):
            raise UsageError(f"{name!r} returned {type(model).__name__}, not a torch.nn.Module")
    model = unwrapped(model)
    if weights and weights != "none":
        load_weights(model, weights)
    return model


def unwrapped(model: nn.Module) -> nn.Module:
    """The network inside a wrapper whose `train` is not `nn.Module.train`: Ultralytics' `YOLO`
    (an nn.Module whose `train()` starts a whole training run, downloading its dataset) holds its
    network as `.model`; `model.train(False)` must never start one. Any other module as it is."""
    inner = getattr(model, "model", None)
    if type(model).train is not nn.Module.train and isinstance(inner, nn.Module):
        return inner
    return model


def _state_dict_from(obj: Any) -> dict[str, torch.Tensor] | None:
    """A flat {name: tensor} dict, also unwrapping the common {'state_dict': ...}/{'model': ...}."""
    for candidate in (obj, *(obj.get(k) for k in ("state_dict", "model") if isinstance(obj, dict))):
        if isinstance(candidate, dict) and candidate and all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in candidate.items()):
            return candidate
    return None


def load_weights(model: nn.Module, path: str | Path) -> None:
    """Load a state dict (weights_only=True: no code runs) strictly; UsageError on any mismatch,
    naming the first key that is missing, unexpected or of another shape."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UsageError(f"weights file {str(path)!r} does not exist")
    try:
        obj = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - pickles with code, corrupt zips, ...: all "not loadable"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"weights {path}: not a state dict ({first})") from None
    state = _state_dict_from(obj)
    if state is None:
        raise UsageError(f"weights {path}: not a state dict (expected a mapping of parameter names to tensors)")
    expected = model.state_dict()
    for key, tensor in expected.items():
        if key not in state:
            raise UsageError(f"weights {path}: missing key {key!r} (and possibly more)")
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise UsageError(f"weights {path}: key {key!r} has shape {list(state[key].shape)}, "
                             f"model expects {list(tensor.shape)}")
    extra = [k for k in state if k not in expected]
    if extra:
        raise UsageError(f"weights {path}: unexpected key {extra[0]!r} (and {len(extra) - 1} more)")
    model.load_state_dict(state, strict=True)


def _float_tensors(outputs: Any) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs] if outputs.is_floating_point() else []
    if isinstance(outputs, Mapping):
        return [t for v in outputs.values() for t in _float_tensors(v)]
    if isinstance(outputs, (list, tuple)):
        return [t for v in outputs for t in _float_tensors(v)]
    return []


def generic_loss(outputs: Any) -> torch.Tensor:
    """A scalar from any output structure: the sum of the means of its float tensors.

    Not a meaningful objective, but its backward touches every output, so the backward pass a
    profile shows is the model's full backward.
    """
    tensors = _float_tensors(outputs)
    if not tensors:
        raise UsageError("the model's outputs contain no floating-point tensor to build a training loss from")
    return torch.stack([t.float().mean() for t in tensors]).sum()
