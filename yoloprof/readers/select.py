"""Selections on the readers: `--steps 4-6`, `--window 120:480` (ms) and, for a folder of rank
traces, `--ranks 0,3`. Definitions in `traces.step_selection` and docs/readers.md "Selections".

Why here: a selection changes which steps the figures are means over, so a selected trace is
analysed again from its events: from the columnar cache when one is fresh (`readers.cache`; the
parse is skipped), else parsed (as a stream when large). A profile.json holds only means over
its steps, so a step selection on one is a usage error rather than a silent no-op.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from yoloprof.errors import ProfileError, UsageError
from yoloprof.traces.step_selection import StepSelection

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")
_WINDOW = re.compile(r"^\s*([0-9.eE+-]+)\s*:\s*([0-9.eE+-]+)\s*$")


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """"4-6" or "5" -> (lo, hi) ProfilerStep numbers, inclusive."""
    if text is None:
        return None
    m = _RANGE.match(text)
    if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
        raise UsageError(f"--steps {text!r}: give N or LO-HI ProfilerStep numbers (e.g. 4-6)")
    lo = int(m.group(1))
    return lo, int(m.group(2)) if m.group(2) is not None else lo


def parse_window(text: str | None) -> tuple[float, float] | None:
    """"120:480" -> (120.0, 480.0) ms from the trace's first event."""
    if text is None:
        return None
    m = _WINDOW.match(text)
    try:
        lo, hi = (float(m.group(1)), float(m.group(2))) if m else (0.0, -1.0)
    except ValueError:
        lo, hi = 0.0, -1.0
    if not (0 <= lo < hi < float("inf")):
        raise UsageError(f"--window {text!r}: give START:END in ms from the trace's first event, "
                         "START < END (e.g. 120:480)")
    return lo, hi


def parse_ranks(text: str | None) -> frozenset[int] | None:
    """"0,3" or "0-3,8" -> the rank numbers."""
    if text is None:
        return None
    out: set[int] = set()
    for item in text.split(","):
        m = _RANGE.match(item)
        if not m:
            raise UsageError(f"--ranks {text!r}: give rank numbers and ranges (e.g. 0,3 or 0-7)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise UsageError(f"--ranks {text!r}: {item.strip()} is an empty range")
        out.update(range(lo, hi + 1))
    return frozenset(out)


def selection_from_args(args: Any) -> StepSelection:
    return StepSelection(parse_steps(getattr(args, "steps", None)), parse_window(getattr(args, "window", None)))


def load_selected(path: str | os.PathLike, select: StepSelection) -> dict[str, Any]:
    """The profile of a trace analysed over the selected steps only."""
    from yoloprof.readers import cache
    from yoloprof.readers.large import stream_events, stream_min_bytes
    from yoloprof.traces.analyze import analyze_events, with_overview
    from yoloprof.traces.to_profile import profile_from_analysis
    from yoloprof.profiles.blocks import estimated_size

    events = None
    if estimated_size(path) >= stream_min_bytes():
        events = cache.read_events(Path(path))
        if events is None:
            events = stream_events(path)
    if events is not None:
        return profile_from_analysis(analyze_events(events, str(path), select))
    events, data = _parse_whole(path)
    return profile_from_analysis(with_overview(analyze_events(events, str(path), select), data, events))


def _parse_whole(path: str | os.PathLike) -> tuple[Any, bytes]:
    from yoloprof.profiles.inputs import Input
    from yoloprof.profiles.io import looks_like_profile, nonblank
    from yoloprof.traces.parse import parse_trace_bytes

    src = Input(path)
    not_trace = UsageError(f"{path}: --steps/--window choose steps of a trace; this is a profile "
                           "(its figures are already means over its steps)")
    if looks_like_profile(src.head):
        raise not_trace
    data = nonblank(src.prefetch().read(), path)
    try:
        return parse_trace_bytes(data), data
    except ProfileError as exc:
        if looks_like_profile(data):
            raise not_trace from None
        raise ProfileError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from None
