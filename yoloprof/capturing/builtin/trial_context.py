"""Build a fresh trial context (model, optimizer, loss, loader or sources) from capture settings.

Every trial and the trace pass get a new context, so that one trial's warm caches, allocator state
or optimizer momentum never leak into the next sample.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, ContextManager

from yoloprof.capturing.device.torch_compat import grad_scaler
from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.capturing.passes.step_calls import InferContext, TrainContext
from yoloprof.errors import DataTooSmallError
from yoloprof.workloads.family_api import RecipeInputs


def autocast_factory(settings: CaptureSettings, device: DeviceInfo, enabled: bool
                     ) -> Callable[[], ContextManager[Any]]:
    import torch

    if not enabled:
        return contextlib.nullcontext
    dtype = getattr(torch, settings.precision)
    return lambda: torch.autocast(device.type, dtype=dtype)


def build_model(settings: CaptureSettings, device: DeviceInfo, train: bool, work: Any = None) -> Any:
    """The chosen family's model (workloads/families.py), seeded, on the device, in train or eval mode."""
    import torch

    from yoloprof.workloads.families import workload

    torch.manual_seed(settings.seed)
    model = (work or workload(settings)).build()
    model = model.to(device.torch_device)
    if settings.nvtx and _nvtx_usable(device):
        from yoloprof.capturing.extras.nvtx import NvtxModules

        NvtxModules(model).attach()  # lives as long as the model (hooks go with it)
    return model.train(train)


def _nvtx_usable(device: DeviceInfo) -> bool:
    from yoloprof.capturing.extras.nvtx import nvtx_usable

    return nvtx_usable(device)


def effective_workers(settings: CaptureSettings) -> int:
    """More loader workers than cores only adds contention (each worker is a process)."""
    return min(settings.workers, os.cpu_count() or 1)


def build_dataset(settings: CaptureSettings, images_needed: int) -> Any:
    from yoloprof.workloads.data import build_dataset as _build
    from yoloprof.workloads.families import input_size

    imgsz = input_size(settings).imgsz or settings.imgsz  # the size the model runs at (rounded up by its family)
    return _build(settings.data or "synthetic", imgsz=imgsz, num_classes=settings.num_classes,
                  n_images_hint=settings.synthetic_images or images_needed, seed=settings.seed)


def prepare_dataset(settings: CaptureSettings) -> tuple[Any, list[str]]:
    """Build the dataset once per capture (trials and the trace pass share it; a YOLO folder's
    images are verified when it is built) and refuse it before measuring when it is too small."""
    dataset = build_dataset(settings, _steps_with_room(settings) * settings.batch)
    check_data_fills(dataset, settings)
    return dataset, list(getattr(dataset, "warnings", []))


def _steps_with_room(settings: CaptureSettings) -> int:
    """Batches the synthetic data is made for: the most warm-up steps (config/steady_thresholds.py) and the
    measured ones, so that an extended warm-up never runs the loader dry (its images are made
    lazily, per index: a longer dataset costs nothing until it is read)."""
    from yoloprof.config.steady_thresholds import trial_steps, warmup_cap

    return trial_steps(warmup_cap(settings.warmup, settings.measured, settings.warmup_max), settings.measured)


def check_data_fills(dataset: Any, settings: CaptureSettings) -> None:
    """Exit 3 before any measuring when the data cannot fill --warmup + --steps batches."""
    from yoloprof.workloads.data import num_batches

    needed = settings.warmup + settings.measured
    have = num_batches(dataset, settings.batch)
    if have < needed:
        raise DataTooSmallError(
            f"the data {settings.data or 'synthetic'} has {len(dataset)} images = {have} full batches "
            f"of {settings.batch}, but "
            f"--warmup {settings.warmup} + --steps {settings.measured} need {needed}; ways out: "
            + _ways_out(len(dataset), needed, settings.batch))


def _ways_out(images: int, needed: int, batch: int) -> str:
    """The three ways out, leaving out a smaller batch where none exists (never "at most 0")."""
    fits = images // needed if needed else 0
    larger = f"a larger dataset (at least {needed * batch} images at --batch {batch})"
    if 1 <= fits < batch:
        return f"{larger}, fewer --steps/--warmup, or a smaller --batch (at most {fits})"
    return f"{larger} or fewer --steps/--warmup (even --batch 1 needs {needed} images)"


def needs_grad_scaler(amp: bool, device: DeviceInfo, precision: str) -> bool:
    """GradScaler only where it is needed: float16 autocast on CUDA (bfloat16 has float32's
    exponent range, and CPU autocast does not scale)."""
    return bool(amp) and device.is_cuda and precision == "float16"


def recipe_inputs(settings: CaptureSettings, images: int) -> RecipeInputs:
    """What the family's trainer sizes its recipe by, for `images` training images."""
    return RecipeInputs(batch=settings.batch, images=images, lr=settings.lr, seed=settings.seed,
                        num_classes=settings.num_classes)


def build_train_context(settings: CaptureSettings, device: DeviceInfo, dataset: Any, amp: bool,
                        knobs: bool = True) -> TrainContext:
    """A fresh model on the device and its family's training recipe (`Adapter.train_recipe`: the
    optimizer is built here, once per context, and nowhere else). `knobs`: apply compile,
    memory_format and optimizer_impl (capturing/builtin/knob_context.py); off for the FLOP count,
    which counts the eager network's arithmetic."""
    from yoloprof.capturing.builtin.knob_context import apply_train_knobs
    from yoloprof.workloads.data import make_loader
    from yoloprof.workloads.families import workload

    work = workload(settings)
    model = build_model(settings, device, train=True, work=work)
    recipe = work.train_recipe(model, recipe_inputs(settings, len(dataset)))
    loader = make_loader(dataset, batch=settings.batch, workers=effective_workers(settings),
                         shuffle=False, seed=settings.seed, pin_memory=device.is_cuda)
    scaler = grad_scaler() if needs_grad_scaler(amp, device, settings.precision) else None
    adapter, target = work.adapter, device.torch_device
    ctx = TrainContext(model=model, optimizer=recipe.optimizer, clip=recipe.clip, ema_update=recipe.ema_update,
                       optimizer_every=recipe.optimizer_every, recipe=recipe.about,
                       forward_loss=work.forward_loss(model), loader=loader,
                       device=target, autocast=autocast_factory(settings, device, amp),
                       scaler=scaler, nvtx=settings.nvtx and _nvtx_usable(device),
                       to_device=lambda images, targets: adapter.to_device(model, images, targets, target))
    return apply_train_knobs(settings, device, ctx) if knobs else ctx


def load_infer_sources(settings: CaptureSettings) -> tuple[list[Any], list[str]]:
    """The inference inputs and the warnings about skipped (corrupt) images, for the profile."""
    import warnings

    from yoloprof.workloads.pipeline import load_sources

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sources = load_sources(settings.data)
    return sources, [str(w.message) for w in caught]


def build_infer_context(settings: CaptureSettings, device: DeviceInfo, sources: list[Any], amp: bool,
                        knobs: bool = True) -> InferContext:
    """`knobs`: apply compile, memory_format and the runtime (capturing/builtin/knob_context.py; the
    runtimes package is imported only for a runtime other than eager); off for the FLOP count."""
    from yoloprof.capturing.builtin.knob_context import apply_infer_knobs
    from yoloprof.workloads.families import workload

    work = workload(settings)
    model = build_model(settings, device, train=False, work=work)
    adapter, post = work.adapter, work.postprocess()
    ctx = InferContext(model=model, sources=sources, batch=settings.batch, imgsz=work.ref.imgsz or settings.imgsz,
                       device=device.torch_device, autocast=autocast_factory(settings, device, amp),
                       preprocess=lambda images, imgsz, dev: adapter.preprocess(model, images, imgsz, dev),
                       postprocess=lambda raw, meta, conf, iou, max_det: post(model, raw, meta, conf, iou, max_det),
                       forward=adapter.forward,
                       **settings.postprocess_values(),  # the family's own where not given
                       nvtx=settings.nvtx and _nvtx_usable(device))
    return apply_infer_knobs(settings, device, ctx, adapter) if knobs else ctx
