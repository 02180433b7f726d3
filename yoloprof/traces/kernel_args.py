"""Kernel launch configuration and CUPTI's estimates, read on demand in a second pass.

Why a second pass and not columns of `traces.parse`: six more `args` keys in the parser's
`GpuArgs` make every complete event's decoded object larger, and measured that slowed the parse
of a 54 MB trace by about 20% (0.20 -> 0.24 s CPU), for figures only the GPU views need
(`traces.gpu_utilisation`, `yoloprof report`). This pass decodes only the kernels' args (every other
event decodes to an empty Struct) and aligns them with the parsed kernels by position, or by
(start, duration) where the two passes kept different events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import msgspec
import numpy as np

from yoloprof.traces.parse import CAT_CODE, Events


class _KArgs(msgspec.Struct, frozen=True, gc=False):
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    grid: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="grid")
    block: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="block")
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")


_NO_ARGS = _KArgs()


class _X(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    cat: Any = ""
    ts: Any = math.nan
    dur: Any = math.nan
    args: Union[_KArgs, list, str, int, float, bool, None] = _NO_ARGS  # noqa: UP007


_OTHERS = tuple(msgspec.defstruct(f"_K{ord(ph)}", [], tag_field="ph", tag=ph, gc=False)
                for ph in "BEiICbneSTpFstfPNODMVvRc()")


if TYPE_CHECKING:  # mypy cannot evaluate a union of a runtime tuple: the other phases are Structs
    _Event = Union[_X, msgspec.Struct]
else:
    _Event = Union[(_X,) + _OTHERS]  # noqa: UP007 (a runtime tuple)


class _Doc(msgspec.Struct):
    traceEvents: list[_Event] | None = None


_DECODER = msgspec.json.Decoder(_Doc)


@dataclass
class KernelArgs:
    """Per parsed event (NaN / -1 where absent and for every event that is not a kernel)."""

    blocks_per_sm: np.ndarray
    occupancy: np.ndarray
    registers: np.ndarray
    shared_memory: np.ndarray
    launch: np.ndarray  # index into `launches` ("grid | block" text), -1 for none
    launches: list[str] = field(default_factory=list)
    legacy_runtime: bool = False  # runtime calls under the 2021 category name "Runtime"
    unreadable: str | None = None  # why the args could not be read (then every column is absent)


def _number(v: Any) -> float:
    return float(v) if type(v) in (int, float) and math.isfinite(float(v)) else math.nan


def _spell(raw: bytes) -> str:
    try:
        return str(msgspec.json.decode(raw)) if raw else "?"
    except (msgspec.DecodeError, UnicodeDecodeError):
        return "?"


def read_kernel_args(data: bytes, ev: Events, launch: bool = True) -> KernelArgs:
    """The kernel args of the trace `data` that `ev` was parsed from, aligned with `ev`. A trace
    the typed decode refuses (the parser's loose path) gives all-absent columns. `launch=False`:
    blocks per SM and occupancy only (registers, shared memory and the launch left absent), for
    `summary`'s overview, which pays this pass on every GPU trace (about 40% of it saved)."""
    n = len(ev)
    out = KernelArgs(blocks_per_sm=np.full(n, np.nan), occupancy=np.full(n, np.nan), registers=np.full(n, np.nan),
                     shared_memory=np.full(n, np.nan), launch=np.full(n, -1, np.int32))
    doc = None
    for attempt in (data, None):
        try:  # the parser's own repair of names that are not UTF-8, then give up
            doc = _DECODER.decode(attempt if attempt is not None else
                                  data.decode("utf-8", "replace").encode("utf-8"))
            break
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            out.unreadable = f"the kernels' args could not be read from this trace ({exc})"
    if doc is None:
        return out
    out.unreadable = None
    xs = [e for e in doc.traceEvents or [] if type(e) is _X and isinstance(e.cat, str)]
    out.legacy_runtime = any(e.cat.lower() == "runtime" for e in xs)
    kern = [e for e in xs if e.cat.lower() == "kernel" and type(e.ts) in (int, float)
            and math.isfinite(e.ts) and not (type(e.dur) in (int, float) and e.dur < 0)]
    mine = np.flatnonzero(ev.cat == CAT_CODE["kernel"])
    pos = _align(ev, mine, kern)
    launches: dict[str, int] = {}
    for i, e in zip(mine.tolist(), pos.tolist()):
        if e < 0:
            continue
        a = kern[e].args if type(kern[e].args) is _KArgs else _NO_ARGS
        out.blocks_per_sm[i], out.occupancy[i] = _number(a.blocks_per_sm), _number(a.occupancy)
        if not launch:
            continue
        out.registers[i], out.shared_memory[i] = _number(a.registers), _number(a.shared_memory)
        g, b = bytes(a.grid), bytes(a.block)
        if g or b:
            out.launch[i] = launches.setdefault(f"{_spell(g)} | {_spell(b)}", len(launches))
    out.launches = list(launches)
    return out


# The parser keeps start times exact relative to an integer base (traces.exact_times); this pass
# decodes them as plain floats, which hold an epoch time only to every 0.25 us. So the two passes
# agree on a kernel's start to within this, and on its duration exactly (both decode it as float).
ALIGN_TOL_US = 0.5


def _align(ev: Events, mine: np.ndarray, kern: list[_X]) -> np.ndarray:
    """For each parsed kernel, the index of its event in `kern` (-1 when not found)."""
    ts = np.array([float(e.ts) for e in kern]) - ev.t0
    if len(kern) == len(mine) and (not len(mine) or np.abs(ts - ev.ts[mine]).max() < ALIGN_TOL_US):
        return np.arange(len(mine))
    dur = np.array([_number(e.dur) if e.dur is not None else 0.0 for e in kern])
    order = np.argsort(ts, kind="stable")
    sts, sdur = ts[order], dur[order]
    out = np.full(len(mine), -1, np.int64)
    for i, (t, d) in enumerate(zip(ev.ts[mine].tolist(), ev.dur[mine].tolist())):
        lo, hi = np.searchsorted(sts, [t - ALIGN_TOL_US, t + ALIGN_TOL_US])
        same = np.flatnonzero(np.abs(sdur[lo:hi] - d) < 1e-6)
        if same.size:  # the nearest start among the events of the same duration
            j = lo + same[np.argmin(np.abs(sts[lo + same] - t))]
            out[i] = order[j]
    return out
