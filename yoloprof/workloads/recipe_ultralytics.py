"""Ultralytics' training step as its `BaseTrainer` runs it (ultralytics/engine/trainer.py), built
with its own code where that code runs without a dataset:

- accumulation: `accumulate = max(round(nbs / batch), 1)` (nbs 64 in default.yaml): the trainer's
  `optimizer_step` runs once every `accumulate` iterations after its warm-up;
- the optimizer: `BaseTrainer.build_optimizer` itself (called unbound, on a namespace holding the
  trainer's default arguments and the number of classes it reads from the dataset), with the
  trainer's `optimizer=auto` (`iterations = ceil(images / max(batch, nbs)) * epochs`: more than
  10000 picks MuSGD, else AdamW with its lr fit to the number of classes) and its weight decay scaled
  as `_build_train_pipeline` scales it (`weight_decay * batch * accumulate / nbs`);
- `optimizer_step`: the GradScaler's `unscale_`, `clip_grad_norm_(model.parameters(),
  max_norm=10.0)`, `scaler.step`, `scaler.update`, `zero_grad`, then `ModelEMA.update(model)`
  (ultralytics.utils.torch_utils.ModelEMA, the trainer's EMA).

The learning-rate schedule and the warm-up's lr/momentum ramps change numbers, not work: the step
runs at the groups' initial values.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from yoloprof.workloads.family_api import RecipeInputs, TrainRecipe
from yoloprof.workloads.train_recipe import describe, quiet

CLIP_MAX_NORM = 10.0  # BaseTrainer.optimizer_step's max_norm
SOURCE = "ultralytics BaseTrainer (build_optimizer, optimizer_step, ModelEMA)"


def accumulate_of(args: Any, batch: int) -> int:
    """`BaseTrainer._build_train_pipeline`: batches per optimizer step."""
    return max(round(args.nbs / batch), 1)


def weight_decay_of(args: Any, batch: int) -> float:
    """`BaseTrainer._build_train_pipeline`: the weight decay scaled to the nominal batch."""
    return float(args.weight_decay * batch * accumulate_of(args, batch) / args.nbs)


def iterations_of(args: Any, batch: int, images: int) -> int:
    """`BaseTrainer._build_train_pipeline`: what `optimizer=auto` decides by."""
    return math.ceil(images / max(batch, args.nbs)) * args.epochs


def build_optimizer(model: Any, inputs: RecipeInputs, args: Any) -> Any:
    """The optimizer the trainer builds for `model` at this batch and number of images."""
    from ultralytics.engine.trainer import BaseTrainer
    from ultralytics.utils import LOGGER

    trainer: Any = SimpleNamespace(args=args, data={"nc": inputs.num_classes})  # what build_optimizer reads
    with quiet(LOGGER):  # build_optimizer logs its choice at INFO
        return BaseTrainer.build_optimizer(trainer, model, name=args.optimizer, lr=args.lr0, momentum=args.momentum,
                                           decay=weight_decay_of(args, inputs.batch),
                                           iterations=iterations_of(args, inputs.batch, inputs.images))


def recipe(model: Any, inputs: RecipeInputs) -> TrainRecipe:
    import copy

    import torch
    from ultralytics.utils.torch_utils import ModelEMA

    args = copy.copy(model.args)  # the trainer's defaults (family_ultralytics._hyperparameters); auto rewrites them
    optimizer = build_optimizer(model, inputs, args)
    ema = ModelEMA(model)
    params = list(model.parameters())
    every = accumulate_of(args, inputs.batch)
    about = describe(SOURCE, optimizer, clip_max_norm=CLIP_MAX_NORM, ema=f"{ModelEMA.__module__}.ModelEMA",
                     nbs=args.nbs,
                     iterations=iterations_of(args, inputs.batch, inputs.images), choice=args.optimizer)
    return TrainRecipe(optimizer=optimizer,
                       clip=lambda: torch.nn.utils.clip_grad_norm_(params, max_norm=CLIP_MAX_NORM),
                       ema=ema, ema_update=lambda: ema.update(model), optimizer_every=every, about=about)
