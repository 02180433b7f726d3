"""FLOPs of one step split by what ran them, and the peak that MFU divides by.

Counting: torch's `FlopCounterMode` counts the FLOPs of every matmul and convolution (forward and
backward), 2 FLOPs per multiply-add, bias ignored. Its convolution forward holds for any groups (the
weight's second dimension is already C_in/groups), but its `convolution_backward` counts the weight
gradient as if there were one group (groups times too many: 64x on a 64-channel depthwise conv), so
`conv_backward_flops` below replaces it: each gradient the backward computes (its `output_mask`)
costs what the forward costs,
    forward = 2 * N * C_out * (C_in / groups) * prod(kernel) * prod(out spatial)   (a plain conv)
    forward = 2 * N * C_in * (C_out / groups) * prod(kernel) * prod(in spatial)    (a transposed one)
which equals torch's own count exactly where groups = 1. A dispatch mode stacked inside it sees each of those ops after autocast has cast its
inputs (autocast's dispatch key runs before Python dispatch modes), so the dtype of an op's first
floating input is the dtype that actually ran; each op's FLOPs (the counter's total after minus
before) go to (kind, dtype), kind = "conv" (cuDNN) or "matmul" (cuBLAS, attention).

MFU: the step's FLOPs over the time they would take at the device's dense peak for each part,
    peak_eff = total / sum(flops_k / peak_k),   mfu = achieved / peak_eff,
with float16/bfloat16 at the Tensor Core figure, float32 convolutions at TF32 when cuDNN may use it
(`torch.backends.cudnn.allow_tf32`, torch's default) and the part has TF32, float32 matmuls at TF32
when `torch.backends.cuda.matmul.allow_tf32` (default off), else plain FP32. A part whose peak is
unknown (a device not in defs/gpus.py, float64, a dtype the device lacks) makes MFU n/a, with why.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from yoloprof.defs.gpus import Match

_DTYPE_NAMES = {"torch.float16": "float16", "torch.bfloat16": "bfloat16", "torch.float32": "float32",
                "torch.float64": "float64"}


@dataclass
class FlopMix:
    """FLOPs of one counted call: the total and its split by (kind, dtype)."""

    total: float = 0.0
    by: dict[tuple[str, str], float] = field(default_factory=dict)

    def as_rows(self) -> list[dict[str, Any]]:
        return [{"kind": k, "dtype": d, "gflops": v / 1e9} for (k, d), v in sorted(self.by.items())]


def _kind(func: Any) -> str:
    return "conv" if "convolution" in str(getattr(func, "_overloadpacket", func)) else "matmul"


def _dtype(args: Any) -> str:
    import torch

    stack = list(args)
    while stack:
        item = stack.pop(0)
        if isinstance(item, torch.Tensor) and item.is_floating_point():
            return _DTYPE_NAMES.get(str(item.dtype), str(item.dtype).replace("torch.", ""))
        if isinstance(item, (list, tuple)):
            stack[:0] = list(item)
    return "unknown"


def conv_backward_flops(grad_out_shape: Any, x_shape: Any, w_shape: Any, _bias: Any, _stride: Any,
                        _padding: Any, _dilation: Any, transposed: bool, _output_padding: Any, _groups: Any,
                        output_mask: Any, out_shape: Any = None, **_: Any) -> int:
    """FLOPs of `aten.convolution_backward` (torch's argument order; shapes, as `FlopCounterMode`
    passes them): the forward's count (grad_out's shape is the forward output's) once for grad_input
    and once for grad_weight, each only where `output_mask` asks for it (see the module docstring)."""
    from torch.utils.flop_counter import conv_flop_count

    forward = conv_flop_count(list(x_shape), list(w_shape), list(grad_out_shape), transposed=bool(transposed))
    return forward * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


def _custom_formulas() -> dict[Any, Any]:
    """The formulas that replace torch's in the counter: keyed by op packet, as its registry is."""
    import torch

    return {torch.ops.aten.convolution_backward: conv_backward_flops}


def flop_counter_mode() -> Any:
    """A torch `FlopCounterMode` (display off) with the grouped-convolution backward counted right."""
    from torch.utils.flop_counter import FlopCounterMode

    return FlopCounterMode(display=False, custom_mapping=_custom_formulas())


class FlopCounter:
    """`with FlopCounter() as fc: ...` then `fc.mix` (a FlopMix); enter/exit may be called by hand
    (the user loop's FLOPs window spans iterations)."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        self._counter = flop_counter_mode()
        by: dict[tuple[str, str], float] = defaultdict(float)
        counter = self._counter

        class _ByDtype(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                before = counter.get_total_flops()
                out = func(*args, **(kwargs or {}))
                added = counter.get_total_flops() - before
                if added:
                    by[(_kind(func), _dtype(args))] += added
                return out

        self._by = by
        self._mode = _ByDtype()

    def __enter__(self) -> "FlopCounter":
        self._counter.__enter__()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._mode.__exit__(*exc)
        finally:
            self._counter.__exit__(*exc)

    @property
    def mix(self) -> FlopMix:
        return FlopMix(float(self._counter.get_total_flops()), dict(self._by))


def count_flop_mix(fn: Callable[[], Any]) -> FlopMix | None:
    """The FlopMix of one call of `fn`, outside any timed step; None when the counter cannot run
    the model (it still gets profiled)."""
    try:
        counter = FlopCounter()
    except ImportError:
        return None
    try:
        with counter:
            fn()
    except Exception:  # noqa: BLE001 - a model the counter cannot trace still gets profiled
        return None
    return counter.mix


def part_dtype(kind: str, dtype: str, tf32: dict[str, bool]) -> str:
    """The peak column an op of `kind` and `dtype` runs at (see the module docstring)."""
    if dtype != "float32":
        return dtype
    flag = "cudnn_allow_tf32" if kind == "conv" else "matmul_allow_tf32"
    return "tf32" if tf32.get(flag) else "float32"


def effective_peak(mix: FlopMix, gpu: Match | None, tf32: dict[str, bool]
                   ) -> tuple[float | None, list[dict[str, Any]], str | None]:
    """(peak TFLOP/s for this mix or None, the parts with their peaks, why None)."""
    if gpu is None:
        return None, [], "the device is not in the peak table (yoloprof/defs/gpus.py)"
    parts, seconds, missing = [], 0.0, []
    for (kind, dtype), flops in sorted(mix.by.items()):
        column = part_dtype(kind, dtype, tf32)
        if column == "tf32" and "tf32" not in gpu.entry.tflops and gpu.entry.capability is not None \
                and gpu.entry.capability < (8, 0):
            column = "float32"  # no TF32 before Ampere: the switch has no effect there
        peak = gpu.tflops(column)
        parts.append({"kind": kind, "dtype": dtype, "runs_as": column, "gflops": flops / 1e9, "peak_tflops": peak})
        if peak is None:
            missing.append(f"{kind} {column}")
        else:
            seconds += flops / (peak * 1e12)
    if missing:
        return None, parts, f"no {gpu.entry.key} peak for {', '.join(missing)} in yoloprof/defs/gpus.py"
    if not seconds:
        return None, parts, "no matmul or convolution FLOPs were counted"
    return sum(mix.by.values()) / seconds / 1e12, parts, None
