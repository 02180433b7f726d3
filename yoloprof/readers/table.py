"""The reader table: one entry per reader (name, compute, render, options), from which the CLI
builds its reader subcommands (`yoloprof.cli`) and against which every `yoloprof.Profile`
method is checked (tests/test_readers_table.py). Adding a reader is one entry here, its compute
function in readers/ and its renderer in render/ (docs/CONTRACTS.md "Adding a reader").

Why a table: the CLI's flags, the Python API's keyword arguments and their defaults were written
twice and had drifted (`modules` and `hotspots` existed only on the CLI). Each reader's options
are a frozen dataclass whose fields carry what argparse needs (flag, help, choices) in their
metadata; its type and default are the field's own, so the CLI and `Profile` read one home.

Renderers are named by dotted path ("module:function" in render/) and resolved by the layer
above (cli or api): readers/ sits below render/ in the import layers and never imports it.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from yoloprof.config.fields import flag_name
from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.errors import UsageError
from yoloprof.readers import hotspots, kernels, modules, ops
from yoloprof.readers import results as res
from yoloprof.readers.options import option

ProfileData = dict[str, Any]  # a validated profile (DESIGN.md section 4), as readers.load returns it
Compute = Callable[..., Mapping[str, Any]]


@dataclass(frozen=True)
class OptionSpec:
    """One option as the CLI and the API see it (derived from an options dataclass field)."""
    name: str
    type: type
    default: Any
    help: str | None
    flag: str | None
    short: str | None
    choices: tuple[str, ...] | None
    action: str | None
    nargs: str | None
    metavar: str | None


def _scalar(hint: Any) -> type:
    """int for `int | None`, bool for `bool`, ... (the value type argparse converts to)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if args else hint
    return base if isinstance(base, type) else str


def option_specs(options: type) -> tuple[OptionSpec, ...]:
    """The options of a reader's dataclass in field order (the order of its CLI flags)."""
    hints = typing.get_type_hints(options)
    out = []
    for f in fields(options):
        m = f.metadata
        flag = m.get("flag", "")
        out.append(OptionSpec(f.name, _scalar(hints[f.name]), f.default, m.get("help"),
                              None if flag is None else flag_name(f.name, flag), m.get("short"),
                              m.get("choices"), m.get("action"), m.get("nargs"), m.get("metavar")))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# options (one frozen dataclass per reader; the field order is the CLI's)

@dataclass(frozen=True)
class Selection:
    """--steps / --window: which steps of a trace are analysed (readers/select.py). A load-time
    choice: `yoloprof.load(path, steps=..., window=...)` in the API."""
    steps: str | None = option(None, "only these ProfilerStep numbers of a trace (4-6, or 5)")
    window: str | None = option(None, "only the steps starting in START:END, ms from the trace's first event")


@dataclass(frozen=True)
class Folder:
    """A folder of rank traces (the multi-rank view): CLI only, a Profile is one trace."""
    jobs: int | None = option(None, "processes parsing a folder of rank traces (default: one per core)")
    ranks: str | None = option(None, "a folder of rank traces: only these ranks (0,3 or 0-7)")


@dataclass(frozen=True)
class NoOptions:
    """A reader without options (phases)."""


@dataclass(frozen=True)
class SummaryOptions:
    """`yoloprof summary`."""

    per_step: bool = option(False, "each step's time, device busy, kernels, phases, SM efficiency and "
                            "occupancy; the slowest marked")


@dataclass(frozen=True)
class ReportOptions:
    """`yoloprof report`: where the HTML goes."""

    output: str | None = option(None, "the HTML file (default: capture_report.html beside the input)",
                                short="-o")


@dataclass(frozen=True)
class GetOptions:
    """`yoloprof get [FIELD]`: the field (none = list them)."""

    field: str | None = option(None, flag=None, nargs="?")


CATEGORY_HELP = "a category, or a unique prefix/substring of one (gemm -> gemm/conv)"


@dataclass(frozen=True)
class KernelsOptions:
    """`yoloprof kernels`: filters, sort and row count (`top <= 0` = all)."""

    top: int = option(20)
    category: str | None = option(None, CATEGORY_HELP)
    grep: str | None = option(None, "regular expression on the kernel name")
    tensorcore: bool = option(False, "only Tensor Core kernels")
    sort: str = option("time", choices=tuple(kernels.SORTS))
    phase: str | None = option(None)
    by_launch: bool = option(False, "one row per (kernel, calling op, grid, block, registers, shared "
                             "memory), from the trace (a profile's own trace file)")


@dataclass(frozen=True)
class OpsOptions:
    """`yoloprof ops`: phase, sort, per input shapes, row count."""

    top: int = option(20)
    phase: str | None = option(None)
    sort: str = option("self", choices=tuple(ops.SORTS))
    shapes: bool = option(False, "one row per (op, input shapes) when the trace recorded shapes")


@dataclass(frozen=True)
class ModulesOptions:
    """`yoloprof modules`: depth, sort, row count (0 = all)."""

    depth: int | None = option(None, "deepest module level shown (0 = the model)")
    sort: str = option("tree", choices=tuple(modules.SORTS))
    top: int = option(0, "rows shown (0 = all)")


@dataclass(frozen=True)
class HotspotsOptions:
    """`yoloprof hotspots`: sort, row count, file:function filter."""

    sort: str = option("cum", choices=tuple(hotspots.SORTS))
    top: int = option(25)
    grep: str | None = option(None, "regular expression on file:function")


@dataclass(frozen=True)
class WhatIfOptions:
    """`yoloprof what-if`: exactly one change."""

    remove_category: str | None = option(None, CATEGORY_HELP)
    remove_launches: int | None = option(None)


@dataclass(frozen=True)
class CompareOptions:
    """The options `yoloprof.compare` and `Profile.compare` share with `yoloprof compare` (whose
    other flags run captures or pick files: cli.py builds that subcommand itself)."""
    # option() is a field with the CLI's metadata, a frozen default (ruff cannot see it)
    metrics: list[str] | None = option(None, "repeatable; default: headline metrics",  # noqa: RUF009
                                       flag="--metric", action="append")
    alpha: float = option(ALPHA)
    noise: float = option(NOISE)
    noise_file: str | None = option(None, "the noise-floor store (default: per user)")


# --------------------------------------------------------------------------------------------
# the table

@dataclass(frozen=True)
class Reader:
    """One reader. `compute(data, source, options)` returns the JSON result (`source`: the path
    the profile was read from, for readers that also read the trace beside it); `render` names
    the renderer of the text format, `(result, source) -> None` (`formats`: every format's); `write` (report) names a render/
    function `(result, source, options) -> result` that writes the reader's file and returns what
    is printed. `sides`: 2 for compare (compute(before_list, after_list, options))."""
    name: str
    help: str
    options: type
    compute: Compute
    render: str
    selection: bool = False
    folder: bool = False
    one_of: tuple[str, ...] = ()  # a required choice of exactly one of these options
    write: str | None = None
    results: tuple[type, ...] = ()  # the result's TypedDict(s), readers/results.py
    sides: int = 1
    cli_built: bool = True  # False: cli.py builds the subcommand itself (compare)

    @property
    def formats(self) -> dict[str, str]:
        """Output format -> its renderer: `text` (the reader's own view) and `json` (the result as
        it is, what the Profile method returns)."""
        return {"text": self.render, "json": JSON_VIEW}

    @property
    def method(self) -> str:
        """The `yoloprof.Profile` method."""
        return self.name.replace("-", "_")

    def specs(self) -> tuple[OptionSpec, ...]:
        return option_specs(self.options)

    def make(self, values: Mapping[str, Any]) -> Any:
        """The options dataclass from a mapping holding (at least) its fields (argparse's vars)."""
        return self.options(**{f.name: values[f.name] for f in fields(self.options)})


def _summary(data: ProfileData, source: str, o: SummaryOptions) -> Mapping[str, Any]:
    from yoloprof.readers.summary import compute_summary

    result = compute_summary(data)
    if o.per_step:  # issue 27: the trace's per-step GPU figures too
        from yoloprof.readers.detail import NO_TRACE, read_detail
        from yoloprof.readers.steps import compute_steps

        detail = read_detail(source, data)
        result["steps"] = compute_steps(data, detail["gpu"]["steps"] if detail else None)
        result["steps"]["gpu_na"] = None if detail else NO_TRACE
        result["gpu_metrics"] = detail["gpu"] if detail else None
        result["plugin_breakdown"] = detail["breakdown"] if detail else None
    return result


def _report(data: ProfileData, source: str, o: ReportOptions) -> Mapping[str, Any]:
    from yoloprof.defs import files
    from yoloprof.readers.capture_report import compute_capture_report

    out = o.output or os.path.join(os.path.dirname(os.path.abspath(source)), files.CAPTURE_REPORT_HTML)
    if os.path.isdir(out):
        raise UsageError(f"-o {out}: is a folder; give the HTML file to write")
    return {"report": out, "data": compute_capture_report(source, data)}


def _get(data: ProfileData, source: str, o: GetOptions) -> Mapping[str, Any]:
    from yoloprof.readers.get import compute_get

    return compute_get(data, o.field)


def _phases(data: ProfileData, source: str, o: NoOptions) -> Mapping[str, Any]:
    from yoloprof.readers.phases import compute_phases

    return compute_phases(data)


def _kernels(data: ProfileData, source: str, o: KernelsOptions) -> Mapping[str, Any]:
    if o.by_launch:
        from yoloprof.readers.detail import NO_TRACE, read_detail

        detail = read_detail(source, data, top=o.top)
        if detail is None:
            raise UsageError(f"{source}: --by-launch: {NO_TRACE}")
        return {"launches": detail["launches"], "gpu": detail["gpu"]}
    return kernels.compute_kernels(data, top=o.top, category=o.category, grep=o.grep, tensorcore=o.tensorcore,
                                   sort=o.sort, phase=o.phase)


def _ops(data: ProfileData, source: str, o: OpsOptions) -> Mapping[str, Any]:
    return ops.compute_ops(data, top=o.top, phase=o.phase, sort=o.sort, shapes=o.shapes)


def _modules(data: ProfileData, source: str, o: ModulesOptions) -> Mapping[str, Any]:
    return modules.compute_modules(data, depth=o.depth, sort=o.sort, top=o.top)


def _hotspots(data: ProfileData, source: str, o: HotspotsOptions) -> Mapping[str, Any]:
    return hotspots.compute_hotspots(data, sort=o.sort, top=o.top, grep=o.grep)


def _what_if(data: ProfileData, source: str, o: WhatIfOptions) -> Mapping[str, Any]:
    from yoloprof.readers.what_if import compute_what_if

    return compute_what_if(data, remove_category=o.remove_category, remove_launches=o.remove_launches)


def _compare(before: list[ProfileData], after: list[ProfileData], o: CompareOptions,
             floors: Mapping[str, float] | None = None) -> Mapping[str, Any]:
    from yoloprof.readers.compare import compute_compare

    return compute_compare(before, after, metrics=o.metrics, alpha=o.alpha, noise=o.noise,
                           floors=dict(floors) if floors is not None else None, noise_file=o.noise_file)


_R = "yoloprof.render.reader_views:"
JSON_VIEW = _R + "render_json"

READERS: tuple[Reader, ...] = (
    Reader("summary", "the broad reading of a profile or trace; a folder of rank traces gives the per-rank "
           "view", SummaryOptions, _summary, _R + "render_summary_view", selection=True, folder=True,
           results=(res.SummaryResult,)),
    Reader("report", "one capture's self-contained HTML report (overview, utilisation, kernels, ops, memory, "
           "modules, phases, recommendations)", ReportOptions, _report, _R + "print_report",
           write=_R + "write_report", results=(res.ReportResult,)),
    Reader("get", "one metric, for shell loops (no field = list the fields)", GetOptions, _get,
           _R + "render_get", results=(res.GetResult,)),
    Reader("phases", "per phase: device ms, wall ms, kernels, ops", NoOptions, _phases,
           _R + "render_phases", selection=True, results=(res.PhasesResult,)),
    Reader("kernels", "device kernels by share of device time", KernelsOptions, _kernels,
           _R + "render_kernels_view", selection=True, results=(res.KernelsResult, res.LaunchesResult)),
    Reader("ops", "framework view: aten/autograd ops by self CPU time", OpsOptions, _ops,
           _R + "render_ops", selection=True, results=(res.OpsResult,)),
    Reader("modules", "forward/backward time per nn.Module (inclusive, self), calls, memory", ModulesOptions,
           _modules, _R + "render_modules", results=(res.ModulesResult,)),
    Reader("hotspots", "Python functions by self and cumulative time (--python-hotspots)", HotspotsOptions,
           _hotspots, _R + "render_hotspots", results=(res.HotspotsResult,)),
    Reader("what-if", "estimate the gain of a change before writing it", WhatIfOptions, _what_if,
           _R + "render_what_if", results=(res.WhatIfResult,)),
    Reader("compare", "deltas and a significance verdict per metric", CompareOptions, _compare,
           _R + "render_compare", sides=2, cli_built=False, results=(res.CompareResult,)),
)
BY_NAME: dict[str, Reader] = {r.name: r for r in READERS}
SELECTION_SPECS = option_specs(Selection)
FOLDER_SPECS = option_specs(Folder)
