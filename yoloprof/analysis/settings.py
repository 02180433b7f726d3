"""The settings that decide an analysis' tables, and where they come from.

Six settings decide every comparison: baseline, vary, metrics, alpha, noise, correction (their one
definition, with defaults, valid values and help, is config/analysis_settings.py). A sweep
records the ones it resolved in its manifest (`analysis` entry), so `yoloprof analyze DIR` with no
flags repeats the end-of-sweep analysis exactly. Flags given on the command line replace the
recorded values (`--baseline` and `--vary` replace each other; `--auto-baseline` drops both), and
an analysis whose settings differ from the recorded ones gets its own folder `analysis/<name>/`
(a name given with `--name`, else derived from the differences), so it never overwrites another.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping

from yoloprof.config.analysis_settings import DEFAULT_NAME, MAX_NAME, AnalysisSettings
from yoloprof.errors import UsageError

__all__ = ["DEFAULT_NAME", "MAX_NAME", "SETTING_NAMES", "AnalysisSettings", "analysis_record", "check_name",
           "command"]
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")


def analysis_record(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sweep manifest's `analysis` entry: the resolved settings of its end-of-sweep analysis,
    which `yoloprof analyze DIR` without flags repeats."""
    return AnalysisSettings.from_mapping(values).to_dict()


def check_name(name: str) -> str:
    """A user-given --name: one folder name, no path, not hidden, not the default's."""
    if not _NAME_RE.match(name) or name == DEFAULT_NAME or len(name) > MAX_NAME:
        raise UsageError(f"--name {name!r}: use letters, digits and . _ = + - (not starting with . or -, "
                         f"at most {MAX_NAME} characters, not {DEFAULT_NAME!r})")
    return name


def command(sweep_dir: Path, settings: AnalysisSettings, recorded: AnalysisSettings,
            name: str | None) -> str:
    """The exact command that reproduces an analysis (the sweep folder as an absolute path, so it
    works from anywhere and reads the same whichever spelling the user typed)."""
    args = ["yoloprof", "analyze", str(Path(sweep_dir).resolve()), *settings.flags(recorded)]
    if name:
        args += ["--name", name]
    return shlex.join(args)


SETTING_NAMES = tuple(f.name for f in fields(AnalysisSettings))
