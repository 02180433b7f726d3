"""Training recipes that are not a library trainer's: the built-in detector's and a user factory's
documented SGD, torchvision's reference scripts' SGD, and how any recipe is described in a profile.

The families with a trainer build theirs with that trainer's own code (recipe_ultralytics.py,
recipe_libreyolo.py); docs/workloads.md "The trainer's step" says per family what is whose.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from yoloprof.workloads.family_api import RecipeInputs, TrainRecipe


@dataclass(frozen=True)
class SgdRecipe:
    """An SGD without clipping, EMA or accumulation. `lr` None = the capture's `--lr`."""

    source: str
    lr: float | None
    momentum: float
    nesterov: bool
    weight_decay: float


# The built-in detector and a user's factory (the `lr` setting's help says so): no trainer of theirs.
BUILTIN_SGD = SgdRecipe("yoloprof's documented step: SGD(lr=--lr, momentum=0.9, nesterov=True)",
                        lr=None, momentum=0.9, nesterov=True, weight_decay=0.0)
# torchvision's references (references/classification/train.py and references/detection/train.py
# defaults: --opt sgd --momentum 0.9 --wd 1e-4, lr 0.1 and 0.02; no clipping, no EMA by default).
TORCHVISION_CLASSIFIER_SGD = SgdRecipe("torchvision references/classification/train.py defaults",
                                       lr=0.1, momentum=0.9, nesterov=False, weight_decay=1e-4)
TORCHVISION_DETECTOR_SGD = SgdRecipe("torchvision references/detection/train.py defaults",
                                     lr=0.02, momentum=0.9, nesterov=False, weight_decay=1e-4)


def sgd_recipe(model: Any, inputs: RecipeInputs, sgd: SgdRecipe) -> TrainRecipe:
    """One parameter group of the trainable parameters, as the recipe's script builds it."""
    import torch

    lr = inputs.lr if sgd.lr is None else sgd.lr
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=lr, momentum=sgd.momentum, nesterov=sgd.nesterov,
                                weight_decay=sgd.weight_decay)
    return TrainRecipe(optimizer=optimizer, about=describe(sgd.source, optimizer))


@contextlib.contextmanager
def quiet(log: logging.Logger) -> Iterator[None]:
    """`log` at WARNING for the block: a trainer's optimizer builder logs its choice at INFO, and a
    capture's output is yoloprof's."""
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


# the hyperparameters a group row shows, where the optimizer has them
GROUP_KEYS = ("lr", "momentum", "betas", "weight_decay", "nesterov")


def describe(source: str, optimizer: Any, clip_max_norm: float | None = None, ema: str | None = None,
             **extra: Any) -> dict[str, Any]:
    """The profile's `train_recipe` section (schema: profile.schema.json): where the recipe comes
    from, the optimizer's class and its parameter groups (number of tensors and hyperparameters),
    the clipping norm (None = no clipping) and the EMA's class (None = no EMA); the accumulation
    (`TrainRecipe.optimizer_every`) is added with the step's figures (capturing/passes/recipe_figures.py)."""
    groups = []
    for group in optimizer.param_groups:
        row: dict[str, Any] = {"params": len(group["params"])}
        if "param_group" in group:  # Ultralytics names its groups
            row["name"] = group["param_group"]
        for key in GROUP_KEYS:
            if key in group:
                value = group[key]
                row[key] = list(value) if isinstance(value, tuple) else value
        groups.append(row)
    return {"source": source, "optimizer": type(optimizer).__name__, "param_groups": groups,
            "clip_max_norm": clip_max_norm, "ema": ema, **extra}
