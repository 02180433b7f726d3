"""LibreYOLO's training step as its trainer runs it (libreyolo/training/trainer.py `BaseTrainer`,
the family's subclass from the wrapper's `_trainer_class()`, its config class's defaults), built
with LibreYOLO's own code:

- training-time configuration: `LibreYOLO9.train()` turns the PGI auxiliary branch on
  (`model.enable_aux(weight=config.aux_weight)`, 0.25 by default) for a `LibreYOLO9Model` before
  the trainer builds its optimizer and EMA; the module's forward then adds the auxiliary losses;
- the optimizer: the trainer's `_setup_optimizer` itself (called on a namespace holding the model,
  the family's config defaults and its lr): BN weights without decay, other weights with
  `weight_decay`, biases without, SGD(momentum 0.937, nesterov) for YOLOv9;
- clipping: `_clip_gradients`' call (`clip_grad_norm_` over `_gradient_clip_parameters`) where the config's `clip_max_norm` is above 0 (none for YOLOv9),
  after the GradScaler's `unscale_` as the trainer does;
- EMA: `libreyolo.training.ema.ModelEMA(model, decay=ema_decay, tau=ema_tau)` where `ema` is on;
- accumulation: the trainer's `_accum_steps` (`round(nbs / batch)`, 1 where `nbs` is unset, the
  default).

The seeded auxiliary branch: `enable_aux` initialises it from torch's global generator; yoloprof
seeds it with the capture's seed, so that every trial gets the same weights.
"""

from __future__ import annotations

import logging
import sys
from types import SimpleNamespace
from typing import Any

from yoloprof.workloads.family_api import RecipeInputs, TrainRecipe
from yoloprof.workloads.train_recipe import describe, quiet

AUX_MODEL = "LibreYOLO9Model"  # the class `LibreYOLO9.train()` attaches the PGI branch to (by its name, as it checks)
DEFAULT_EMA_TAU = 2000  # BaseTrainer.setup: getattr(config, "ema_tau", 2000)


def trainer_config(wrapper: Any, batch: int) -> tuple[Any, Any]:
    """(trainer class, its config with the family's defaults at this batch)."""
    trainer_cls = wrapper._trainer_class()
    config = trainer_cls._config_class()()
    config.batch = batch
    return trainer_cls, config


def enable_aux(model: Any, config: Any, seed: int) -> float:
    """The PGI branch on as `LibreYOLO9.train()` turns it on; its weight (0 = the family has none)."""
    import torch

    weight = float(getattr(config, "aux_weight", 0.0) or 0.0)
    if type(model).__name__ != AUX_MODEL or weight <= 0:
        return 0.0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.enable_aux(weight=weight)
    model.train()
    return weight


def _logger_of(trainer_cls: Any) -> logging.Logger:
    """The logger of the module defining the `_setup_optimizer` the trainer class runs (it logs
    its groups at INFO)."""
    module = sys.modules.get(trainer_cls._setup_optimizer.__module__)
    return getattr(module, "logger", None) or logging.getLogger("libreyolo")


def recipe(model: Any, wrapper: Any, inputs: RecipeInputs) -> TrainRecipe:
    """The recipe around `model`, the module of LibreYOLO's `wrapper`."""
    from libreyolo.training.ema import ModelEMA
    from torch.nn.utils import clip_grad_norm_

    trainer_cls, config = trainer_config(wrapper, inputs.batch)
    aux = enable_aux(model, config, inputs.seed)
    trainer = SimpleNamespace(model=model, config=config, effective_lr=config.lr0, optimizer=None)
    with quiet(_logger_of(trainer_cls)):
        optimizer = trainer_cls._setup_optimizer(trainer)
    trainer.optimizer = optimizer
    max_norm = trainer_cls._get_clip_max_norm(trainer)
    clip = (lambda: clip_grad_norm_(trainer_cls._gradient_clip_parameters(trainer), max_norm)) if max_norm > 0 else None
    ema = ModelEMA(model, decay=config.ema_decay, tau=getattr(config, "ema_tau", DEFAULT_EMA_TAU)) if config.ema else None
    every = trainer_cls._accum_steps.fget(trainer)
    about = describe(f"libreyolo {trainer_cls.__name__} ({type(config).__name__} defaults)", optimizer,
                     clip_max_norm=max_norm if clip else None,
                     ema=f"{ModelEMA.__module__}.ModelEMA" if ema is not None else None,
                     aux_weight=aux)
    return TrainRecipe(optimizer=optimizer, clip=clip, ema=ema,
                       ema_update=(lambda: ema.update(model)) if ema is not None else None,
                       optimizer_every=every, about=about)
