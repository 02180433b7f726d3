"""The named result types of the readers: what each `yoloprof <reader> --json` prints and what
the same `yoloprof.Profile` method returns (docs/CONTRACTS.md "Readers").

Why TypedDicts: the results are JSON documents (the CLI prints them as they are), so a dict that
names its keys is the honest type; the values inside rows are JSON values. The keys listed here
are checked against real results by tests/test_readers_table.py, so a reader that gains or loses
a key without this file changing fails there.
"""

import sys

if sys.version_info >= (3, 11):  # typing's own: typing_extensions is 8 ms of `get`'s start-up
    from typing import NotRequired, TypedDict
else:
    from typing_extensions import NotRequired, TypedDict

from yoloprof.defs.json_types import JSON, JSONObject, Rows


class SummaryResult(TypedDict):
    kind: str | None
    schema: str | None
    workload: JSONObject
    headline: Rows
    verdict: JSONObject
    device_time: Rows
    devices: Rows
    categories: Rows
    top_kernels: Rows
    has_device: bool
    latency: JSON
    stages: JSON
    phases: Rows
    trace: JSONObject
    warmup: JSONObject
    unreliable: JSON
    steps: JSONObject
    warnings: list[str]
    # the advice that fires without the trace's detail and names a `yoloprof tune` knob: rule, advice, try
    advice: Rows
    # the family's training recipe the step ran (readers/summary.train_recipe; None: not a training capture)
    train_recipe: JSON
    # with per_step=True (`summary --per-step`): the trace's per-step GPU figures
    gpu_metrics: NotRequired[JSON]
    plugin_breakdown: NotRequired[JSON]


class PhasesResult(TypedDict):
    kind: str | None
    step_ms: float | None
    has_device: bool
    phases: Rows
    totals: JSONObject
    unattributed_wall_ms: float | None
    warnings: list[str]


class KernelsResult(TypedDict):
    kind: str | None
    filters: JSONObject
    kernels: Rows
    matched: int
    total: int
    matched_ms_per_step: float | None
    kernel_ms_per_step: float | None
    memcpy_ms_per_step: float | None
    memset_ms_per_step: float | None
    device_activity_ms_per_step: float | None
    matched_pct: float | None
    warnings: list[str]


class LaunchesResult(TypedDict):
    """`kernels --by-launch`: one row per (kernel, calling op, launch configuration), from the
    trace, and the trace's GPU metrics."""
    launches: JSON
    gpu: JSON


class OpsResult(TypedDict):
    kind: str | None
    filters: JSONObject
    ops: Rows
    has_memory: bool
    matched: int
    total: int
    self_ms_per_step: float | None
    matched_self_ms_per_step: float | None
    calls_per_step: float | None
    mean_self_us: float | None
    step_ms: float | None
    warnings: list[str]


class ModulesResult(TypedDict):
    kind: str | None
    filters: JSONObject
    method: JSON
    timing: JSON
    steps: JSON
    backward_unattributed_ms: JSON
    modules: Rows
    matched: int
    total: int
    warnings: list[str]


class HotspotsResult(TypedDict):
    kind: str | None
    filters: JSONObject
    method: JSON
    steps: JSON
    functions: Rows
    matched: int
    total: int
    self_ms_kept: float
    warnings: list[str]


class WhatIfResult(TypedDict):
    kind: str | None
    mode: str
    change: JSONObject
    step_ms: float | None
    launches_per_step: float | None
    cost_per_launch_us: float | None
    host_ms: float | None
    device_ms: float | None
    host_ms_after: float | None
    device_ms_after: float | None
    bound_now: str
    bound_after: str
    predicted_step_ms: float | None
    saving_ms: float | None
    speedup: float | None
    assumptions: list[str]
    warnings: list[str]
    predicted_step_ms_if_cheapest: NotRequired[float | None]  # CPU profiles only


class GetResult(TypedDict):
    """`get FIELD`: the field's row; `get` without one: {"fields": [...]}."""
    field: NotRequired[str]
    value: NotRequired[JSON]
    unit: NotRequired[str]
    n: NotRequired[int]
    std: NotRequired[float | None]
    samples: NotRequired[list[float]]
    na: NotRequired[str]
    fields: NotRequired[Rows]


class ReportResult(TypedDict):
    """`report`: the HTML file written and the recommendations it shows."""
    report: str
    recommendations: Rows


class CompareResult(TypedDict):
    alpha: float
    noise: float
    kinds: list[JSON]
    processes: list[int]
    metrics: Rows
    deltas: Rows
    differences: Rows
    flagged: list[str]
    bound: JSONObject
    categories: Rows
    per_step: JSON
    notes: list[str]
    warnings: list[str]
    ab: NotRequired[JSON]  # `ab` / `compare --run-a/--run-b`: the order, looks and why it stopped
    one_time: JSON  # each side's setup_s, first_call_ms, outputs against eager float32 (readers/knob_costs.py)
