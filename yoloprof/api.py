"""The public Python API (re-exported lazily by `yoloprof/__init__.py`; docs/CONTRACTS.md "Public
API"). Small functions over the private modules, returning data and never printing:

    p = yoloprof.load("runs/profile/train/profile.json")   # or any Kineto trace
    p.summary(); p.phases(); p.kernels(top=10); p.ops(); p.get("step_ms")   # one method per reader
    p.modules(depth=1); p.hotspots(); p.what_if(remove_launches=100); p.compare("other.json")
    yoloprof.compare(a, b, alpha=0.05)                        # paths or Profile objects
    yoloprof.capture(yoloprof.CaptureSettings(model=my_module, device="cpu"), "out/")
    yoloprof.read_results("runs/profile/sweeps/demo/<id>")   # pandas DataFrame, one row per job
    yoloprof.analyze("runs/profile/sweeps/demo/<id>")        # AnalysisResult of view tables

Errors are yoloprof.errors types (ProfileError for a profile that fails validation, UsageError for
a bad path or option), the same ones the CLI turns into exit codes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, cast

from yoloprof.config.stat_defaults import ALPHA, NOISE
from yoloprof.defs.json_types import JSON, JSONObject, Rows
from yoloprof.errors import UsageError, YoloprofError
from yoloprof.readers.results import (
    CompareResult,
    GetResult,
    HotspotsResult,
    KernelsResult,
    LaunchesResult,
    ModulesResult,
    OpsResult,
    PhasesResult,
    ReportResult,
    SummaryResult,
    WhatIfResult,
)
from yoloprof.readers.table import (
    BY_NAME,
    CompareOptions,
    GetOptions,
    HotspotsOptions,
    KernelsOptions,
    ModulesOptions,
    NoOptions,
    OpsOptions,
    Reader,
    ReportOptions,
    SummaryOptions,
    WhatIfOptions,
)

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    from yoloprof.analysis.run import AnalysisResult
    from yoloprof.config.capture_settings import CaptureSettings

PathLike = str | os.PathLike[str]


def resolve(dotted: str) -> Callable[..., Any]:
    """A render/ function the reader table names ("module:function"), imported when first used."""
    import importlib

    module, attr = dotted.split(":")
    return cast(Callable[..., Any], getattr(importlib.import_module(module), attr))


def read_with(reader: Reader, data: dict[str, Any], source: str, options: object) -> dict[str, Any]:
    """One reader's result as `yoloprof <reader> --json` prints it: compute, then (report) write."""
    from yoloprof.render.jsonout import as_json

    result = dict(reader.compute(data, source, options))
    if reader.write is not None:
        result = dict(resolve(reader.write)(result, source, options))
    return cast(dict[str, Any], as_json(result))  # NaN -> None, tuples -> lists, as --json prints


class Profile:
    """A loaded, validated profile: a profile.json or a raw Kineto trace (kind "trace").

    One method per reader of the table (readers/table.py; `yoloprof <reader>` on the CLI), with
    the CLI's options as keyword arguments and the result `yoloprof <reader> --json` prints
    (readers/results.py names its keys); `data` is the profile itself (schema
    yoloprof.profile/1, DESIGN.md section 4)."""

    def __init__(self, data: JSONObject, source: str = "<memory>") -> None:
        self.data = data
        self.source = source

    @property
    def kind(self) -> str:
        return str(self.data.get("kind"))

    @property
    def metrics(self) -> dict[str, dict[str, JSON]]:
        """name -> {value, unit, better, samples, std, n}."""
        return cast(dict[str, dict[str, JSON]], dict(cast(JSONObject, self.data.get("metrics") or {})))

    def _read(self, name: str, options: object) -> dict[str, Any]:
        return read_with(BY_NAME[name], self.data, self.source, options)

    def summary(self, per_step: bool = False) -> SummaryResult:
        """`per_step`: each step's GPU figures from the trace beside the profile (`--per-step`)."""
        return cast(SummaryResult, self._read("summary", SummaryOptions(per_step=per_step)))

    def report(self, output: str | None = None) -> ReportResult:
        """Write the self-contained HTML report (default: capture_report.html beside the source
        file) and return its path and recommendations."""
        if self.source == "<memory>":
            raise UsageError("report: this Profile was not loaded from a file (yoloprof.load(path))")
        return cast(ReportResult, self._read("report", ReportOptions(output=output)))

    def phases(self) -> PhasesResult:
        return cast(PhasesResult, self._read("phases", NoOptions()))

    def kernels(self, top: int = 20, category: str | None = None, grep: str | None = None,
                tensorcore: bool = False, sort: str = "time", phase: str | None = None,
                by_launch: bool = False) -> KernelsResult | LaunchesResult:
        """The kernel table after filters (`top <= 0` = all rows); `by_launch`: one row per launch
        configuration from the trace (a LaunchesResult)."""
        return cast(KernelsResult | LaunchesResult, self._read("kernels", KernelsOptions(
            top=top, category=category, grep=grep, tensorcore=tensorcore, sort=sort, phase=phase,
            by_launch=by_launch)))

    def ops(self, top: int = 20, phase: str | None = None, sort: str = "self", shapes: bool = False) -> OpsResult:
        return cast(OpsResult, self._read("ops", OpsOptions(top=top, phase=phase, sort=sort, shapes=shapes)))

    def modules(self, depth: int | None = None, sort: str = "tree", top: int = 0) -> ModulesResult:
        """Forward/backward time per nn.Module (a capture's `modules` section)."""
        return cast(ModulesResult, self._read("modules", ModulesOptions(depth=depth, sort=sort, top=top)))

    def hotspots(self, sort: str = "cum", top: int = 25, grep: str | None = None) -> HotspotsResult:
        """Python functions by self and cumulative time (a capture's `hotspots` section)."""
        return cast(HotspotsResult, self._read("hotspots", HotspotsOptions(sort=sort, top=top, grep=grep)))

    def what_if(self, remove_category: str | None = None, remove_launches: int | None = None) -> WhatIfResult:
        """As `yoloprof what-if`: remove_category, remove_launches, or both (combined as libreyolo combines them)."""
        return cast(WhatIfResult, self._read("what-if", WhatIfOptions(remove_category=remove_category,
                                                                       remove_launches=remove_launches)))

    def get(self, field: str | None = None) -> JSON:
        """One field's value (`step_ms`, `config.batch`, ...), what `yoloprof get P FIELD` prints
        (its --json row's "value"); no field: the rows of every field (--json's "fields").
        UsageError listing the valid ones. The unit of a metric is `p.metrics[name]["unit"]`."""
        row = cast(GetResult, self._read("get", GetOptions(field=field)))
        return cast(JSON, row["fields"]) if field is None else row.get("value")

    def fields(self) -> Rows:
        """Every field `get` accepts, with its value and unit."""
        return cast(Rows, self.get())

    def compare(self, after: Side, metrics: list[str] | None = None, alpha: float = ALPHA,
                noise: float = NOISE, noise_file: str | None = None) -> CompareResult:
        """This profile (before) against `after` (a path, Profile, dict, or a list of them, one per
        process): `yoloprof compare BEFORE AFTER`."""
        return compare(self, after, metrics=metrics, alpha=alpha, noise=noise, noise_file=noise_file)

    def __repr__(self) -> str:
        return f"<yoloprof.Profile kind={self.kind} source={self.source!r}>"


# A side of a comparison: one profile (a path, a Profile, a profile dict) or one per process.
One = Profile | PathLike | JSONObject
Side = One | list[One] | tuple[One, ...]


def load(path: PathLike, steps: str | None = None, window: str | None = None) -> Profile:
    """A validated Profile from a profile.json or a Kineto trace (.json / .json.gz); `steps`
    ("4-6", "5") or `window` ("120:480", ms from the first event): only those steps of a trace
    are analysed (`--steps` / `--window` of the readers; readers/select.py)."""
    from yoloprof.readers.load import load_any

    if steps is None and window is None:
        return Profile(load_any(path), str(path))
    from yoloprof.readers.select import parse_steps, parse_window
    from yoloprof.traces.step_selection import StepSelection

    return Profile(load_any(path, select=StepSelection(parse_steps(steps), parse_window(window))), str(path))


def _as_profile(x: One) -> dict[str, Any]:
    if isinstance(x, Profile):
        return x.data
    if isinstance(x, dict):
        from yoloprof.profiles.io import check_version
        from yoloprof.profiles.validate import validate_profile

        check_version(x, "<dict>")
        validate_profile(x, "<dict>")
        return x
    return load(x).data


def compare(before: Side, after: Side, *, metrics: list[str] | None = None, alpha: float = ALPHA,
            noise: float = NOISE, noise_file: str | None = None,
            floors: Mapping[str, float] | None = None) -> CompareResult:
    """As `yoloprof compare`: per metric both sides, the change and the significance verdict, the
    process being the unit of replication. Each side is a profile (path, Profile or dict) or a
    list of them, one per process (e.g. repeated captures). `floors` ({metric: floor}) replaces
    the stored noise floors; `noise_file` names the store."""
    sides = []
    for side, x in (("before", before), ("after", after)):
        try:
            sides.append([_as_profile(p) for p in x] if isinstance(x, (list, tuple)) else [_as_profile(x)])
        except YoloprofError as exc:  # say which side failed
            raise type(exc)(f"{side}: {exc}") from None
    options = CompareOptions(metrics=metrics, alpha=alpha, noise=noise, noise_file=noise_file)
    from yoloprof.render.jsonout import as_json

    return cast(CompareResult, as_json(dict(BY_NAME["compare"].compute(sides[0], sides[1], options, floors))))


# An A/B side: a capture command line, a CaptureSettings, or a module-level callable.
ABSide = Union[str, list[str], "CaptureSettings", Callable[[], object]]


def ab(a: ABSide, b: ABSide, *, metrics: list[str] | None = None, alpha: float | None = None,
       noise: float | None = None, max_runs: int = 20, budget_s: float | None = None,
       out_dir: PathLike | None = None, warmup: int = 3, trials: int = 5, calls: int = 10,
       device: str = "cpu") -> CompareResult:
    """A/B in fresh alternating processes (A B B A ...) until decided or a budget ends, then the
    `compare` result of all of them (key "ab": the order, looks and why it stopped). A side is a
    capture command line (str), a CaptureSettings, or a module-level callable timed like PyG's
    `benchmark` (warmup, trials, calls, device: how a callable side is timed)."""
    import tempfile

    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.sweep import ab as _ab

    def runner(x: ABSide) -> Callable[[int, Path], dict[str, Any]]:
        if isinstance(x, (str, list)):
            return _ab.command_runner(x)
        if isinstance(x, CaptureSettings):
            return _ab.settings_runner(x)
        if callable(x):
            return _ab.callable_runner(x, warmup=warmup, trials=trials, calls=calls, device=device)
        raise UsageError(f"ab: a side is a command line, CaptureSettings or callable, not {type(x).__name__}")

    metric = (metrics or ["step_ms"])[0]
    with tempfile.TemporaryDirectory(prefix="yoloprof-ab-") as tmp:
        run = _ab.run_ab(runner(a), runner(b), Path(out_dir or tmp), metric=metric,
                         alpha=ALPHA if alpha is None else alpha, noise=NOISE if noise is None else noise,
                         max_runs=max_runs, budget_s=budget_s)
    from yoloprof.render.jsonout import as_json

    return cast(CompareResult, as_json(_ab.ab_compare(run, metrics=metrics, noise=NOISE if noise is None else noise)))


def capture(settings: CaptureSettings, out_dir: PathLike = "runs/profile/api", *, progress: bool = False,
            project: PathLike | None = None) -> Profile:
    """Run a capture (timing trials, then the trace pass) and write `out_dir/profile.json`;
    `settings` is a CaptureSettings (its `model` may be "yolo", a dotted factory path, a factory
    callable or an nn.Module instance, which is copied, never modified). Its row is added to the
    results store of `project` (default: `out_dir` itself, `out_dir/results/`: nothing is written
    outside the folder named unless `project` says where, as with `yoloprof.profile`;
    docs/history.md)."""
    from yoloprof.capturing.builtin.capture_entry import capture as _capture
    from yoloprof.capturing.builtin.store_record import record_capture
    from yoloprof.defs.files import PROFILE
    from yoloprof.profiles.rows import utc_now

    started = utc_now()
    data = _capture(settings, Path(out_dir), progress=progress)
    record_capture(data, settings, out_dir, source="api", project=out_dir if project is None else project,
                   started_at=started,
                   wall_s=(utc_now() - started).total_seconds())
    return Profile(data, str(Path(out_dir) / PROFILE))


def read_results(sweep_dir: PathLike) -> pd.DataFrame:
    """Every job's row of a sweep folder as a pandas DataFrame (the sweep rows schema, one row per
    job, corrupt row files listed in `df.attrs["corrupt_rows"]`)."""
    from yoloprof.profiles.rows import read_rows

    folder = Path(sweep_dir)
    if not folder.is_dir():
        raise UsageError(f"no such sweep folder: {folder}")
    return read_rows(folder)


def analyze(sweep_dir: PathLike, *, baseline: list[str] | None = None, vary: str | None = None,
            metrics: list[str] | None = None, alpha: float | None = None, noise: float | None = None,
            correction: str | None = None, auto_baseline: bool = False, name: str | None = None,
            output_tol: float | None = None) -> AnalysisResult:
    """The analysis stages over a sweep folder, computed only (no files, nothing printed): an
    AnalysisResult with `.comparisons`, `.best`, `.pareto`, `.scaling`, `.notes`, `.to_json()`.
    Options as `yoloprof analyze` (unset: the sweep's recorded settings): baseline=[KEY=VALUE],
    vary=AXIS, metrics=[...], alpha, noise, correction (holm, bh, none), output_tol."""
    from yoloprof.analysis.folder import check_sweep_folder
    from yoloprof.analysis.run import analyze as _analyze

    check_sweep_folder(Path(sweep_dir))
    return _analyze(Path(sweep_dir), baseline=baseline, vary=vary, metrics=metrics, alpha=alpha, noise=noise,
                    correction=correction, auto_baseline=auto_baseline, name=name, output_tol=output_tol)
