"""Which device `yoloprof.profile` measures, and what it says about that device's limits.

The device is `device=`, else the one of `model=`'s parameters, else the one of the batch given to
`prof.step(x)` at the end of the first iteration (which is then always untimed), else the CPU; a
loop that leaves it to the CPU while CUDA is in use gets a note. The chosen CUDA device is the
current one inside the block (`DeviceInfo.scope()`, entered on the profile's `_scope` stack).
"""

from __future__ import annotations

import sys
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.userloop.loop_plan import LoopPlan

FIRST_UNTIMED_NOTE = ("warmup: 1 iteration, not 0: without model= or device= the first iteration is "
                      "untimed, so that prof.step(x) shows the batch's device")
CUDA_UNSEEN_NOTE = ("device: CUDA is in use, but without model=, device= or a batch given to "
                    "prof.step(x) the profile measures the CPU: pass one of them")
LATE_BATCH_NOTE = ("device: the batch is on {device}, but the timed steps had begun on the CPU; "
                   "pass device= or model= to yoloprof.profile")


def planned_warmup(model: Any, device: Any, warmup: int, notes: list[str]) -> int:
    """The warm-up length: at least 1 when the device must be read from the batch."""
    if model is None and device is None and warmup == 0:
        notes.append(FIRST_UNTIMED_NOTE)
        return 1
    return warmup


def device_lines(env: dict[str, Any], mix: Any, device: DeviceInfo) -> list[str]:
    """The device's limits seen in this run (launch blocking, emulated bfloat16), printed through
    the warning channel as well as kept in the profile."""
    from yoloprof import warn
    from yoloprof.capturing.device.gpu_capability import mix_warnings
    from yoloprof.capturing.device.environment import runtime_warnings

    dtypes = {d for _, d in mix.by} if mix is not None else set()
    lines = [*runtime_warnings(env), *mix_warnings(dtypes, device)]
    for line in lines:
        warn.emit(line)
    return lines


class LoopDevice:
    """The device part of `loop.Profile` (a mixin: it reads and sets the profile's own fields)."""

    device: DeviceInfo
    _find_device: bool
    _notes: list[str]
    plan: LoopPlan
    _w: int
    _scope: Any
    options: dict[str, Any]

    def _device_from_batch(self, tensors: list[Any]) -> None:
        """A loop without model= or device= measures the device its batch is on (a GPU loop used
        to be timed as CPU work, without a synchronise, with the CPU named as its device)."""
        from yoloprof.capturing.userloop.loop_clock import LoopClock
        from yoloprof.capturing.device.peak_memory import PeakMemory

        dev = next((t.device for t in tensors if t.device.type == "cuda"), None)
        if dev is None:
            return
        if self._w >= len(self.plan.windows) or self.plan.windows[self._w][0] != "warmup":
            self._notes.append(LATE_BATCH_NOTE.format(device=dev))
            return
        if dev.index is None:
            dev = type(dev)("cuda", self.device.cuda.current_device())
        self.device = DeviceInfo(dev, "cuda")
        self._clock, self._memory = LoopClock(self.device), PeakMemory(self.device)
        self._scope.enter_context(self.device.scope())
        if self.options["nvtx"]:
            from yoloprof.capturing.extras.nvtx import NVTX_CPU_NOTE

            self._notes = [n for n in self._notes if n != NVTX_CPU_NOTE]
            self._setup_nvtx()  # type: ignore[attr-defined]

    def _note_cuda_unseen(self) -> None:
        torch = sys.modules.get("torch")
        if (self._find_device and not self.device.is_cuda and torch is not None
                and torch.cuda.is_available() and torch.cuda.is_initialized()):
            self._notes.append(CUDA_UNSEEN_NOTE)
