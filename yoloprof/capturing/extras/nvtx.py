"""NVTX ranges around phases and modules (`--nvtx`, `yoloprof.profile(..., nvtx=True)`), for a
timeline in Nsight Systems (`nsys profile -t cuda,nvtx ...`).

A range push/pop costs about a microsecond on the host, so ranges are emitted only when asked, and
the profile says they were on. Without a CUDA device there is no NVTX to write to: the capture
goes on without ranges and says so in one line.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from yoloprof.capturing.device.torch_device import DeviceInfo

NVTX_CPU_NOTE = "nvtx: NVTX ranges need a CUDA device (for Nsight Systems); none were emitted on this CPU run"
NVTX_ON_NOTE = "nvtx: NVTX ranges were on around phases and modules (about 1 us of host time per range)"
NVTX_BROKEN_NOTE = "nvtx: this torch build cannot emit NVTX ranges ({error}); none were emitted"


def nvtx_error() -> str | None:
    """Why a range cannot be pushed, or None when it can: one push/pop tried here, outside any
    timed step (`torch.cuda.nvtx` always exists, but builds without `_nvtx` raise on the first
    push, which would otherwise happen inside the timed step)."""
    import torch

    try:
        torch.cuda.nvtx.range_push("yoloprof/nvtx-check")
        torch.cuda.nvtx.range_pop()
    except Exception as exc:  # noqa: BLE001 - RuntimeError, AttributeError, ...: any failure means no NVTX
        return f"{type(exc).__name__}: {exc}"
    return None


def nvtx_usable(device: DeviceInfo) -> bool:
    return device.is_cuda and nvtx_error() is None


def nvtx_note(device: DeviceInfo) -> str:
    if not device.is_cuda:
        return NVTX_CPU_NOTE
    error = nvtx_error()
    return NVTX_ON_NOTE if error is None else NVTX_BROKEN_NOTE.format(error=" ".join(error.split()))


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    import torch

    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


class NvtxModules:
    """A range per module call, named by the module's qualified name (the model itself: its class)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._handles: list[Any] = []

    def attach(self) -> "NvtxModules":
        import torch

        nvtx = torch.cuda.nvtx
        for name, module in self.model.named_modules():
            label = name or type(module).__name__
            self._handles.append(module.register_forward_pre_hook(lambda m, a, n=label: nvtx.range_push(n)))
            self._handles.append(module.register_forward_hook(lambda m, a, o: nvtx.range_pop(), always_call=True))
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
