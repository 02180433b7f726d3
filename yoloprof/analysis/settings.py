"""The settings that decide an analysis' tables, and where they come from.

Six settings decide every comparison: baseline, vary, metrics, alpha, noise, correction. A sweep
records the ones it resolved in its manifest (`analysis` entry), so `yoloprof analyze DIR` with no
flags repeats the end-of-sweep analysis exactly. Flags given on the command line replace the
recorded values (`--baseline` and `--vary` replace each other; `--auto-baseline` drops both), and
an analysis whose settings differ from the recorded ones gets its own folder `analysis/<name>/`
(a name given with `--name`, else derived from the differences), so it never overwrites another.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from yoloprof.errors import UsageError
from yoloprof.config.stat_defaults import ALPHA, CORRECTION, CORRECTIONS, NOISE

DEFAULT_NAME = "default"        # the analysis that lives directly in analysis/
MAX_NAME = 80                   # longer derived names are cut and end with a hash of the settings
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")


@dataclass(frozen=True)
class AnalysisSettings:
    """Everything that changes an analysis' comparison tables (html does not: it is an output)."""

    baseline: tuple[str, ...] = ()
    vary: str | None = None
    metrics: tuple[str, ...] = ()
    alpha: float = ALPHA
    noise: float = NOISE
    correction: str = CORRECTION

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> "AnalysisSettings":
        """From a manifest record or a Hydra `analysis` node (extra keys such as `enabled` and
        `html` are ignored; "" / [] / null mean "not set")."""
        m = dict(m or {})
        d = cls()
        return cls(baseline=_items(m.get("baseline")), vary=str(m["vary"]) if m.get("vary") else None,
                   metrics=_items(m.get("metrics")), alpha=float(m.get("alpha", d.alpha)),
                   noise=float(m.get("noise", d.noise)), correction=str(m.get("correction") or d.correction))

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": list(self.baseline), "vary": self.vary, "metrics": list(self.metrics),
                "alpha": self.alpha, "noise": self.noise, "correction": self.correction}

    def validate(self) -> "AnalysisSettings":
        if not (isinstance(self.alpha, float) and math.isfinite(self.alpha) and 0 < self.alpha < 1):
            raise UsageError(f"--alpha must be between 0 and 1, not {self.alpha}")
        if not (math.isfinite(self.noise) and 0 <= self.noise < 1):
            raise UsageError(f"--noise must be in [0, 1), not {self.noise} (it is a fraction: 0.02 = 2%)")
        if self.correction not in CORRECTIONS:
            raise UsageError(f"--correction must be one of {', '.join(CORRECTIONS)}, not {self.correction!r}")
        if self.baseline and self.vary:
            raise UsageError("give either --baseline or --vary, not both")
        return self

    def with_given(self, *, baseline: Any = None, vary: Any = None, metrics: Any = None, alpha: Any = None,
                   noise: Any = None, correction: Any = None, auto_baseline: bool = False) -> "AnalysisSettings":
        """These settings with the given (non-None, non-empty) values replacing them."""
        out = replace(self, baseline=(), vary=None) if auto_baseline else self
        if baseline:
            out = replace(out, baseline=_items(baseline), vary=None)
        if vary:
            out = replace(out, vary=str(vary), baseline=())
        if metrics:
            out = replace(out, metrics=_items(metrics))
        for key, value in (("alpha", alpha), ("noise", noise)):
            if value is not None:
                out = replace(out, **{key: float(value)})
        if correction:
            out = replace(out, correction=str(correction))
        return out

    def flags(self, recorded: "AnalysisSettings") -> list[str]:
        """The command-line flags that turn `recorded` (the sweep's settings) into these."""
        out: list[str] = []
        if (self.baseline, self.vary) != (recorded.baseline, recorded.vary):
            if self.baseline:
                out += ["--baseline", *self.baseline]
            elif self.vary:
                out += ["--vary", self.vary]
            else:
                out.append("--auto-baseline")
        if self.metrics != recorded.metrics:
            out += [x for m in self.metrics for x in ("--metric", m)]
        for f in ("alpha", "noise", "correction"):
            if getattr(self, f) != getattr(recorded, f):
                out += [f"--{f}", _text(getattr(self, f))]
        return out

    def derived_name(self, recorded: "AnalysisSettings") -> str:
        """A folder name that says how these settings differ from the recorded ones."""
        parts = []
        if (self.baseline, self.vary) != (recorded.baseline, recorded.vary):
            parts.append("baseline-" + "+".join(self.baseline) if self.baseline
                         else f"vary-{self.vary}" if self.vary else "auto-baseline")
        if self.metrics != recorded.metrics:
            parts.append("metrics-" + "+".join(self.metrics) if self.metrics else "default-metrics")
        parts += [f"{f}-{_text(getattr(self, f))}" for f in ("alpha", "noise", "correction")
                  if getattr(self, f) != getattr(recorded, f)]
        name = re.sub(r"[^A-Za-z0-9._=+-]+", "-", "_".join(parts) or DEFAULT_NAME).strip("-.") or "analysis"
        if len(name) > MAX_NAME:
            digest = hashlib.sha1(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
            name = name[:MAX_NAME - 9].rstrip("-._") + "-" + digest
        return name


def analysis_record(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sweep manifest's `analysis` entry: the resolved settings of its end-of-sweep analysis,
    which `yoloprof analyze DIR` without flags repeats."""
    return AnalysisSettings.from_mapping(values).to_dict()


def _items(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


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
