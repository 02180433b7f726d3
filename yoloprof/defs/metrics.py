"""The metric registry: every metric yoloprof writes, defined once (docs/CONTRACTS.md "Registry").

Capture, the trace engine, the readers, the sweep rows, the analysis and every renderer take a
metric's unit, better direction, label and the lists it belongs to from here, so that a figure
reads the same everywhere (one unit per quantity: milliseconds, MiB for memory, "count" for
per-step counts, whose "per step" is in the name).

Names that come in families (`<phase>_wall_ms`, `p<q>_ms`, `trace_<name>`, ...) are resolved by
`spec(name)` through FAMILIES, a table of patterns; a name nothing matches gets a neutral spec
(no unit, no direction) rather than a guess.

Roles name the lists a metric is in (ordered as in METRICS):
- "summary": the headline block of `yoloprof summary`;
- "compare": compared by default by `yoloprof compare` (when both sides have it);
- "analyze": compared by default by `yoloprof analyze` (fewer: each comparison costs power under
  the multiple-comparison correction); modes restrict it (p50_ms only for inference sweeps);
- "row": stored as a column (value + `<name>_samples`) in every sweep row (row.parquet);
- "view": kept in the analysis' per-configuration means (best rows, Pareto front, plots).
"""

from __future__ import annotations

import re
from typing import Iterable

from dataclasses import dataclass, replace

LOWER, HIGHER = "lower", "higher"
MS, US, PCT, MIB, COUNT, S = "ms", "us", "%", "MiB", "count", "s"
BYTES_PER_MIB = 2**20  # every memory figure is in MiB: the "_mb" of a metric name means 2**20 bytes
ALL_MODES = ("train", "infer", "trace")
CAPTURE_MODES = ("train", "infer")


@dataclass(frozen=True)
class Metric:
    """One metric. `better` is the direction of an improvement (None: neither, e.g. a kernel
    count that is neither good nor bad on its own); `device_only` metrics exist only with a
    traced GPU/XPU, so their absence on a CPU run is explained, never shown as 0."""

    name: str
    unit: str
    better: str | None
    label: str
    modes: tuple[str, ...] = ALL_MODES
    roles: frozenset[str] = frozenset()
    device_only: bool = False

    @property
    def column(self) -> str | None:
        """The Parquet column of a sweep row holding this metric's mean (None: not in rows)."""
        return self.name if "row" in self.roles else None

    @property
    def headline(self) -> bool:
        return "summary" in self.roles


def _m(name: str, unit: str, better: str | None, label: str, *roles: str, modes: tuple[str, ...] = ALL_MODES,
       device_only: bool = False) -> Metric:
    return Metric(name, unit, better, label, modes, frozenset(roles), device_only)


# In display order: the role lists below keep this order.
METRICS: tuple[Metric, ...] = (
    _m("step_ms", MS, LOWER, "step time", "summary", "compare", "analyze", "row", "view"),
    _m("img_per_s", "img/s", HIGHER, "throughput", "summary", "compare", "analyze", "row", "view",
       modes=CAPTURE_MODES),
    _m("p50_ms", MS, LOWER, "p50 latency", "compare", "analyze", "row", "view", modes=("infer",)),
    _m("p90_ms", MS, LOWER, "p90 latency", "compare", "row", modes=("infer",)),
    # not compared by default: a trial of 100 calls has a p99 close to its largest call, with no
    # upper end of a 95% interval below 368 calls (metrics.quantiles); `--metrics p99_ms` still can
    _m("p99_ms", MS, LOWER, "p99 latency", "row", modes=("infer",)),
    _m("device_util_pct", PCT, HIGHER, "device utilisation", "summary", "compare", "row", device_only=True),
    # torch-tb-profiler's overview figures over the analysed steps (traces.gpu_utilisation)
    _m("sm_efficiency_pct", PCT, HIGHER, "est. SM efficiency", "summary", device_only=True),
    _m("achieved_occupancy_pct", PCT, HIGHER, "est. occupancy", "summary", device_only=True),
    _m("tensorcore_pct", PCT, HIGHER, "Tensor Core share", "summary", device_only=True),
    _m("peak_mem_mb", MIB, LOWER, "peak memory", "summary", "compare", "analyze", "row", "view"),
    _m("host_overhead_ms", MS, LOWER, "host overhead", "summary", "compare", "row", device_only=True),
    _m("launches_per_step", COUNT, LOWER, "launches/step", "summary", "compare", "row", device_only=True),
    _m("kernels_per_step", COUNT, None, "kernels/step", "summary", device_only=True),
    _m("ms_per_image", MS, LOWER, "ms per image", modes=CAPTURE_MODES),  # derived by `compare`
    # a trainer's iteration with its optimizer, clipping and EMA amortised over its accumulation
    # period (capturing/passes/recipe_figures.py); only where the period is above 1
    _m("amortised_step_ms", MS, LOWER, "step time, optimizer amortised", modes=("train",)),
    _m("device_busy_ms", MS, None, "device busy", device_only=True),
    _m("mean_kernel_us", US, None, "mean kernel time", device_only=True),
    _m("kernel_ms", MS, None, "kernel busy", device_only=True),  # per CUPTI activity kind
    _m("memcpy_ms", MS, None, "memcpy busy", device_only=True),
    _m("memset_ms", MS, None, "memset busy", device_only=True),
    _m("host_sync_ms", MS, None, "host synchronisation", device_only=True),
    _m("malloc_calls_per_step", COUNT, LOWER, "device mallocs/step", device_only=True),
    _m("alloc_calls_per_step", COUNT, LOWER, "allocations/step"),
    _m("orphan_kernels", COUNT, None, "kernels without a launch/step", device_only=True),
    _m("peak_rss_mb", MIB, LOWER, "peak resident set", modes=CAPTURE_MODES),
    # the job's own peak over its starting footprint (what CPU sweeps compare: the process RSS also
    # counts what earlier jobs of the same process left behind)
    _m("peak_mem_growth_mib", MIB, LOWER, "peak memory growth", "row", modes=CAPTURE_MODES),
    _m("peak_reserved_mb", MIB, LOWER, "peak reserved (allocator)", modes=CAPTURE_MODES, device_only=True),
    _m("gflops_per_step", "GFLOP", None, "GFLOP per step", modes=("train",)),
    _m("gflops_per_call", "GFLOP", None, "GFLOP per call", modes=("infer",)),
    _m("achieved_tflops", "TFLOP/s", HIGHER, "achieved TFLOP/s", modes=CAPTURE_MODES),
    _m("mfu_pct", PCT, HIGHER, "model FLOPs utilisation", modes=CAPTURE_MODES, device_only=True),
    # what a configuration costs once (capturing/passes/one_time.py) and how far its outputs are
    # from eager float32 (metrics/agreement.py; docs/knobs.md)
    _m("first_call_ms", MS, LOWER, "first call", "row", modes=CAPTURE_MODES),
    _m("setup_s", S, LOWER, "one-time setup", "row", modes=CAPTURE_MODES),
    _m("output_max_abs_diff", "", LOWER, "outputs: max abs difference", "row", modes=CAPTURE_MODES),
    _m("output_max_rel_diff", "", LOWER, "outputs: max relative difference", "row", modes=CAPTURE_MODES),
    _m("detections_matched_pct", PCT, HIGHER, "detections matched", "row", modes=("infer",)),
)
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}

# Families: (pattern, unit, better, label template, device_only). The first match wins; the
# label template gets the pattern's first group.
FAMILIES: tuple[tuple[re.Pattern[str], str, str | None, str, bool], ...] = (
    (re.compile(r"(.+)_wall_ms"), MS, LOWER, "{} wall", False),
    (re.compile(r"(.+)_device_ms"), MS, LOWER, "{} device", True),
    (re.compile(r"(.+)_kernels"), COUNT, None, "{} kernels/step", True),
    (re.compile(r"(.+)_ops"), COUNT, None, "{} ops/step", False),
    (re.compile(r"p(\d+)_ms"), MS, LOWER, "p{} latency", False),
    (re.compile(r"(.+)_ms"), MS, LOWER, "{}", False),
    (re.compile(r"(.+)_us"), US, LOWER, "{}", False),
    (re.compile(r"(.+)_mi?b"), MIB, LOWER, "{}", False),
    (re.compile(r"(.+)_pct"), PCT, None, "{}", False),
    (re.compile(r"(.+)_per_s"), "1/s", HIGHER, "{} per second", False),
)
TRACE_PREFIX = "trace_"  # capture keeps the trace pass's own figure of a timed metric under this


def spec(name: str) -> Metric:
    """The registry entry of `name`, resolving families; a neutral entry for unknown names."""
    if name in BY_NAME:
        return BY_NAME[name]
    if name.startswith(TRACE_PREFIX) and len(name) > len(TRACE_PREFIX):
        base = spec(name[len(TRACE_PREFIX):])
        return replace(base, name=name, label=f"{base.label} (trace pass)", roles=frozenset())
    for pattern, unit, better, label, device_only in FAMILIES:
        hit = pattern.fullmatch(name)
        if hit:
            return Metric(name, unit, better, label.format(hit.group(1)), ALL_MODES, frozenset(), device_only)
    return Metric(name, "", None, name, ALL_MODES, frozenset(), False)


def unit(name: str) -> str:
    return spec(name).unit


def better(name: str) -> str | None:
    return spec(name).better


def label(name: str) -> str:
    return spec(name).label


def device_only(name: str) -> bool:
    return spec(name).device_only


def names(role: str, modes: Iterable[str] | None = None) -> tuple[str, ...]:
    """The metrics of one role, in registry order; with `modes`, only those that exist in one of
    them (a train-only sweep does not default to comparing latency percentiles)."""
    wanted = None if modes is None else set(modes)
    return tuple(m.name for m in METRICS
                 if role in m.roles and (wanted is None or wanted & set(m.modes)))


# The one number per mode of the sweep's live job table.
MODE_HEADLINE = {"train": "img_per_s", "infer": "p50_ms"}
