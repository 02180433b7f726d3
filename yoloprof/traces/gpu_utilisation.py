"""GPU utilisation, est. SM efficiency and est. achieved occupancy as torch-tb-profiler defines them.

Why reproduce the TensorBoard plugin (0.4.3, `profiler/gpu_metrics_parser.py`) exactly: its
figures are what users compare against, and the plugin is gone. Definitions (docs/readers.md):
- the span: from the first step's start to the last step's end, the steps being the plugin's
  (`plugin_steps`: `ProfilerStep#N` spans, widened on the device clock only in traces whose runtime
  calls carry the 2021 category name `Runtime`, the only one the plugin recognises);
- GPU utilisation: union of the device's kernels inside the span / the span;
- est. SM efficiency: over time, min(1, the sum of `blocks per SM` of the kernels running at that
  instant), integrated over the span and divided by the span (kernels with a missing or
  non-positive value count as absent);
- est. achieved occupancy: mean of `est. achieved occupancy %` weighted by each kernel's time inside
  the span (overlapping kernels each count; negative values skipped).
A figure is None with a reason when the trace lacks what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from yoloprof.traces.kernel_args import KernelArgs
from yoloprof.traces.parse import CAT_CODE, Events
from yoloprof.traces.profiler_steps import STEP_NAME, matched_group

COMM_OP_NAMES = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                          for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"))
STEP_CATS = ("cpu_op", "user_annotation", "gpu_user_annotation")
PROFILER_SPAN = "PyTorch Profiler (0)"
MAX_BUCKETS = 100  # the plugin's timeline: 10-power bucket sizes, at most 100 buckets
NO_BLOCKS = "the trace's kernels carry no 'blocks per SM' (older CUPTI, or AMD/ROCm)"
NO_OCCUPANCY = "the trace's kernels carry no 'est. achieved occupancy %' (older CUPTI, or AMD/ROCm)"
NO_KERNELS = "no kernels in the trace"


@dataclass
class PluginSteps:
    """The plugin's step spans (µs on the parsed clock) in its order, and how they were found."""

    names: list[str]
    start: np.ndarray
    end: np.ndarray
    device_adjusted: bool

    @property
    def span(self) -> tuple[float, float]:
        return float(self.start[0]), float(self.end[-1])


def plugin_steps(ev: Events, ka: KernelArgs) -> PluginSteps:
    """`StepParser` of the plugin: every `ProfilerStep#N` on the host *and* its GPU mirror
    (`gpu_user_annotation`), in time order; none = the span of the host ops. With 2021-style
    runtime calls, each step is widened to the device work its launches started (`_device_steps`)
    and trailing steps whose kernels the profiler may have missed are dropped."""
    is_step = ev.names_matching(STEP_NAME) & ev.is_cat(*STEP_CATS)
    idx = np.flatnonzero(is_step)
    idx = idx[np.argsort(ev.ts[idx], kind="stable")]
    if not len(idx):
        ops = ev.cat == CAT_CODE["cpu_op"]
        lo = float(ev.ts[ops].min()) if ops.any() else 0.0
        hi = float((ev.ts[ops] + ev.dur[ops]).max()) if ops.any() else 0.0
        return PluginSteps(["0"], np.array([lo]), np.array([hi]), False)
    names = [matched_group(STEP_NAME, ev.strings[ev.name[i]]) for i in idx.tolist()]
    steps = PluginSteps(names, ev.ts[idx].copy(), ev.ts[idx] + ev.dur[idx], False)
    if ka.legacy_runtime:
        _device_steps(ev, steps)
    return steps


def _runtime_links(ev: Events) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Runtime calls (sorted by start) with their device events (kernels, memcpys, memsets) by
    correlation id: (runtime indices, device indices, device indices per runtime)."""
    rt = np.flatnonzero(ev.cat == CAT_CODE["cuda_runtime"])
    rt = rt[np.argsort(ev.ts[rt], kind="stable")]
    dev = np.flatnonzero(ev.is_cat("kernel", "gpu_memcpy", "gpu_memset"))
    by_corr: dict[int, list[int]] = {}
    for d, c in zip(dev.tolist(), ev.corr[dev].tolist()):
        by_corr.setdefault(c, []).append(d)
    last_rt = {c: r for r, c in zip(rt.tolist(), ev.corr[rt].tolist())}  # a later runtime wins
    links = [np.array(by_corr.get(c, []) if last_rt.get(c) == r else [], np.int64)
             for r, c in zip(rt.tolist(), ev.corr[rt].tolist())]
    return rt, dev, links


def _device_steps(ev: Events, steps: PluginSteps) -> None:
    """`_find_device_steps` and `_update_steps_duration` of the plugin, line for line."""
    rt, dev, links = _runtime_links(ev)
    n = len(steps.names)
    big = np.inf
    dmin, dmax, matched_n = [big] * n, [-big] * n, [0] * n
    matched: set[int] = set()
    i_step = i_rt = 0
    lo, hi = big, -big
    rt_start, rt_end = ev.ts[rt].tolist(), (ev.ts[rt] + ev.dur[rt]).tolist()
    while i_step < n and i_rt < len(rt):
        s0, s1 = float(steps.start[i_step]), float(steps.end[i_step])
        if rt_start[i_rt] < s0:
            i_rt += 1
        elif rt_end[i_rt] <= s1:
            for d in links[i_rt].tolist():
                lo, hi = min(lo, float(ev.ts[d])), max(hi, float(ev.ts[d] + ev.dur[d]))
                matched.add(d)
                matched_n[i_step] += 1
            i_rt += 1
        elif rt_start[i_rt] < s1:
            i_rt += 1
        else:
            dmin[i_step], dmax[i_step] = lo, hi
            i_step, lo, hi = i_step + 1, big, -big
    while i_step < n:
        dmin[i_step], dmax[i_step] = lo, hi
        i_step, lo, hi = i_step + 1, big, -big
    if not matched:
        return
    prev = float(steps.start[0])
    if dmin[0] != big:
        ends = ev.ts[dev] + ev.dur[dev]
        free = np.array([d not in matched for d in dev.tolist()], bool)
        early = ends[free & (ends < dmin[0])]
        prev = max(prev, float(early.max())) if len(early) else prev
    for i in range(n):
        start = max(prev, float(steps.start[i]))
        end = float(steps.end[i])
        end = max(end, start) if dmin[i] == big else max(max(end, dmax[i]), start)
        steps.start[i], steps.end[i] = start, end
        prev = end
    steps.device_adjusted = True
    _drop_tail(steps, matched_n)


def _drop_tail(steps: PluginSteps, matched_n: list[int]) -> None:
    """Trailing steps without device work, and a last step with < 80% of the previous one's
    device events (the profiler may have stopped before its kernels), are left out."""
    if len(steps.names) < 2:
        return
    i = len(steps.names) - 1
    while i >= 0 and matched_n[i] == 0:
        i -= 1
    if i < 0:
        return
    keep = i if i > 0 and matched_n[i - 1] * 0.8 > matched_n[i] else i + 1
    steps.names, steps.start, steps.end = steps.names[:keep], steps.start[:keep], steps.end[:keep]


def merged_with_value(start: np.ndarray, end: np.ndarray, value: np.ndarray) -> np.ndarray:
    """`merge_ranges_with_value`: rows (t0, t1, min(1, sum of the values running then)) over the
    times where the sum is positive. Endpoints sorted by time, a start before an end at one time."""
    if not len(start):
        return np.zeros((0, 3))
    t = np.concatenate([start, end])
    kind = np.concatenate([np.zeros(len(start), np.int8), np.ones(len(end), np.int8)])
    v = np.concatenate([value, -value])
    order = np.lexsort((kind, t))
    t, level = t[order], np.cumsum(v[order])
    keep = (t[1:] > t[:-1]) & (level[:-1] > 0.0)
    return np.column_stack([t[:-1][keep], t[1:][keep], np.minimum(level[:-1][keep], 1.0)])


def union(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Sorted, disjoint (start, end) rows covering the intervals (touching ones merged)."""
    if not len(start):
        return np.zeros((0, 2))
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    run_end = np.maximum.accumulate(e)
    new = np.concatenate([[True], s[1:] > run_end[:-1]])
    group = np.cumsum(new) - 1
    return np.column_stack([s[new], np.maximum.reduceat(e, np.flatnonzero(new))])[:group[-1] + 1]


def covered(ranges: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float,
            weight: np.ndarray | None = None) -> np.ndarray:
    """Per window [lo, hi): the length of the disjoint, sorted `ranges` inside it, each weighted
    by `weight`. Through the running integral F(t) (cumulative weighted length up to t), so the
    cost is O((ranges + windows) log ranges), never ranges x windows."""
    lo, hi = np.atleast_1d(np.asarray(lo, float)), np.atleast_1d(np.asarray(hi, float))
    if not len(ranges):
        return np.zeros(len(lo))
    w = np.ones(len(ranges)) if weight is None else np.asarray(weight, float)
    start, length = ranges[:, 0], ranges[:, 1] - ranges[:, 0]
    cum = np.concatenate([[0.0], np.cumsum(length * w)])

    def integral(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(start, t, side="right") - 1
        kk = np.clip(k, 0, None)
        part = np.clip(t - start[kk], 0.0, length[kk]) * w[kk]
        return np.where(k >= 0, cum[kk] + part, 0.0)

    return np.maximum(integral(hi) - integral(np.minimum(lo, hi)), 0.0)


def _kernels_of(ev: Events, device: int) -> np.ndarray:
    return np.flatnonzero((ev.cat == CAT_CODE["kernel"]) & (ev.device == device))


def device_metrics(ev: Events, ka: KernelArgs, lo: float, hi: float, device: int) -> dict[str, Any]:
    """Utilisation, SM efficiency (fractions, 0..1) and occupancy (%) of one device over [lo, hi]."""
    k = _kernels_of(ev, device)
    start, end = ev.ts[k], ev.ts[k] + ev.dur[k]
    span = hi - lo
    util = float(covered(union(start, end), lo, hi)[0]) / span if span > 0 else None
    out: dict[str, Any] = {"device": int(device), "gpu_util": util, "sm_efficiency": None,
                           "occupancy_pct": None, "sm_efficiency_na": None, "occupancy_na": None}
    blocks, occ = ka.blocks_per_sm[k], ka.occupancy[k]
    pos = blocks > 0
    sm = merged_with_value(start[pos], end[pos], blocks[pos])
    if span > 0 and len(sm):
        inside = np.clip(np.minimum(sm[:, 1], hi) - np.maximum(sm[:, 0], lo), 0.0, None)
        if (inside > 0).any():
            out["sm_efficiency"] = float((inside * sm[:, 2]).sum()) / span
    if out["sm_efficiency"] is None:
        out["sm_efficiency_na"] = ka.unreadable or (NO_BLOCKS if not pos.any() else
                                                    "no kernel with 'blocks per SM' inside the steps")
    ok = occ >= 0
    clip = np.minimum(end[ok], hi) - np.maximum(start[ok], lo)
    took = clip > 0
    if took.any():
        out["occupancy_pct"] = float((occ[ok][took] * clip[took]).sum() / clip[took].sum())
    else:
        out["occupancy_na"] = ka.unreadable or (NO_OCCUPANCY if not ok.any() else
                                                "no kernel with an occupancy inside the steps")
    return out


def gpu_ids(ev: Events) -> list[int]:
    k = ev.cat == CAT_CODE["kernel"]
    return sorted(set(ev.device[k].tolist()))


def gpu_metrics(ev: Events, ka: KernelArgs, steps: PluginSteps | None = None) -> list[dict[str, Any]]:
    """Per device with kernels: the plugin's overview figures over its steps' span."""
    steps = steps or plugin_steps(ev, ka)
    lo, hi = steps.span
    return [device_metrics(ev, ka, lo, hi, d) for d in gpu_ids(ev)]


def steps_overview(ev: Events, ka: KernelArgs, step_ids: list[int | None]) -> list[dict[str, Any]]:
    """`gpu_metrics` over the analysed steps only: the plugin's spans (host and GPU mirror) of
    the steps numbered `step_ids`, from the first start to the last end; every step's span when
    none is numbered (a trace without ProfilerSteps). With every step analysed it is the
    plugin's own overview."""
    steps = plugin_steps(ev, ka)
    wanted = {str(i) for i in step_ids if i is not None}
    keep = [k for k, name in enumerate(steps.names) if name in wanted]
    lo, hi = (float(steps.start[keep].min()), float(steps.end[keep].max())) if keep else steps.span
    return [device_metrics(ev, ka, lo, hi, d) for d in gpu_ids(ev)]


def per_kernel(ev: Events, ka: KernelArgs) -> dict[int, tuple[float, ...]]:
    """Per kernel name code: (mean blocks per SM, mean occupancy %) weighted by duration over all
    the trace's kernels, an absent value counted as 0 (the plugin's `KernelParser`)."""
    k = np.flatnonzero(ev.cat == CAT_CODE["kernel"])
    if not len(k):
        return {}
    return group_means(ev.name[k], ev.dur[k], ka.blocks_per_sm[k], ka.occupancy[k])


def group_means(key: np.ndarray, dur: np.ndarray, *values: np.ndarray) -> dict[int, tuple[float, ...]]:
    """Per key, duration-weighted means of each value (NaN read as 0; zero total time -> 0)."""
    uniq, inv = np.unique(key, return_inverse=True)
    tot = np.bincount(inv, weights=dur, minlength=len(uniq))
    sums = [np.bincount(inv, weights=np.nan_to_num(v) * dur, minlength=len(uniq)) for v in values]
    return {int(u): tuple(float(s[i] / tot[i]) if tot[i] > 0 else 0.0 for s in sums)
            for i, u in enumerate(uniq.tolist())}


def timeline_range(ev: Events, ka: KernelArgs) -> tuple[float, float]:
    """The timeline's range: the profiler's own span event, else every event the plugin reads."""
    own = np.flatnonzero((ev.cat == CAT_CODE["trace"]) & (ev.name == _code(ev, PROFILER_SPAN)))
    if len(own):
        i = int(own[-1])
        return float(ev.ts[i]), float(ev.ts[i] + ev.dur[i])
    cats = ["trace", "cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "python_function"]
    if ka.legacy_runtime:
        cats.append("cuda_runtime")
    read = ev.is_cat(*cats)
    ann = ev.is_cat("user_annotation", "gpu_user_annotation")
    if ann.any():
        special = np.array([bool(STEP_NAME.match(s)) or s in COMM_OP_NAMES for s in ev.strings] or [False])
        read |= ann & special[ev.name]
    if not read.any():
        return 0.0, 0.0
    return float(ev.ts[read].min()), float((ev.ts[read] + ev.dur[read]).max())


def _code(ev: Events, name: str) -> int:
    try:
        return ev.strings.index(name)
    except ValueError:
        return -1


def buckets(lo: float, hi: float) -> np.ndarray:
    """The plugin's buckets: a 10-power size in µs giving at most 100, the last one longer."""
    size = 1
    while (hi - lo) / size > MAX_BUCKETS:
        size *= 10
    n = int((hi - lo) / size)
    edges = lo + size * np.arange(n + 1, dtype=float)
    if n:
        edges[-1] = hi
    return edges


def util_timeline(ev: Events, device: int, edges: np.ndarray) -> np.ndarray:
    """Per bucket: the share of it covered by the device's kernels (all of them, steps or not)."""
    k = _kernels_of(ev, device)
    ranges = union(ev.ts[k], ev.ts[k] + ev.dur[k])
    return covered(ranges, edges[:-1], edges[1:]) / np.diff(edges)


def _weighted_time(start: np.ndarray, end: np.ndarray, w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """F(t) = sum over intervals of w * (their length before t), overlapping intervals each
    counted: prefix sums over the sorted starts and the sorted ends."""
    def part(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        xs, ws = x[order], w[order]
        cw, cwx = np.concatenate([[0.0], np.cumsum(ws)]), np.concatenate([[0.0], np.cumsum(ws * xs)])
        k = np.searchsorted(xs, t, side="left")
        return t * cw[k] - cwx[k]
    return part(start) - part(end)


def occupancy_timeline(ev: Events, ka: KernelArgs, device: int, edges: np.ndarray) -> np.ndarray | None:
    """Per bucket: est. achieved occupancy (%) weighted by the kernels' time inside it (NaN for a
    bucket without kernels with the arg); None when no kernel of the device has it."""
    k = _kernels_of(ev, device)
    occ = ka.occupancy[k]
    ok = occ >= 0
    if not ok.any():
        return None
    s, e = ev.ts[k][ok], (ev.ts[k] + ev.dur[k])[ok]
    num = np.diff(_weighted_time(s, e, occ[ok], edges))
    den = np.diff(_weighted_time(s, e, np.ones(int(ok.sum())), edges))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def sm_ranges(ev: Events, ka: KernelArgs, device: int) -> np.ndarray:
    """The SM efficiency timeline: (t0, t1, efficiency 0..1) rows over all the device's kernels."""
    k = _kernels_of(ev, device)
    blocks = ka.blocks_per_sm[k]
    pos = blocks > 0
    return merged_with_value(ev.ts[k][pos], (ev.ts[k] + ev.dur[k])[pos], blocks[pos])


def plugin_counters(ev: Events, ka: KernelArgs) -> list[dict[str, Any]]:
    """The counter events the plugin adds to the trace view (`get_gpu_metrics`), absolute µs:
    per device the utilisation buckets, then the SM efficiency ranges, each after a 1-then-0
    baseline point."""
    lo, hi = timeline_range(ev, ka)
    edges = buckets(lo, hi)
    out: list[dict[str, Any]] = []
    devices = gpu_ids(ev)

    def point(dev: int, what: str, t: float, v: float) -> dict[str, Any]:
        return {"ph": "C", "name": f"GPU {dev} {what}", "pid": dev, "ts": t + ev.t0, "args": {what: v}}

    for d in devices:
        if len(edges) < 2:
            continue
        util = util_timeline(ev, d, edges)
        out += [point(d, "Utilization", edges[0], 1), point(d, "Utilization", edges[0], 0)]
        out += [point(d, "Utilization", t, float(u)) for t, u in zip(edges[:-1].tolist(), util.tolist())]
        out.append(point(d, "Utilization", float(edges[-1]), 0))
    for d in devices:
        rng = sm_ranges(ev, ka, d)
        if not len(rng) or len(edges) < 2:
            continue
        out += [point(d, "Est. SM Efficiency", edges[0], 1), point(d, "Est. SM Efficiency", edges[0], 0)]
        for t0, t1, v in rng.tolist():
            out += [point(d, "Est. SM Efficiency", t0, v), point(d, "Est. SM Efficiency", t1, 0)]
    return out
