"""A capture's row, built below the sweep layer, and its entry in the project's results store.

`yoloprof run`, `yoloprof infer`, `yoloprof.capture(...)` and `yoloprof.profile(...)` build the same
typed row a sweep job writes (profiles/rows.py) from their profile and settings, and append it to
`<project>/results/` (profiles/store.py); the sweep job appends the row it wrote. The columns that
describe the settings and the environment have their one home here (sweep/job.py calls these).

The store never breaks a capture: a failure to append is one `yoloprof: warning:` line.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
from pathlib import Path
from typing import Any

from yoloprof import warn
from yoloprof.config.axes import row_values
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.defs import files
from yoloprof.profiles import store
from yoloprof.profiles.rows import row_from_profile


def settings_columns(settings: CaptureSettings, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """Hashes and axes of a row, from the exact settings the capture receives, resolved as the
    capture resolves them (canonical device, effective precision and thread count); a user task
    (sweep) enters the hashes, since it decides what runs. The axis columns are the settings' own
    (config/axes.py: every field declared a sweep axis)."""
    from yoloprof.config.translate import config_hash, group_hash

    settings = settings.resolved()
    return {"config_hash": config_hash(settings, task), "group_hash": group_hash(settings, task),
            **row_values(settings), "seed": settings.seed}


def environment_columns(launcher: str) -> dict[str, Any]:
    """Where and from which code: versions, host, launcher, and the commit (and dirty flag) of the
    user's working directory, which is the code that was profiled."""
    from yoloprof.capturing.device.environment import git_state, torch_version
    from yoloprof.defs.version import __version__

    commit, dirty = git_state(os.getcwd())
    return {"torch_version": torch_version(), "python_version": platform.python_version(),
            "hostname": socket.gethostname(), "launcher": launcher,
            "yoloprof_version": __version__, "git_commit": commit, "git_dirty": dirty}


def _loop_columns(profile: dict[str, Any]) -> dict[str, Any]:
    """Axes of a `yoloprof.profile` capture (no settings object): what its config says."""
    config = profile.get("config") or {}
    out = {"mode": profile.get("kind"), "model": config.get("model"), "device": config.get("device"),
           "precision": "float32"}
    for name in ("batch", "warmup", "steps", "repeat"):
        value = config.get(name)
        out[name] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return out


def profile_machine(profile: dict[str, Any]) -> dict[str, Any]:
    """The machine fingerprint (store.FINGERPRINT) of a profile: CPU and device model, torch and
    CUDA (or HIP) versions, and the intra-op threads the capture ran with."""
    env, config = profile.get("env") or {}, profile.get("config") or {}
    cuda = env.get("cuda") or (f"hip {env['hip']}" if env.get("hip") else None)
    threads = config.get("threads")
    if not (isinstance(threads, int) and threads > 0):
        threads = env.get("threads") if isinstance(env.get("threads"), int) else None
    return {"cpu_model": env.get("cpu_model"), "device_name": env.get("device_name"),
            "torch_version": env.get("torch"), "cuda_version": cuda or "none", "threads": threads}


def store_columns(profile: dict[str, Any], row: dict[str, Any], source: str) -> dict[str, Any]:
    """The columns the store adds: the machine (CPU model, CUDA/HIP version), the configuration
    key, the capture's identity (its profile's created_at) and where it came from."""
    machine = profile_machine(profile) if profile else {}
    extra = {"source": source, "cpu_model": machine.get("cpu_model"),
             "cuda_version": machine.get("cuda_version"), "profile_created_at": profile.get("created_at")}
    for name in ("device_name", "torch_version", "threads"):  # the row's own value unless it lacks one
        if row.get(name) is None and machine.get(name) is not None:
            extra[name] = machine[name]
    extra["config_key"] = store.config_key(row, profile.get("config") or {})
    return extra


def capture_row(profile: dict[str, Any], settings: CaptureSettings | None, *, source: str, project: Path,
                out_dir: Path, started_at: _dt.datetime | None = None, wall_s: float | None = None) -> dict[str, Any]:
    """The typed row of one capture outside a sweep (sweep columns null), with the store's columns."""
    base = {**(settings_columns(settings) if settings is not None else _loop_columns(profile)),
            **environment_columns(os.environ.get("YOLOPROF_LAUNCHER", "cli")),
            "started_at": started_at, "wall_s": wall_s, "profile_path": _relative(out_dir / files.PROFILE, project)}
    row = row_from_profile(profile, base)
    row.update(store_columns(profile, row, source))
    return row


def _relative(path: Path, project: Path) -> str:
    try:
        return path.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def record(project: str | os.PathLike, build: Any) -> Path | None:
    """Append the row `build()` returns to the project's store; any failure (a read-only folder,
    a full disk, a bug) is a warning, never the capture's failure. None when the store is off."""
    if not store.enabled():
        return None
    try:
        return store.append(Path(project), build())
    except Exception as exc:  # noqa: BLE001 - the store must never break a capture
        warn.emit(f"the capture was not added to the results store {store.store_dir(project)}: "
                  f"{type(exc).__name__}: {exc}")
        return None


def record_capture(profile: dict[str, Any], settings: CaptureSettings | None, out_dir: str | os.PathLike, *,
                   source: str, project: str | os.PathLike | None = None,
                   started_at: _dt.datetime | None = None, wall_s: float | None = None) -> Path | None:
    """Append a capture written to `out_dir` to `project`'s store (default: out_dir's parent, as
    `<project>/train`, `<project>/infer`, `runs/profile/api` are laid out; `yoloprof.profile`
    always passes its own, capturing/userloop/loop_output.py)."""
    out = Path(out_dir)
    where = Path(project) if project is not None else out.parent
    return record(where, lambda: capture_row(profile, settings, source=source, project=where, out_dir=out,
                                             started_at=started_at, wall_s=wall_s))


def record_sweep_row(project: str | os.PathLike, row: dict[str, Any], job_dir: Path) -> Path | None:
    """Append a sweep job's row (as written to its row.parquet) to the project's store, with the
    store's columns from the job's profile (an ok row) and the profile path relative to the project."""
    def build() -> dict[str, Any]:
        from yoloprof.profiles.io import read_profile

        full = dict(row)
        profile = read_profile(job_dir / files.PROFILE) if row.get("status") == "ok" else {}
        full.update(store_columns(profile, full, "sweep"))
        full["profile_path"] = _relative(job_dir / files.PROFILE, Path(project))
        return full

    return record(project, build)
