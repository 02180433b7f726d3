"""Contended jobs: the rule and the words, shared by the capture's warning, `compare`, the sweep's
`trial=auto` rounds and the analysis (docs/analysis.md "Contended jobs").

A job is contended when other processes used more than `CONTENDED_CORES` (config/stat_defaults.py;
`YOLOPROF_CONTENDED_CORES` replaces it where set) while its capture ran (the profile's `contention.other_cores`, the row's `other_cpu_cores`;
measured by capturing/device/cpu_contention.py). A job measured nowhere (not Linux, an older
profile) is not contended: unknown is said once, never guessed.
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterable

from yoloprof.config.stat_defaults import CONTENDED_CORES
from yoloprof.errors import UsageError

ENV = "YOLOPROF_CONTENDED_CORES"  # replaces CONTENDED_CORES where set
SECTION = "contention"  # the profile's block (its row columns: profiles/rows.py OTHER_CPU, CPU_CORES)


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def threshold() -> float:
    """CONTENDED_CORES, or `YOLOPROF_CONTENDED_CORES` where set (cores, >= 0; `inf` turns the rule
    off): for a machine whose other load is known and accepted, e.g. a test suite's own workers."""
    given = os.environ.get(ENV, "").strip()
    if not given:
        return CONTENDED_CORES
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"{ENV}={given}: must be a number of cores, 0 or more (inf: never contended)")
    return value


def contended(other_cores: Any, limit: float | None = None) -> bool:
    value = _number(other_cores)
    return value is not None and value > (threshold() if limit is None else limit)


def of_profile(profile: dict[str, Any]) -> tuple[float | None, int | None]:
    """(other processes' cores, the machine's cores) of a profile; (None, None) where not measured."""
    block = profile.get(SECTION) or {}
    cores = _number(block.get("cores"))
    return _number(block.get("other_cores")), None if cores is None else int(cores)


def _share(values: list[float], cores: int | None) -> str:
    low, high = min(values), max(values)
    used = f"{high:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"
    return f"{used} of {cores} cores" if cores else f"{used} cores"


def job_words(jobs: Iterable[tuple[Any, float | None, int | None]], noun: str = "job") -> str | None:
    """'jobs 1, 2 ran while other processes used 0.9-1.6 of 2 cores' for the contended ones among
    (job label, other cores, machine cores); None when none is."""
    hit = [(str(j), float(o), c) for j, o, c in jobs if o is not None and contended(o)]
    if not hit:
        return None
    names = ", ".join(j for j, _, _ in hit)
    cores = max((c for _, _, c in hit if c), default=None)
    word = noun if len(hit) == 1 else f"{noun}s"
    return f"{word} {names} ran while other processes used {_share([o for _, o, _ in hit], cores)}"


def leave_out(sides: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, list[dict[str, Any]]], list[str], bool]:
    """`compare`'s sides without their contended profiles: (kept sides, warnings, withheld). A side
    whose every profile ran contended keeps them all and the verdicts are withheld."""
    kept: dict[str, list[dict[str, Any]]] = {}
    labels: list[tuple[str, float | None, int | None]] = []
    withheld = False
    for side, profiles in sides.items():
        marks = [of_profile(p) for p in profiles]
        calm = [p for p, (other, _) in zip(profiles, marks) if not contended(other)]
        withheld |= not calm
        kept[side] = calm or profiles
        labels += [(f"{side} {i + 1}" if len(profiles) > 1 else side, o, c) for i, (o, c) in enumerate(marks)]
    words = job_words(labels, noun="profile")
    if words is None:
        return kept, [], False
    what = "verdicts withheld: a side has no other profile" if withheld else "left out of the verdicts"
    return kept, [f"{words}: {what} ({rule_words()})"], withheld


def capture_warning(other_cores: float | None, cores: int | None, what: str = "this capture") -> list[str]:
    """The one-line warning a contended capture carries in its profile (and prints)."""
    if not contended(other_cores):
        return []
    assert other_cores is not None
    return [f"other processes used {_share([other_cores], cores)} while {what} ran (contended: more than "
            f"{threshold():g} of a core): its times may be slower than this machine's own; verdicts "
            "leave contended captures out"]


def rule_words() -> str:
    return f"contended: other processes used more than {threshold():g} of a core while the job ran"
