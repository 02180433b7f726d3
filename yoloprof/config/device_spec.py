"""The one device parser: every `--device` / `device=` string becomes a typed `DeviceSpec` here.

Why one place: the command line, the sweep's pre-flight, each sweep job, the row columns and the
verdict all need to know "CPU or which GPU"; five hand-written parsers used to disagree (`--device
CPU` and `cuda0` passed `run` while a sweep refused `device=CPU`). This module has no torch import,
so it runs in the sweep's pre-flight and in argparse; whether the device *exists* is the capture's
question (`capturing.device.torch_device.resolve_device`).

Grammar (case-insensitive, surrounding spaces ignored):
    cpu           the CPU
    N             CUDA device N (digits only: `0`, `1`, ...; the command line's default is 0)
    cuda          CUDA device 0
    cuda:N        CUDA device N
Anything else (`cuda0`, `gpu`, `cuda:`, `-1`, `0,1`, `cpu:0`, `mps`, `1.0`) is refused with the list
of valid forms. The canonical spelling (`cpu`, `cuda:N`) is what profiles and rows record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from yoloprof.errors import UsageError

DEVICE_FORMS = "cpu, N (a CUDA index such as 0), cuda or cuda:N"
_GRAMMAR = re.compile(r"(?:(?P<cpu>cpu)|(?P<bare>\d+)|cuda(?::(?P<index>\d+))?)")


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


def parse_device(value: object, *, flag: str = "device") -> DeviceSpec:
    """Parse a device string (an int from Hydra's `device=1` is accepted as its digits); raise
    UsageError naming `flag` and the valid forms otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UsageError(f"invalid {flag} {value!r}; valid: {DEVICE_FORMS}")
    text = str(value).strip().lower()
    match = _GRAMMAR.fullmatch(text)
    if not match:
        raise UsageError(f"invalid {flag} {value!r}; valid: {DEVICE_FORMS}")
    if match.group("cpu"):
        return DeviceSpec("cpu")
    digits = match.group("bare") or match.group("index") or "0"
    return DeviceSpec("cuda", int(digits))


def canonical_device(value: object) -> str:
    """`parse_device(value)` as its canonical string: `0`, `CUDA`, `cuda:0` all give `cuda:0`."""
    return str(parse_device(value))
