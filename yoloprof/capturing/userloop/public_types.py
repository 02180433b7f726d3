"""The types of the public profile-your-own-code API (`yoloprof.profile`, `timeit`, `profileit`;
docs/userloop.md), so that `import yoloprof` users and type checkers see named options and
results instead of `**options: Any` and `-> Any`.

`LoopOptions` are the keyword options of `capturing.userloop.loop.Profile` (tests/test_api_typed.py checks
that they are exactly its keywords); `P`, `R` type a decorated function (`capturing.userloop.decorators`'
`Timed` and `Profiled`). Imports nothing of capture/, so that both modules can import it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, ParamSpec, TypedDict, TypeVar, Union

if TYPE_CHECKING:
    import torch

P = ParamSpec("P")
R = TypeVar("R")  # a decorated function's return type
R_co = TypeVar("R_co", covariant=True)
# `project=`: the results store's folder, None (out_dir's), or False (no row) (loop_output.py)
ProjectArg = Union[str, "os.PathLike[str]", None, Literal[False]]


class LoopOptions(TypedDict, total=False):
    """`yoloprof.profile(out_dir, **options)` / `profileit(out_dir, **options)` (docs/userloop.md)."""
    model: torch.nn.Module | None
    warmup: int
    warmup_max: int
    steps: int
    trace_steps: int
    repeat: int
    modules: bool
    module_steps: int
    python_hotspots: bool
    hotspot_steps: int
    flops: bool
    nvtx: bool
    device: str | torch.device | None
    kind: Literal["train", "infer"]
    batch_size: int | None
    threads: int | None
    project: ProjectArg
