"""The public Python API (re-exported lazily by `yoloprof/__init__.py`; docs/CONTRACTS.md "Public
API"). Small functions over the private modules, returning data and never printing:

    p = yoloprof.load("runs/profile/train/profile.json")   # or any Kineto trace
    p.summary(); p.phases(); p.kernels(top=10); p.ops(); p.get("step_ms")
    yoloprof.compare(a, b, alpha=0.05)                        # paths or Profile objects
    yoloprof.capture(yoloprof.CaptureSettings(model=my_module, device="cpu"), "out/")
    yoloprof.read_results("runs/profile/sweeps/demo/<id>")   # pandas DataFrame, one row per job
    yoloprof.analyze("runs/profile/sweeps/demo/<id>")        # AnalysisResult of view tables

Errors are yoloprof.errors types (ProfileError for a profile that fails validation, UsageError for
a bad path or option), the same ones the CLI turns into exit codes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Union

from yoloprof.errors import UsageError, YoloprofError

PathLike = Union[str, "os.PathLike[str]"]


class Profile:
    """A loaded, validated profile: a profile.json or a raw Kineto trace (kind "trace").

    The readers' results are plain dicts (what `yoloprof <reader> --json` prints); `data` is the
    profile itself (schema yoloprof.profile/1, DESIGN.md section 4)."""

    def __init__(self, data: dict[str, Any], source: str = "<memory>") -> None:
        self.data = data
        self.source = source

    @property
    def kind(self) -> str:
        return str(self.data.get("kind"))

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """name -> {value, unit, better, samples, std, n}."""
        return dict(self.data.get("metrics") or {})

    def summary(self) -> dict[str, Any]:
        from yoloprof.readers.summary import compute_summary

        return compute_summary(self.data)

    def phases(self) -> dict[str, Any]:
        from yoloprof.readers.phases import compute_phases

        return compute_phases(self.data)

    def kernels(self, top: int = 20, **filters: Any) -> dict[str, Any]:
        """Filters as `yoloprof kernels`: category, grep, tensorcore, sort, phase."""
        from yoloprof.readers.kernels import compute_kernels

        return compute_kernels(self.data, top=top, **filters)

    def ops(self, top: int = 20, phase: str | None = None) -> dict[str, Any]:
        from yoloprof.readers.ops import compute_ops

        return compute_ops(self.data, top=top, phase=phase)

    def what_if(self, **change: Any) -> dict[str, Any]:
        """As `yoloprof what-if`: remove_category=... or remove_launches=..."""
        from yoloprof.readers.what_if import compute_what_if

        return compute_what_if(self.data, **change)

    def get(self, name: str) -> Any:
        """One field's value (`step_ms`, `config.batch`, ...); UsageError listing the valid ones.
        The unit of a metric is `p.metrics[name]["unit"]`."""
        from yoloprof.readers.get import compute_get

        return compute_get(self.data, name)["value"]

    def fields(self) -> list[dict[str, Any]]:
        """Every field `get` accepts, with its value and unit."""
        from yoloprof.readers.get import compute_get

        return compute_get(self.data, None)["fields"]

    def __repr__(self) -> str:
        return f"<yoloprof.Profile kind={self.kind} source={self.source!r}>"


def load(path: PathLike) -> Profile:
    """A validated Profile from a profile.json or a Kineto trace (.json / .json.gz)."""
    from yoloprof.readers.load import load_any

    return Profile(load_any(path), str(path))


def _as_profile(x: Profile | PathLike | dict[str, Any]) -> dict[str, Any]:
    if isinstance(x, Profile):
        return x.data
    if isinstance(x, dict):
        from yoloprof.profiles.io import check_version
        from yoloprof.profiles.validate import validate_profile

        check_version(x, "<dict>")
        validate_profile(x, "<dict>")
        return x
    return load(x).data


def compare(before: Any, after: Any, **opts: Any) -> dict[str, Any]:
    """As `yoloprof compare`: per metric both sides, the change and the significance verdict, the
    process being the unit of replication. Each side is a profile (path, Profile or dict) or a
    list of them, one per process (e.g. repeated captures). Options: metrics=[...], alpha=0.05,
    noise=0.02, floors={metric: floor}, noise_file=PATH."""
    from yoloprof.readers.compare import compute_compare

    sides = []
    for side, x in (("before", before), ("after", after)):
        try:
            sides.append([_as_profile(p) for p in x] if isinstance(x, (list, tuple)) else _as_profile(x))
        except YoloprofError as exc:  # say which side failed
            raise type(exc)(f"{side}: {exc}") from None
    return compute_compare(sides[0], sides[1], **opts)


def ab(a: Any, b: Any, *, metrics: list[str] | None = None, alpha: float | None = None,
       noise: float | None = None, max_runs: int = 20, budget_s: float | None = None,
       out_dir: PathLike | None = None, **callable_opts: Any) -> dict[str, Any]:
    """A/B in fresh alternating processes (A B B A ...) until decided or a budget ends, then the
    `compare` result of all of them (key "ab": the order, looks and why it stopped). A side is a
    capture command line (str), a CaptureSettings, or a module-level callable timed like PyG's
    `benchmark` (callable_opts: warmup=3, trials=5, calls=10, device="cpu")."""
    import tempfile

    from yoloprof.config.capture_settings import CaptureSettings
    from yoloprof.config.stat_defaults import ALPHA, NOISE
    from yoloprof.sweep import ab as _ab

    def runner(x: Any) -> Any:
        if isinstance(x, (str, list)):
            return _ab.command_runner(x)
        if isinstance(x, CaptureSettings):
            return _ab.settings_runner(x)
        if callable(x):
            return _ab.callable_runner(x, **callable_opts)
        raise UsageError(f"ab: a side is a command line, CaptureSettings or callable, not {type(x).__name__}")

    metric = (metrics or ["step_ms"])[0]
    with tempfile.TemporaryDirectory(prefix="yoloprof-ab-") as tmp:
        run = _ab.run_ab(runner(a), runner(b), Path(out_dir or tmp), metric=metric,
                         alpha=ALPHA if alpha is None else alpha, noise=NOISE if noise is None else noise,
                         max_runs=max_runs, budget_s=budget_s)
    return _ab.ab_compare(run, metrics=metrics, noise=NOISE if noise is None else noise)


def capture(settings: Any, out_dir: PathLike = "runs/profile/api", *, progress: bool = False,
            project: PathLike | None = None) -> Profile:
    """Run a capture (timing trials, then the trace pass) and write `out_dir/profile.json`;
    `settings` is a CaptureSettings (its `model` may be "yolo", a dotted factory path, a factory
    callable or an nn.Module instance, which is copied, never modified). Its row is added to the
    results store of `project` (default: out_dir's parent; docs/history.md)."""
    from yoloprof.capturing.builtin.capture_entry import capture as _capture
    from yoloprof.defs.files import PROFILE

    from yoloprof.capturing.builtin.store_record import record_capture
    from yoloprof.profiles.rows import utc_now

    started = utc_now()
    data = _capture(settings, Path(out_dir), progress=progress)
    record_capture(data, settings, out_dir, source="api", project=project, started_at=started,
                   wall_s=(utc_now() - started).total_seconds())
    return Profile(data, str(Path(out_dir) / PROFILE))


def read_results(sweep_dir: PathLike) -> Any:
    """Every job's row of a sweep folder as a pandas DataFrame (the sweep rows schema, one row per
    job, corrupt row files listed in `df.attrs["corrupt_rows"]`)."""
    from yoloprof.profiles.rows import read_rows

    folder = Path(sweep_dir)
    if not folder.is_dir():
        raise UsageError(f"no such sweep folder: {folder}")
    return read_rows(folder)


def analyze(sweep_dir: PathLike, **opts: Any) -> Any:
    """The analysis stages over a sweep folder, computed only (no files, nothing printed): an
    AnalysisResult with `.comparisons`, `.best`, `.pareto`, `.scaling`, `.notes`, `.to_json()`.
    Options as `yoloprof analyze`: baseline=[...], vary=..., metrics=[...], alpha, noise,
    correction."""
    from yoloprof.analysis.folder import check_sweep_folder
    from yoloprof.analysis.run import analyze as _analyze

    check_sweep_folder(sweep_dir)
    return _analyze(sweep_dir, **opts)
