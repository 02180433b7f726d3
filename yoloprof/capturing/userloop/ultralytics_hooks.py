"""`yoloprof.profile_trainer`: profile a user's own, unchanged Ultralytics `model.train(...)`.

    model = YOLO("yolov8n.yaml")
    prof = yoloprof.profile_trainer(model, "runs/prof", warmup=5, steps=20)
    model.train(data="data.yaml", epochs=1)
    prof.result  # what profile.json holds (also prof.path)

It is `yoloprof.profile(...)` (docs/userloop.md) driven by Ultralytics' public callbacks (registered
with `add_callback` on the `YOLO` model or on a trainer; `model.train` takes no callbacks argument).
One iteration of the profile is one batch of the trainer's loop, cut into phases:

- "dataload": from the end of one batch (`on_train_batch_end`) to the start of the next
  (`on_train_batch_start`), i.e. the wait on the DataLoader (mosaic and other augmentation, workers,
  collation); its share of the step is how much of training waits for data.
- "forward_backward": from `on_train_batch_start` to the optimizer step: the batch to the device
  and /255, forward, loss, backward (Ultralytics has no callback between them).
- "optimizer": the trainer's public `optimizer_step` (unscale, gradient clipping, step, zero_grad,
  EMA update), timed by wrapping that method on the trainer instance.

What is left of the iteration (logging, progress bar) is in no phase. The first batch's data wait
comes before `on_train_batch_start` with nothing to mark its start, so the first iteration has no
"dataload" (it is warm-up anyway). The profile opens at `on_train_start` and is written at
`on_train_end`; a training that raises writes nothing (as a `yoloprof.profile` block; the
trainer's `teardown` callback closes it). With
`stop_when_done=True` the trainer stops (its `stop` flag) once every window is measured.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, ContextManager

from typing_extensions import Unpack

from yoloprof.capturing.userloop.loop import Profile
from yoloprof.capturing.userloop.loop_support import DEFAULT_OUT
from yoloprof.errors import UsageError

if TYPE_CHECKING:
    from yoloprof.capturing.userloop.public_types import LoopOptions

__all__ = ["DATALOAD", "EVENTS", "TrainerProfile", "profile_trainer"]

DATALOAD, FORWARD_BACKWARD, OPTIMIZER = "dataload", "forward_backward", "optimizer"
# Ultralytics callback event -> the TrainerProfile method it calls
EVENTS = {
    "on_train_start": "train_start",
    "on_train_batch_start": "batch_start",
    "on_train_batch_end": "batch_end",
    "on_train_end": "train_end",
    "teardown": "teardown",  # run by the trainer in a `finally`, after on_train_end
}


class TrainerProfile:
    """The callbacks of one profiled training; `result` / `path` once training has ended."""

    def __init__(self, out_dir: str | os.PathLike[str], stop_when_done: bool, options: dict[str, Any]) -> None:
        self.out_dir, self.stop_when_done, self.options = out_dir, stop_when_done, options
        self.prof: Profile | None = None
        self._open: tuple[str, ContextManager[Any]] | None = None
        self.result: dict[str, Any] | None = None
        self.path: Any = None

    @property
    def callbacks(self) -> dict[str, Any]:
        """Ultralytics event -> callback (each takes the trainer)."""
        return {event: getattr(self, method) for event, method in EVENTS.items()}

    def _measuring(self) -> bool:
        return self.prof is not None and not self.prof.done

    def _begin(self, name: str) -> None:
        self._end()
        if self.prof is not None and not self.prof.done:
            cm = self.prof.phase(name)
            cm.__enter__()
            self._open = (name, cm)

    def _end(self, name: str | None = None) -> None:
        if self._open is not None and (name is None or self._open[0] == name):
            _, cm = self._open
            self._open = None
            cm.__exit__(None, None, None)

    def train_start(self, trainer: Any) -> None:
        self.prof = Profile(self.out_dir, model=trainer.model, batch_size=getattr(trainer, "batch_size", None),
                            **self.options)
        self.prof.__enter__()
        step = trainer.optimizer_step

        @functools.wraps(step)
        def optimizer_step(*args: Any, **kwargs: Any) -> Any:
            self._end(FORWARD_BACKWARD)
            if not self._measuring():
                return step(*args, **kwargs)
            self._begin(OPTIMIZER)
            try:
                return step(*args, **kwargs)
            finally:
                self._end(OPTIMIZER)

        trainer.optimizer_step = optimizer_step  # an instance attribute: the class is untouched

    def batch_start(self, trainer: Any) -> None:
        self._end(DATALOAD)
        self._begin(FORWARD_BACKWARD)

    def batch_end(self, trainer: Any) -> None:
        self._end()
        if self.prof is None or self.prof.done:
            return
        self.prof.step()
        if self.prof.done:
            if self.stop_when_done:
                trainer.stop = True
            return
        self._begin(DATALOAD)

    def train_end(self, trainer: Any) -> None:
        self._end()
        if self.prof is not None:
            prof, self.prof = self.prof, None
            prof.__exit__(None, None, None)
            self.result, self.path = prof.result, prof.path

    def teardown(self, trainer: Any) -> None:
        """A training that raised before on_train_end: leave the profile as a failed block does
        (nothing written; the heap unfrozen)."""
        self._end()
        if self.prof is not None:
            prof, self.prof = self.prof, None
            prof.__exit__(RuntimeError, RuntimeError("the training raised"), None)


def profile_trainer(model_or_trainer: object, out_dir: str | os.PathLike[str] = DEFAULT_OUT, *,
                    stop_when_done: bool = False, **options: Unpack[LoopOptions]) -> TrainerProfile:
    """Register the profiling callbacks on an Ultralytics `YOLO` model (or trainer) before its
    `.train(...)`; `options` are `yoloprof.profile`'s (warmup, steps, trace_steps, ...)."""
    add = getattr(model_or_trainer, "add_callback", None)
    if add is None:
        raise UsageError("yoloprof.profile_trainer: give an Ultralytics YOLO model or trainer "
                         f"(got {type(model_or_trainer).__name__}, which has no add_callback)")
    for key in ("model", "kind", "batch_size"):
        if key in options:
            raise UsageError(f"yoloprof.profile_trainer: {key}= is taken from the trainer; leave it out")
    hooks = TrainerProfile(out_dir, stop_when_done, dict(options))
    for event, callback in hooks.callbacks.items():
        add(event, callback)
    return hooks
