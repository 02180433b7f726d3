"""`@yoloprof.timeit` and `@yoloprof.profileit`: the capture's habits for a single function.

`timeit` (after PyTorch Geometric's `timeit`, with the project's statistics): each call of the
decorated function runs it `warmup` times untimed, then `repeat` samples of `number` calls each,
with the device synchronised at every sample boundary (never inside); one sample = the mean ms per
call of its `number` calls. The result of the last call is returned; the timing is kept on
`fn.last` (mean, 95% t-interval, CV, Tukey outliers) and printed as one line on stderr with
`log=True`.

`profileit`: each call runs the function through `yoloprof.profile` (warm-up, timed calls, a
trace window, FLOPs and, with `model=`, the per-module window) and writes a profile.json like
`run` does. The function therefore runs `warmup + steps + trace + ...` times per call; give it
work that may repeat (an inference call, a step on throwaway state).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Protocol,
    cast,
    overload,
)

from typing_extensions import Unpack  # typing has it from 3.11

from yoloprof.capturing.userloop.public_types import P, R_co
from yoloprof.defs.json_types import JSONObject
from yoloprof.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from yoloprof.capturing.userloop.public_types import LoopOptions, R


@dataclass
class Timing:
    """What one `timeit` call measured: per-sample ms per call and their statistics."""

    name: str
    samples_ms: list[float]
    number: int
    warmup: int
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_ms(self) -> float | None:
        return self.stats.get("mean")

    def line(self) -> str:
        s = self.stats
        ci = s.get("ci")
        text = f"{self.name}: {s['mean']:.4g} ms per call (mean of {s['n']} samples x {self.number} call(s)"
        text += f", 95% CI [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
        text += f", CV {100 * s['cv']:.1f}%)" if s.get("cv") is not None else ")"
        if s.get("outliers"):
            text += f"; outlier samples: {s['outliers']}"
        return text


class Timed(Protocol, Generic[P, R_co]):
    """A function decorated by `timeit`: `last` is the Timing of its latest call."""
    last: Timing | None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


class Profiled(Protocol, Generic[P, R_co]):
    """A function decorated by `profileit`: the profile of its latest call and the file written."""
    last_profile: JSONObject | None
    last_path: Path | None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


def _cuda_indices(objs: Any) -> set[int]:
    """Indices of the CUDA devices of the tensors in `objs` (nested lists, tuples, dicts)."""
    torch = sys.modules.get("torch")
    if torch is None:  # torch never loaded: no tensor can be on a GPU
        return set()
    out, stack = set(), [objs]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            if item.device.type == "cuda" and item.device.index is not None:
                out.add(item.device.index)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def _sync(seen: set[int]) -> None:
    """Synchronise the devices the function ran on, decided now, at each sample boundary (a
    function that is first to touch CUDA is synchronised from its first sample on): the current
    device, those of the tensors it took and returned (`seen`), and every device whose caching
    allocator holds memory. Nothing when CUDA was never initialised (nothing can be queued)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    devices = {torch.cuda.current_device(), *seen}
    devices.update(d for d in range(torch.cuda.device_count()) if torch.cuda.memory_reserved(d) > 0)
    for index in sorted(devices):
        torch.cuda.synchronize(index)


@overload
def timeit(fn: Callable[P, R], *, repeat: int = 5, number: int = 1, warmup: int = 1,
           log: bool = True) -> Timed[P, R]: ...


@overload
def timeit(fn: None = None, *, repeat: int = 5, number: int = 1, warmup: int = 1,
           log: bool = True) -> Callable[[Callable[P, R]], Timed[P, R]]: ...


def timeit(fn: Callable[P, R] | None = None, *, repeat: int = 5, number: int = 1, warmup: int = 1,
           log: bool = True) -> Timed[P, R] | Callable[[Callable[P, R]], Timed[P, R]]:
    """`@timeit` or `@timeit(repeat=10, number=5, warmup=2, log=False)`."""
    for key, value, least in (("repeat", repeat, 1), ("number", number, 1), ("warmup", warmup, 0)):
        if not isinstance(value, int) or value < least:
            raise UsageError(f"yoloprof.timeit: {key} must be an integer >= {least} (got {value!r})")

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from yoloprof.metrics.stats import mean_ci

            out = None
            for _ in range(warmup):
                out = func(*args, **kwargs)
            seen = _cuda_indices((args, kwargs, out))
            samples = []
            for _ in range(repeat):
                _sync(seen)
                t0 = time.perf_counter_ns()
                for _ in range(number):
                    out = func(*args, **kwargs)
                seen |= _cuda_indices(out)
                _sync(seen)
                samples.append((time.perf_counter_ns() - t0) / 1e6 / number)
            wrapper.last = Timing(name, samples, number, warmup, mean_ci(samples))  # type: ignore[attr-defined]
            if log:
                print(f"yoloprof.timeit: {wrapper.last.line()}", file=sys.stderr)  # type: ignore[attr-defined]
            return out

        wrapper.last = None  # type: ignore[attr-defined]
        return wrapper

    # the wrapper gains `last` as an attribute: the Timed protocol says so to callers
    return cast("Timed[P, R]", decorate(fn)) if fn is not None else cast(
        "Callable[[Callable[P, R]], Timed[P, R]]", decorate)


def profileit(out_dir: str = "runs/profile/profileit",
              **options: Unpack[LoopOptions]) -> Callable[[Callable[P, R]], Profiled[P, R]]:
    """`@profileit("runs/f", warmup=1, steps=3, model=net, kind="infer")`: options as
    `yoloprof.profile` (the row goes to the results store `<out_dir>/results`, or `project=`'s).
    `fn.last_profile` is the profile dict, `fn.last_path` its file; prints nothing per call."""
    from yoloprof.capturing.userloop.loop import Profile

    options = {"warmup": 1, "steps": 3, "trace_steps": 1, "kind": "infer", **options}
    Profile(out_dir, **options)  # bad options fail at decoration time, not at the first call

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        name = getattr(func, "__name__", "function")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            out = None
            block = Profile(out_dir, **options)
            block.announce = False  # it runs until done: no line per call (the store is out_dir's, or project=)
            with block as prof:
                while not prof.done:
                    with prof.phase(name if _phase_name_ok(name) else "call"):
                        out = func(*args, **kwargs)
                    prof.step()
            wrapper.last_profile, wrapper.last_path = prof.result, prof.path  # type: ignore[attr-defined]
            return out

        wrapper.last_profile = wrapper.last_path = None  # type: ignore[attr-defined]
        return wrapper

    return cast("Callable[[Callable[P, R]], Profiled[P, R]]", decorate)  # wrapper gains last_profile, last_path


def _phase_name_ok(name: str) -> bool:
    import re

    return bool(re.fullmatch(r"[A-Za-z_][\w-]*", name))
