"""Where `yoloprof run` / `infer` write: a new numbered folder per capture, as Ultralytics and
Hydra do (`<project>/train`, `train2`, `train3`, ...), so an earlier profile is never replaced by a
later one; `--exist-ok` writes into `<project>/<mode>` again (the old behaviour). `last_two` finds
the two latest captures of a project, for `yoloprof compare --last PROJECT`.

A folder counts as taken when it exists and is not empty: a capture refused or interrupted before
it wrote anything leaves at most an empty folder, which the next capture takes.
"""

from __future__ import annotations

import re
from pathlib import Path

from yoloprof.defs import files
from yoloprof.errors import UsageError

_NUMBERED = re.compile(r"^(?P<stem>.*?)(?P<num>[2-9]|[1-9]\d+)?$")


def _free(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def run_dir(project: str | Path, name: str, exist_ok: bool = False) -> Path:
    """`<project>/<name>` when free (or with exist_ok), else the first free `<name>N`, N >= 2."""
    base = Path(project) / name
    if exist_ok or _free(base):
        return base
    n = 2
    while not _free(Path(project) / f"{name}{n}"):
        n += 1
    return Path(project) / f"{name}{n}"


def _number(folder: Path, stem: str) -> int | None:
    """1 for `train`, N for `trainN`, None for another name."""
    if folder.name == stem:
        return 1
    rest = folder.name[len(stem):]
    return int(rest) if folder.name.startswith(stem) and rest.isdigit() and int(rest) >= 2 else None


def last_two(project: str | Path) -> tuple[Path, Path]:
    """(the profile before, the latest) of the newest capture's series in a project folder: the
    latest profile.json there (by modification time), and the highest-numbered one of its series
    below it (`train3` then `train2`, or `train`)."""
    root = Path(project)
    if not root.is_dir():
        raise UsageError(f"--last {project}: not a folder (give the --project of earlier runs)")
    profiles = [p for p in root.glob(f"*/{files.PROFILE}") if p.is_file()]
    if not profiles:
        raise UsageError(f"--last {project}: no <name>/{files.PROFILE} in it")
    latest = max(profiles, key=lambda p: (p.stat().st_mtime_ns, p.parent.name))
    match = _NUMBERED.match(latest.parent.name)
    stem = match.group("stem") if match and match.group("num") else latest.parent.name
    series = sorted((n, p) for p in profiles if (n := _number(p.parent, stem)) is not None)
    earlier = [p for n, p in series if n < (_number(latest.parent, stem) or 1)]
    if not earlier:
        raise UsageError(f"--last {project}: {latest.parent.name} is the only capture of its series "
                         f"({stem}, {stem}2, ...); run it again to have two")
    return earlier[-1], latest
