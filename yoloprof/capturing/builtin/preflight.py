"""Checks a capture makes before any work: the output folder can be written, and the image size
fits in memory. Each failure is a UsageError (exit 2) naming the folder or the flag, raised in
seconds instead of after a whole capture (a file in the way of `--project`) or never (the kernel's
out-of-memory killer ends the process without a message).

The memory figure is an estimate, defined so that it errs low (it must never refuse a capture
that would have fitted):
* input: the float32 batch on the device (12 bytes per pixel per image) plus the uint8 host batch
  (3 bytes per pixel per image);
* built-in detector, training: every layer's output is kept for the backward pass, so the sum of
  the output sizes of all leaf modules (measured by one forward of the model on the CPU at a small
  size, 64 px, and scaled by pixel count: the network is fully convolutional; once per process for
  each size, class count and mode);
* built-in detector, inference: the largest layer's input and output alive at once (twice the
  largest leaf output);
* user models: the input only (their layers are unknown without building them).
Activations are counted in float32, halved under autocast. The estimate is compared with the memory
the device can give now: CUDA free memory, or the host's MemAvailable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path
from typing import Iterator

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.errors import UsageError

INPUT_BYTES_PER_PIXEL = 3 * 4 + 3  # float32 batch on the device + uint8 batch on the host
_PROBE_SIZE = 64  # imgsz of the forward that measures activation bytes per pixel
_GIB = 2**30


def check_output_dir(out_dir: str | Path) -> Path:
    """Create `out_dir` (and parents) and prove a file can be written there, before any work."""
    path = Path(out_dir)
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"output folder {path}: {parent} is a file, not a folder (give another --project)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".yoloprof-write-probe.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"output folder {path} is not writable: {exc.strerror or exc} "
                         "(give another --project)") from None
    return path


def folders_to_make(out_dir: str | Path) -> list[Path]:
    """The folders `check_output_dir` will create for `out_dir`, deepest first."""
    path, made = Path(out_dir), []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        made.append(folder)
    return made


@contextlib.contextmanager
def removed_if_left_empty(made: list[Path]) -> Iterator[None]:
    """A capture that ends without a profile (Ctrl-C, an error) takes back the folders it made for
    it while they are still empty: an interrupted `yoloprof run` used to leave an empty `train/`
    that the next run then stepped over to `train2/`."""
    try:
        yield
    except BaseException:
        for folder in made:  # deepest first; stops at the first one that holds anything
            try:
                folder.rmdir()
            except OSError:
                break
        raise


def check_model_inputs(settings: CaptureSettings) -> None:
    """The model, loss and weights named by the flags exist, before the data is read: a typo in
    `--weights` or `--model` must not wait for a large dataset to be verified first."""
    from yoloprof.workloads.families import FACTORY, check_installed, check_model, family_of
    from yoloprof.workloads.models import import_target

    family = family_of(settings.model)
    if family == FACTORY and isinstance(settings.model, str):  # else an object from Python
        import_target(settings.model)
    check_installed(family)
    check_model(settings, strict_size=False)  # a family's model name and size (workloads/families.py)
    for hook in (settings.loss, settings.postprocess):
        if hook:
            import_target(hook)
    if settings.weights and settings.weights != "none":
        path = Path(settings.weights).expanduser()
        if not path.is_file():
            raise UsageError(f"weights file {str(path)!r} does not exist (--weights)")


def _activation_bytes_per_pixel(settings: CaptureSettings) -> float:
    """Bytes of float32 activations per input pixel of one image (see the module docstring)."""
    if not isinstance(settings.model, str) or settings.model != "yolo":
        return 0.0
    return _yolo_bytes_per_pixel(settings.size, settings.num_classes, settings.mode == "train")


@functools.lru_cache(maxsize=32)
def _yolo_bytes_per_pixel(size: str, num_classes: int, train: bool) -> float:
    """One probe forward of the built-in detector with hooks that read each leaf's output size.

    On the CPU with its real initialisation: a small model builds in 0.03 s and its probe runs in
    0.03-0.4 s (the first convolutions of a process set up their kernels). Building on the `meta`
    device and moving it to uninitialised CPU storage instead cost 0.4 s every time and 1.5 s the
    first time (torch's Python reference path for each parameter)."""
    import torch

    from yoloprof.workloads.yolo import build_yolo

    model = build_yolo(size, num_classes)
    sizes: list[int] = []

    def hook(module: torch.nn.Module, _inp: object, out: object) -> None:
        if isinstance(out, torch.Tensor) and not any(True for _ in module.children()):
            sizes.append(out.numel() * out.element_size())

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        with torch.no_grad():
            model.train(train)(torch.zeros(1, 3, _PROBE_SIZE, _PROBE_SIZE))
    finally:
        for h in handles:
            h.remove()
    per_pixel = 1.0 / (_PROBE_SIZE * _PROBE_SIZE)
    return (sum(sizes) if train else 2 * max(sizes, default=0)) * per_pixel


def estimate_bytes(settings: CaptureSettings, amp: bool) -> float:
    """The memory one step needs at least, by the definition in the module docstring."""
    activations = _activation_bytes_per_pixel(settings) * (0.5 if amp else 1.0)
    batch = max(settings.batch, 1)
    return batch * float(settings.imgsz) ** 2 * (INPUT_BYTES_PER_PIXEL + activations)


def available_bytes(device: DeviceInfo) -> float | None:
    """Memory the device can give now: CUDA free memory, or the host's MemAvailable (None if unknown)."""
    if device.is_cuda:
        free, _total = device.cuda.mem_get_info(device.torch_device)
        return float(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(settings: CaptureSettings, device: DeviceInfo, amp: bool) -> None:
    """Exit 2 when the image size cannot fit, instead of an out-of-memory kill without a message."""
    need = estimate_bytes(settings, amp)
    have = available_bytes(device)
    if have is not None and need > have:
        where = "free on the GPU" if device.is_cuda else "available on this machine"
        raise UsageError(
            f"--imgsz {settings.imgsz} at --batch {max(settings.batch, 1)} needs at least {need / _GIB:,.1f} GiB "
            f"(estimate: input + activations of one {settings.mode} step), but only {have / _GIB:,.1f} GiB "
            f"is {where}; use a smaller --imgsz or --batch")
