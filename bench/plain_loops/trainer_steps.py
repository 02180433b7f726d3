"""Each family's OWN trainer driving one training iteration by hand (no yoloprof in what is timed),
for bench/bench_trainer_step.py: the trainer object of the library, its optimizer, clipping and EMA
built by its own methods, and its step's calls in the order its loop makes them.

- LibreYOLO: `LibreYOLO9._from_scratch(size, nb_classes, seed=0)`, the PGI branch attached as
  `LibreYOLO9.train()` attaches it (`enable_aux(weight=config.aux_weight)`), a real `YOLO9Trainer`
  (it builds without a dataset), its `_setup_optimizer()` and `ModelEMA(model, ema_decay, tau)`
  as its `setup()` makes them; per iteration (`_train_one_epoch`, no GradScaler on the CPU):
  `_forward_train(imgs, targets)["total_loss"]`, `zero_grad`, `backward`, `_clip_gradients()`,
  `optimizer.step()`, `ema_model.update(model)`;
- Ultralytics: `DetectionModel(cfg, nc)` seeded with 0, a `DetectionTrainer` object holding the
  trainer's default arguments, with its `build_optimizer` (optimizer=auto, weight decay scaled as
  `_build_train_pipeline` scales it), its (disabled on the CPU) GradScaler and `ModelEMA`; per
  iteration: `loss, items = model(batch)`, `scaler.scale(loss.sum()).backward()`, then the
  trainer's own `optimizer_step()` (unscale, clip_grad_norm_ max 10, step, update, zero_grad, EMA)
  every iteration, as yoloprof's timed step runs it.

Phases: forward (forward + loss), backward (+ the trainer's clipping where it clips inside its
backward block), optimizer (step, zero_grad; Ultralytics' whole `optimizer_step`), ema (LibreYOLO).
The batch is handed over ready, on the device, in the family's training format.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

NUM_CLASSES = 80


def libreyolo_phases(size: str, imgs: Any, targets: Any) -> dict[str, Callable[[], None]]:
    import libreyolo.models  # noqa: F401 - registers the families
    from libreyolo.models.yolo9.model import LibreYOLO9
    from libreyolo.models.yolo9.trainer import YOLO9Trainer
    from libreyolo.training.ema import ModelEMA

    wrapper = LibreYOLO9._from_scratch(size=size, nb_classes=NUM_CLASSES, device="cpu", seed=0)
    batch, imgsz = imgs.shape[0], imgs.shape[-1]
    trainer = YOLO9Trainer(model=wrapper.model, wrapper_model=wrapper, size=size, num_classes=NUM_CLASSES,
                           data="unused.yaml", batch=batch, imgsz=imgsz, device="cpu", workers=0)
    torch.manual_seed(0)
    wrapper.model.enable_aux(weight=trainer.config.aux_weight)  # LibreYOLO9.train(), before the trainer's setup
    model = trainer.model.train()
    trainer.optimizer = trainer._setup_optimizer()
    trainer.ema_model = ModelEMA(model, decay=trainer.config.ema_decay, tau=getattr(trainer.config, "ema_tau", 2000))
    state: dict[str, Any] = {}

    def forward() -> None:
        state["loss"] = trainer._forward_train(imgs, targets)["total_loss"]

    def backward() -> None:
        state.pop("loss").backward()
        trainer._clip_gradients()

    def optimizer() -> None:
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()  # the trainer zeroes before its next backward: the same work

    def ema() -> None:
        trainer.ema_model.update(model)

    return {"forward": forward, "backward": backward, "optimizer": optimizer, "ema": ema}


def ultralytics_phases(cfg: str, imgs: Any, data: dict[str, Any], images: int) -> dict[str, Callable[[], None]]:
    from ultralytics.cfg import get_cfg
    from ultralytics.models.yolo.detect import DetectionTrainer
    from ultralytics.nn.tasks import DetectionModel
    from ultralytics.utils import DEFAULT_CFG
    from ultralytics.utils.torch_utils import ModelEMA

    torch.manual_seed(0)
    model = DetectionModel(cfg, nc=NUM_CLASSES, verbose=False)
    trainer = object.__new__(DetectionTrainer)  # its __init__ wants a dataset; its methods read these
    trainer.args, trainer.data, trainer.device = get_cfg(DEFAULT_CFG), {"nc": NUM_CLASSES}, imgs.device
    model.args = trainer.args
    for name, p in model.named_parameters():  # _setup_train: the DFL layer frozen
        p.requires_grad_(".dfl" not in name)
    trainer.model = model.train()
    batch = imgs.shape[0]
    accumulate = max(round(trainer.args.nbs / batch), 1)
    decay = trainer.args.weight_decay * batch * accumulate / trainer.args.nbs
    iterations = math.ceil(images / max(batch, trainer.args.nbs)) * trainer.args.epochs
    trainer.optimizer = trainer.build_optimizer(model, name=trainer.args.optimizer, lr=trainer.args.lr0,
                                                momentum=trainer.args.momentum, decay=decay, iterations=iterations)
    trainer.scaler = torch.amp.GradScaler("cuda", enabled=False)  # _setup_train: amp is off on the CPU
    trainer.ema = ModelEMA(model)
    state: dict[str, Any] = {}

    def forward() -> None:
        loss, _ = trainer.model(data)
        state["loss"] = loss.sum()

    def backward() -> None:
        trainer.scaler.scale(state.pop("loss")).backward()

    def optimizer() -> None:
        trainer.optimizer_step()

    return {"forward": forward, "backward": backward, "optimizer": optimizer}
