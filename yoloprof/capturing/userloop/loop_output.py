"""Where `yoloprof.profile` (and `profile_trainer`, `profileit`) puts what it writes, and the lines
it prints about it.

Nothing goes outside the folder the user names unless the call says where: profile.json and the
trace go into `out_dir`, and the capture's row goes into the results store of `project`
(`<project>/results/`, docs/history.md), which is `out_dir` itself unless `project=` names
another folder (the `--project` of `yoloprof run`, whose captures go to `<project>/train` and
the row to `<project>/results`: give `project=` the same folder to keep both in one history) or
is False (no row). `YOLOPROF_RESULTS=0` turns the store off everywhere. Inside a sweep job the job
records its own row. Every printed line starts with `yoloprof:` and goes to stderr.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from yoloprof.capturing.userloop.public_types import ProjectArg

PREFIX = "yoloprof: "


def say(text: str) -> None:
    """One information line on stderr (warnings go through `yoloprof.warn`)."""
    sys.stderr.write(PREFIX + " ".join(text.split()) + "\n")
    sys.stderr.flush()


def warn_user(text: str, stacklevel: int = 2) -> None:
    """A Python `RuntimeWarning`; where the caller's filters turn warnings into errors, the
    warning channel's line instead: a profiler never raises into the user's code."""
    try:
        warnings.warn(text, RuntimeWarning, stacklevel=stacklevel + 1)
    except Warning:
        from yoloprof import warn

        warn.emit(text)


def check_project(project: Any, what: str) -> None:
    from yoloprof.errors import UsageError

    if project is None or project is False or isinstance(project, (str, os.PathLike)):
        return
    raise UsageError(f"{what}: project must be None (the results store inside out_dir), a folder, or False "
                     f"(no results-store row) (got {project!r})")


def store_project(out_dir: Path, project: ProjectArg) -> Path | None:
    """The folder whose `results/` store gets the row: `out_dir` (None), the folder given, or
    None when `project=False`."""
    if project is False:
        return None
    return Path(out_dir) if project is None else Path(project)


def record_row(profile: dict[str, Any], out_dir: Path, project: ProjectArg) -> tuple[Path | None, str]:
    """Append the capture's row to the store (a failure is a warning, never the capture's) and
    say where it went: (the part file or None, the clause for the printed line)."""
    from yoloprof.capturing.builtin.store_record import record_capture
    from yoloprof.profiles import store

    where = store_project(out_dir, project)
    if where is None:
        return None, "no results-store row (project=False)"
    if not store.enabled():
        return None, f"no results-store row ({store.ENV_SWITCH} is off)"
    part = record_capture(profile, None, out_dir, source="profile", project=where)
    if part is None:
        return None, "no results-store row (see the warning above)"
    return part, f"its row added to the results store {store.store_dir(where)} (yoloprof history {where})"
