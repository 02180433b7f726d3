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
"dataload" (it is warm-up anyway). The profile opens at `on_train_start`, which prints one line:
the iterations the profile needs (loop_plan.py), the training's own and its optimizer cadence;
it is written at `on_train_end`; a training that raises writes nothing (as a `yoloprof.profile`
block; the trainer's `teardown` callback closes it). With `stop_when_done=True` the trainer stops
(its `stop` flag) once every window is measured (and, where the timed steps ran no optimizer
step, once one more has been timed: ultralytics_accumulate.py).

No callback ever raises into the trainer: a failure of the profiler is one warning, the profiling
stops and the training goes on; a training shorter than the profile gets a partial profile (or
none) with a warning naming what is missing (loop.py). The user's own exceptions and
KeyboardInterrupt go on untouched.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from typing_extensions import Unpack

from yoloprof.capturing.userloop.loop import Profile
from yoloprof.capturing.userloop.loop_output import warn_user
from yoloprof.capturing.userloop.loop_support import DEFAULT_OUT
from yoloprof.capturing.userloop.ultralytics_accumulate import OPTIMIZER, Accumulation
from yoloprof.errors import UsageError

if TYPE_CHECKING:
    from yoloprof.capturing.userloop.public_types import LoopOptions

__all__ = ["DATALOAD", "EVENTS", "TrainerProfile", "profile_trainer"]

DATALOAD, FORWARD_BACKWARD = "dataload", "forward_backward"
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
        self.accumulation: Accumulation | None = None
        self._await_optimizer = False  # every window done, no optimizer call measured yet
        self.failure: str | None = None  # why profiling stopped, if it failed
        self.result: dict[str, Any] | None = None
        self.path: Any = None

    @property
    def callbacks(self) -> dict[str, Any]:
        """Ultralytics event -> callback (each takes the trainer and never raises into it)."""
        return {event: self._guarded(event, getattr(self, method)) for event, method in EVENTS.items()}

    def _guarded(self, event: str, method: Callable[[Any], None]) -> Callable[[Any], None]:
        @functools.wraps(method)
        def callback(trainer: Any) -> None:
            self._safely(event, lambda: method(trainer))  # a profiler's callback never raises into the trainer

        return callback

    def _fail(self, why: str) -> None:
        """Stop profiling for the rest of this training: one warning, nothing written."""
        prof, self.prof, self._open, self._await_optimizer = self.prof, None, None, False
        if prof is not None:  # closes the windows, writes nothing; never raises (Profile.__exit__)
            prof.__exit__(RuntimeError, RuntimeError(why), None)
        self.failure = why
        warn_user(f"yoloprof.profile_trainer: profiling stopped, no profile written ({why}); the training goes on")

    def _safely(self, what: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Exception as error:  # noqa: BLE001 - a profiler never raises into the trainer
            self._fail(f"{what}: {type(error).__name__}: {error}")
            return None

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
        prof = Profile(self.out_dir, model=trainer.model, batch_size=getattr(trainer, "batch_size", None),
                       **self.options)
        self.accumulation = Accumulation.of(trainer)
        prof.plan_note = training_line(trainer, self.accumulation, prof.plan.needed)
        prof.__enter__()  # a failure here leaves nothing open (Profile.__enter__)
        self.prof = prof
        self._wrap_optimizer_step(trainer)

    def _wrap_optimizer_step(self, trainer: Any) -> None:
        step = trainer.optimizer_step

        @functools.wraps(step)
        def optimizer_step(*args: Any, **kwargs: Any) -> Any:
            timing = self._safely("optimizer_step", lambda: self._optimizer_begins(trainer))
            try:
                return step(*args, **kwargs)  # the trainer's own: its exceptions go on
            finally:
                if timing:
                    self._safely("optimizer_step", lambda: self._optimizer_ends(trainer, timing))

        trainer.optimizer_step = optimizer_step  # an instance attribute: the class is untouched

    def _optimizer_begins(self, trainer: Any) -> str | None:
        """Open the optimizer's timing: the phase inside the windows, a clock of its own for the
        one call awaited after them; None when not timed."""
        self._end(FORWARD_BACKWARD)
        prof, acc = self.prof, self.accumulation
        if prof is None or acc is None:
            return None
        if not prof.done:
            acc.in_force[prof.iterations + 1] = acc.period(trainer)  # the iteration under way
            self._begin(OPTIMIZER)
            return "phase"
        if self._await_optimizer:
            acc.begin_after(prof.device)
            return "after"
        return None

    def _optimizer_ends(self, trainer: Any, timing: str) -> None:
        if timing == "phase":
            self._end(OPTIMIZER)
        elif self.prof is not None and self.accumulation is not None:
            self.accumulation.end_after(self.prof.device, self.accumulation.period(trainer))
            self._await_optimizer = False

    def batch_start(self, trainer: Any) -> None:
        self._end(DATALOAD)
        self._begin(FORWARD_BACKWARD)

    def batch_end(self, trainer: Any) -> None:
        self._end()
        prof = self.prof
        if prof is None:
            return
        if not prof.done:
            prof.step()
            if not prof.done:
                self._begin(DATALOAD)
                return
            self._await_optimizer = not prof.measured_phase(OPTIMIZER)[0]  # time one call after the windows
        if self.stop_when_done and not self._await_optimizer:
            trainer.stop = True

    def train_end(self, trainer: Any) -> None:
        self._end()
        if self.prof is not None:
            prof, self.prof = self.prof, None
            try:
                self._note_accumulation(prof)
            except Exception as error:  # noqa: BLE001 - the profile is written all the same
                prof.note(f"the optimizer's accumulation was not measured: {type(error).__name__}: {error}")
            prof.__exit__(None, None, None)  # never raises: a short training gets its warning
            self.result, self.path = prof.result, prof.path

    def _note_accumulation(self, prof: Profile) -> None:
        if self.accumulation is None:
            return
        timed, steps = prof.measured_phase(OPTIMIZER)
        section = self.accumulation.section(timed, steps)
        prof.add_section("accumulation", section)
        for line in self.accumulation.notes(section):
            prof.note(line)

    def teardown(self, trainer: Any) -> None:
        """A training that raised before on_train_end: leave the profile as a failed block does
        (nothing written; the heap unfrozen)."""
        self._end()
        if self.prof is not None:
            prof, self.prof = self.prof, None
            prof.__exit__(RuntimeError, RuntimeError("the training raised"), None)


def training_iterations(trainer: Any) -> int | None:
    """The batches this training will run: batches per epoch x epochs left (None if unknown)."""
    try:
        return len(trainer.train_loader) * max(int(trainer.epochs) - int(getattr(trainer, "start_epoch", 0)), 0)
    except (AttributeError, TypeError, ValueError):
        return None


def training_line(trainer: Any, acc: Accumulation, needed: int) -> str:
    """What `on_train_start` adds to the profile's first line: the training's length against the
    profile's, and the optimizer's cadence."""
    parts = []
    total = training_iterations(trainer)
    if total is not None:
        short = ": too few, the profile will be partial or none" if total < needed else ""
        parts.append(f"this training runs {total} ({trainer.epochs} epoch(s) of {len(trainer.train_loader)} "
                     f"batches){short}")
    if acc.accumulate is not None and acc.accumulate > 1:
        parts.append(f"the optimizer steps once per {acc.accumulate} batches (Ultralytics accumulates: "
                     f"{acc.cause()}): up to {acc.accumulate - 1} more to time one if the timed steps run none")
    return "; ".join(parts)


def profile_trainer(model_or_trainer: object, out_dir: str | os.PathLike[str] = DEFAULT_OUT, *,
                    stop_when_done: bool = False, **options: Unpack[LoopOptions]) -> TrainerProfile:
    """Register the profiling callbacks on an Ultralytics `YOLO` model (or trainer) before its
    `.train(...)`; `options` are `yoloprof.profile`'s (warmup, steps, trace_steps, ..., project).

    The profile needs warmup + steps + trace_steps + 2 + 1 (FLOPs) + module_steps + 1 (modules)
    batches of the training (34 at the defaults), up to warmup_max - warmup more while the step
    times settle, and, where Ultralytics accumulates gradients (one optimizer step per
    round(nbs / batch) batches) and the timed steps ran no optimizer step, up to that many more to
    time one; `on_train_start` prints the count. A shorter training gets a partial profile (or
    none) and a warning; no callback raises into the trainer. Writes profile.json and the trace
    into `out_dir` and the row into the results store `<out_dir>/results` (`project=` another
    folder; False: none), with one printed line saying where."""
    add = getattr(model_or_trainer, "add_callback", None)
    if add is None:
        raise UsageError("yoloprof.profile_trainer: give an Ultralytics YOLO model or trainer "
                         f"(got {type(model_or_trainer).__name__}, which has no add_callback)")
    for key in ("model", "kind", "batch_size"):
        if key in options:
            raise UsageError(f"yoloprof.profile_trainer: {key}= is taken from the trainer; leave it out")
    Profile(out_dir, **options)  # bad options fail here, not inside the training
    hooks = TrainerProfile(out_dir, stop_when_done, dict(options))
    for event, callback in hooks.callbacks.items():
        add(event, callback)
    return hooks
