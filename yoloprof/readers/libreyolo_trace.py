"""The trace behind a libreyolo `profile.json`: which file, and whether it is that run's.

libreyolo writes the trace's path as its profiler saw it: absolute, or relative to the folder
the run started in (`"trace": "ly/rep/infer_0/profile_trace.json"`). A profile.json copied or
read from elsewhere must not pick up another run's trace that happens to sit at that relative
path, so the candidates are tried in this order, and the first that belongs is read:

1. the same file name beside the profile.json (where libreyolo's profilers write it);
2. the written path's trailing parts under the profile.json's folder, shortest first
   (`infer_2/profile_trace.json` beside a `--repeat` file's `infer_repeat.json`);
3. the path as written: absolute, or against the current folder (the folder the run started in).

A candidate belongs to the profile.json when libreyolo's own window rule (`libreyolo_window`,
restated from `libreyolo.training.profiler._pick_window`: the ProfilerStep spans sorted by start,
the window from the third to the ninth start, or the whole of three steps or fewer) over the
trace gives the file's `window` (`wall_ms`, rounded to 0.1 ms, and `real_steps`). A candidate
that cannot be read as a trace (truncated, not JSON) or whose window differs is passed over, with
the reason kept for the profile's warnings; when none belongs the profile.json's own figures
are read (`readers.libreyolo`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from yoloprof.errors import ProfileError, UsageError

TRACE_NAME = "profile_trace.json"  # the name libreyolo's profilers give their trace
WALL_TOLERANCE_MS = 0.1 + 1e-9  # both sides rounded to 0.1 ms: one rounding step apart at most
_NUMBER = re.compile(r"#(\d+)")


def candidates(name: Any, source: str) -> list[str]:
    """The paths tried for the trace the profile.json names (module doc), existing files only."""
    if not isinstance(name, str) or not name:
        return []
    here = os.path.dirname(os.path.abspath(source))
    parts = [p for p in Path(name).parts if p not in (Path(name).anchor, "")]
    tries = [os.path.join(here, *parts[-k:]) for k in range(1, len(parts) + 1)] + [name]
    seen: list[str] = []
    for cand in tries:
        if os.path.isfile(cand) and os.path.realpath(cand) not in {os.path.realpath(s) for s in seen}:
            seen.append(cand)
    return seen


def libreyolo_window(names: list[str], ts: list[float], dur: list[float]) -> tuple[float, int]:
    """(wall_ms rounded to 0.1, real_steps) of libreyolo's analysis window over the complete
    events named `ProfilerStep*` (`names`/`ts`/`dur` in µs, in trace order); (0.0, 1) without
    any, as libreyolo writes."""
    steps = sorted(zip(ts, dur, names), key=lambda s: s[0])  # stable: ties keep trace order
    if not steps:
        return 0.0, 1
    if len(steps) >= 4:
        w0, w1 = steps[2][0], steps[min(len(steps) - 1, 8)][0]
    else:
        w0, w1 = steps[0][0], steps[-1][0] + steps[-1][1]
    if w1 <= w0:
        w1 = w0 + 1.0
    inside = [s for s in steps if w0 <= s[0] < w1]
    numbered = {m.group(1) for _, _, n in inside if (m := _NUMBER.search(n))}
    if numbered:
        n_real = len(numbered)
    else:  # unnumbered spans: starts more than 1 µs apart are separate steps
        starts = sorted(s[0] for s in inside)
        n_real = sum(1 for i, t in enumerate(starts) if i == 0 or t - starts[i - 1] > 1.0)
    return round((w1 - w0) / 1000.0, 1), max(n_real, 1)


def window_of(ev: Any) -> tuple[float, int]:
    """`libreyolo_window` over a parsed trace (`traces.parse.Events`)."""
    hits = [i for i, s in enumerate(ev.strings) if s.startswith("ProfilerStep")]
    if not hits:
        return libreyolo_window([], [], [])
    import numpy as np

    idx = np.flatnonzero(np.isin(ev.name, hits))
    return libreyolo_window([ev.strings[ev.name[i]] for i in idx.tolist()], ev.ts[idx].tolist(),
                            ev.dur[idx].tolist())


def _events(path: str) -> tuple[Any, bytes | None]:
    """The trace's events (streamed or from the cache when large, as `readers.large` reads), and
    its bytes when read whole (for the kernels' overview args)."""
    from yoloprof.profiles.blocks import estimated_size
    from yoloprof.readers.large import stream_events, stream_min_bytes

    if estimated_size(path) >= stream_min_bytes():
        from yoloprof.readers import cache

        events = cache.read_events(Path(path))
        if events is None:
            events = stream_events(path)
        if events is not None:
            return events, None
    from yoloprof.profiles.inputs import Input
    from yoloprof.profiles.io import nonblank
    from yoloprof.traces.parse import parse_trace_bytes

    data = nonblank(Input(path).prefetch().read(), path)
    return parse_trace_bytes(data), data


def read_belonging(obj: dict, source: str, select: Any = None) -> tuple[dict[str, Any] | None, str | None, list[str]]:
    """(the trace's profile, its path, notes) for the first candidate that belongs to the
    profile.json `obj` read from `source` (module doc); (None, None, why each was passed over)
    when none does. `select`: a step selection for the trace (`readers.select`)."""
    from yoloprof.traces.analyze import analyze_events, with_overview
    from yoloprof.traces.to_profile import profile_from_analysis

    window = obj.get("window")
    want = (window.get("wall_ms"), window.get("real_steps")) if isinstance(window, dict) else (None, None)
    passed: list[str] = []
    for path in candidates(obj.get("trace"), source):
        try:
            ev, data = _events(path)
            got = window_of(ev)
        except (ProfileError, UsageError, OSError) as exc:  # truncated, not a trace, unreadable
            text = str(exc).replace(f"{path}: ", "")
            passed.append(f"{path} could not be read as a trace ({text})")
            continue
        wall, steps = want
        if isinstance(wall, (int, float)) and isinstance(steps, int) and (
                got[1] != steps or abs(got[0] - float(wall)) > WALL_TOLERANCE_MS):
            passed.append(f"{path} is not this run's trace (its window: {got[0]} ms over {got[1]} "
                          f"step(s); the file's: {wall} ms over {steps})")
            continue
        try:
            analysis = analyze_events(ev, path, select, steady=not select)
        except ProfileError as exc:
            passed.append(f"{path} could not be analysed ({str(exc).replace(f'{path}: ', '')})")
            continue
        if data is not None:
            analysis = with_overview(analysis, data, ev)
        return profile_from_analysis(analysis), path, []
    return None, None, passed
