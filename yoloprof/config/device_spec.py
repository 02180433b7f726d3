"""The one device parser: every `--device` / `device=` string becomes a typed `DeviceSpec` here.

Why one place: the command line, the sweep's pre-flight, each sweep job, the row columns and the
verdict all need to know "CPU or which GPU"; five hand-written parsers used to disagree (`--device
CPU` and `cuda0` passed `run` while a sweep refused `device=CPU`). This module has no torch import,
so it runs in the sweep's pre-flight and in argparse; whether the device *exists* is the capture's
question (`capturing.device.torch_device.resolve_device`).

Grammar (case-insensitive, surrounding spaces ignored):
    auto          the default: the first GPU where this machine has one (CUDA, or ROCm through
                  torch.cuda), else the CPU (docs/devices.md)
    cpu           the CPU
    N             CUDA device N (digits only: `0`, `1`, ...)
    cuda          CUDA device 0
    cuda:N        CUDA device N
Anything else (`cuda0`, `gpu`, `cuda:`, `-1`, `0,1`, `cpu:0`, `mps`, `1.0`) is refused with the list
of valid forms. The canonical spelling (`cpu`, `cuda:N`) is what profiles and rows record: `auto` is
resolved by `parse_device` (the only place that asks torch, lazily and once per process), so a
row, a config hash and a machine lock always name the device that actually ran. `check_device`
checks the grammar alone (argparse, validation: no torch import).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from yoloprof.errors import UsageError

AUTO = "auto"
DEVICE_FORMS = "auto, cpu, N (a CUDA index such as 0), cuda or cuda:N"
_GRAMMAR = re.compile(r"(?:(?P<auto>auto)|(?P<cpu>cpu)|(?P<bare>\d+)|cuda(?::(?P<index>\d+))?)")


@dataclass(frozen=True)
class DeviceSpec:
    """A parsed device: `kind` is "cpu" or "cuda"; `index` is None for the CPU."""

    kind: str
    index: int | None = None

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    def __str__(self) -> str:
        """The canonical spelling, also torch's: `cpu` or `cuda:N`."""
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"


def _match(value: object, flag: str) -> re.Match[str]:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UsageError(f"invalid {flag} {value!r}; valid: {DEVICE_FORMS}")
    match = _GRAMMAR.fullmatch(str(value).strip().lower())
    if not match:
        raise UsageError(f"invalid {flag} {value!r}; valid: {DEVICE_FORMS}")
    return match


def check_device(value: object, *, flag: str = "device") -> None:
    """The grammar alone (`auto` accepted, not resolved): raise UsageError naming `flag` otherwise."""
    _match(value, flag)


def is_auto(value: object) -> bool:
    """Whether `value` asks for the automatic choice (any case, spaces ignored)."""
    return isinstance(value, str) and value.strip().lower() == AUTO


def parse_device(value: object, *, flag: str = "device") -> DeviceSpec:
    """Parse a device string (an int from Hydra's `device=1` is accepted as its digits), `auto`
    resolved to this machine's device (`auto_device`); raise UsageError naming `flag` and the valid
    forms otherwise."""
    match = _match(value, flag)
    if match.group("auto"):
        return auto_device()
    if match.group("cpu"):
        return DeviceSpec("cpu")
    digits = match.group("bare") or match.group("index") or "0"
    return DeviceSpec("cuda", int(digits))


def canonical_device(value: object) -> str:
    """`parse_device(value)` as its canonical string: `0`, `CUDA`, `cuda:0` all give `cuda:0`;
    `auto` gives this machine's choice."""
    return str(parse_device(value))


def spelled(flag: str, value: object) -> str:
    """A device setting as the user types it there: `--device cpu` on the command line (a flag),
    `device=cpu` in a sweep (a Hydra key)."""
    return f"{flag} {value}" if flag.startswith("--") else f"{flag}={value}"


def gpu_count() -> int:
    """GPUs torch can use here (CUDA, or ROCm through torch.cuda); 0 without torch or a GPU.
    CUDA_VISIBLE_DEVICES applies. The one probe `auto` reads: tests replace it with a fake."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


@functools.cache
def auto_device() -> DeviceSpec:
    """What `auto` means on this machine, decided once per process: GPU 0 (the first visible GPU)
    where there is one, else the CPU. XPU and MPS are not capture devices of this project."""
    return DeviceSpec("cuda", 0) if gpu_count() > 0 else DeviceSpec("cpu")
