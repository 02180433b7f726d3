"""One training step and one inference call, written once and run by both passes.

The timing pass and the trace pass must measure the *same* step, so the step takes a `phase`
context-manager factory: the timing pass passes one that marks the clock when a phase ends, the
trace pass one that opens `record_function("yoloprof/<phase>")`. Nothing else differs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator

PhaseFn = Callable[[str], ContextManager[Any]]

# Every phase a training step can have, in order; a context's own are `TrainContext.phases` (no
# clipping or EMA in its family's recipe: no such phase, never a zero-cost row).
TRAIN_PHASES = ("dataload", "to_device", "forward", "backward", "clip", "optimizer", "ema")
INFER_STAGES = ("preprocess", "forward", "postprocess")


def clock_phases(clock: Any) -> PhaseFn:
    """Phase factory for the timing pass: mark the clock at the end of each phase."""

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        yield
        clock.mark(name)

    return phase


def no_phases() -> PhaseFn:
    """Phase factory that records nothing: FLOP counting and batch-size probing run the same step."""
    return lambda name: contextlib.nullcontext()


def nvtx_phases(inner: PhaseFn) -> PhaseFn:
    """`--nvtx`: an NVTX range around each phase as well as whatever `inner` records."""
    from yoloprof.capturing.extras.nvtx import nvtx_range

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        with nvtx_range(f"yoloprof/{name}"), inner(name):
            yield

    return phase


def profiler_phases() -> PhaseFn:
    import torch

    return lambda name: torch.profiler.record_function(f"yoloprof/{name}")


@dataclass
class TrainContext:
    """Everything one training trial needs; built fresh per trial (fresh model and loader)."""

    model: Any
    optimizer: Any
    # (model, inputs, targets) -> (loss, parts): the family's forward + loss (workloads/family_api.py)
    forward_loss: Callable[..., Any]
    loader: Any
    device: Any  # torch.device
    autocast: Callable[[], ContextManager[Any]]
    scaler: Any = None  # torch.amp.GradScaler for CUDA float16, else None
    # the family's trainer's gradient clipping and EMA update (workloads/family_api.py TrainRecipe), or None
    clip: Callable[[], Any] | None = None
    ema_update: Callable[[], Any] | None = None
    optimizer_every: int = 1  # the trainer's accumulation: its optimizer (and EMA) run once per this many steps
    recipe: dict[str, Any] | None = None  # the profile's `train_recipe` section
    nvtx: bool = False  # --nvtx on a CUDA device: NVTX ranges around the phases
    # (images, targets) of the loader -> (inputs, targets) on the device in the family's format;
    # None: both moved as they are, uint8 images normalised to [0, 1] on the device
    to_device: Callable[[Any, Any], tuple[Any, Any]] | None = None
    setup_s: float = 0.0  # one-time conversion paid when this context was built (knobs), seconds
    _iter: Iterator[Any] | None = field(default=None, repr=False)

    @property
    def phases(self) -> tuple[str, ...]:
        """This step's phases: TRAIN_PHASES less the recipe's absent parts."""
        present = {"clip": self.clip is not None, "ema": self.ema_update is not None}
        return tuple(p for p in TRAIN_PHASES if present.get(p, True))

    def next_batch(self, cycle: bool = False) -> Any:
        """The next batch; with `cycle`, start the loader again when it runs out (trace pass only:
        the timing pass has checked beforehand that the data fills every measured step)."""
        if self._iter is None:
            self._iter = iter(self.loader)
        try:
            return next(self._iter)
        except StopIteration:
            if not cycle:
                raise
            self._iter = iter(self.loader)
            return next(self._iter)


    def close(self) -> None:
        """Shut the loader's worker processes down now, where an interrupt can be raised, rather
        than in the iterator's `__del__` at some later moment (where Python swallows it)."""
        it, self._iter = self._iter, None
        shutdown = getattr(it, "_shutdown_workers", None)  # multi-process iterators only
        if shutdown is not None:
            from yoloprof.capturing.passes import interrupt

            interrupt.stage("loader-shutdown")
            shutdown()


def _on_device(ctx: TrainContext, images: Any, targets: Any) -> tuple[Any, Any]:
    """A loader batch on the device in the family's format (`TrainContext.to_device`)."""
    from yoloprof.workloads.family_builtin import move_to_device

    return ctx.to_device(images, targets) if ctx.to_device is not None else move_to_device(images, targets, ctx.device)


def train_step_inputs(ctx: TrainContext, cycle: bool = True) -> tuple[Any, Any]:
    """The next batch on the device in the family's format, untimed (the outputs check)."""
    return _on_device(ctx, *ctx.next_batch(cycle))


def train_step(ctx: TrainContext, phase: PhaseFn, cycle: bool = False) -> None:
    if ctx.nvtx:
        phase = nvtx_phases(phase)
    with phase("dataload"):
        images, targets = ctx.next_batch(cycle)
    with phase("to_device"):
        inputs, targets = _on_device(ctx, images, targets)
    with phase("forward"):
        with ctx.autocast():
            loss, _ = ctx.forward_loss(ctx.model, inputs, targets)  # every loss returns (loss, parts)
    with phase("backward"):
        (ctx.scaler.scale(loss) if ctx.scaler is not None else loss).backward()
    if ctx.clip is not None:
        with phase("clip"):  # as the trainers do: clip the true gradients, unscaled first
            if ctx.scaler is not None:
                ctx.scaler.unscale_(ctx.optimizer)
            ctx.clip()
    with phase("optimizer"):
        if ctx.scaler is not None:
            ctx.scaler.step(ctx.optimizer)
            ctx.scaler.update()
        else:
            ctx.optimizer.step()
        ctx.optimizer.zero_grad(set_to_none=True)
    if ctx.ema_update is not None:
        with phase("ema"):
            ctx.ema_update()


@dataclass
class InferContext:
    model: Any
    sources: list[Any]  # encoded images (bytes) or paths: decoding is part of preprocess
    batch: int
    imgsz: int
    device: Any
    autocast: Callable[[], ContextManager[Any]]
    preprocess: Callable[..., Any]
    postprocess: Callable[..., Any]  # identity for user models (pipeline.postprocess_fn)
    forward: Callable[[Any, Any], Any] | None = None  # (model, x) -> raw outputs; None = model(x)
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    nvtx: bool = False
    setup_s: float = 0.0  # one-time conversion paid when this context was built (a runtime's export), seconds
    _cursor: int = 0

    def next_inputs(self) -> list[Any]:
        n = len(self.sources)
        picked = [self.sources[(self._cursor + i) % n] for i in range(self.batch)]
        self._cursor = (self._cursor + self.batch) % n
        return picked


def infer_call(ctx: InferContext, phase: PhaseFn) -> Any:
    import torch

    if ctx.nvtx:
        phase = nvtx_phases(phase)
    with torch.inference_mode():
        with phase("preprocess"):
            x, meta = ctx.preprocess(ctx.next_inputs(), ctx.imgsz, ctx.device)
        with phase("forward"):
            with ctx.autocast():
                raw = ctx.model(x) if ctx.forward is None else ctx.forward(ctx.model, x)
        with phase("postprocess"):
            out = ctx.postprocess(raw, meta, ctx.conf, ctx.iou, ctx.max_det)
    return out
