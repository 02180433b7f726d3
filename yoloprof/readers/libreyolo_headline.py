"""One source for the headline of a libreyolo profile.json: step time, throughput and latency.

A trace's step time beside libreyolo's throughput (its own timer, another window) reads as two
measurements of one run that disagree; `compare` would then say "faster" on one and "slower" on
the other. So the three come from one source, chosen in this order and kept in
`source.headline` (and said in a warning):

- `trials`: a `libreyolo profile run/infer --repeat N` file (`img_per_s_trials`, two or more).
  Each trial is one sample (the unit `compare` replicates on): `img_per_s` = the trials as
  libreyolo measured them, `step_ms` = batch x 1000 / img/s of each trial (libreyolo's own
  relation between the two), latency = the file's (its last trial's). The trace is the last
  trial's only, so it gives no headline figure here.
- `trace`: a trace that belongs to the file was read. `step_ms` = the trace's mean step time over
  its steady steps (the trace engine's), `img_per_s` = batch x 1000 / step_ms (n/a where the file
  records no batch), and for an inference profile the latency percentiles of the same steps'
  times (numpy's linear interpolation, as a yoloprof inference capture computes them).
- `file`: no trace: libreyolo's `step_ms`, `img_per_s` and `latency` as written.

libreyolo's own figures stay readable through `get` (`source.metrics`, `readers.libreyolo_names`).
"""

from __future__ import annotations

from typing import Any

from yoloprof.readers._common import finite

PERCENTILES = (50, 90, 99)
# source.headline -> words; a yoloprof capture or a raw trace has no `source.headline`
SOURCE_WORDS = {"trials": "libreyolo's --repeat trials", "trace": "the trace", "file": "the libreyolo file's figures"}


def mixed_sources(profiles: list[dict]) -> str | None:
    """A warning when libreyolo files' headlines come from different sources (`compare`): the
    trace's step time and libreyolo's own timer are two measurements, and their gap is no change
    of the code."""
    sources = [(p.get("source") or {}).get("headline") if isinstance(p.get("source"), dict) else None
               for p in profiles]
    if not any(sources) or len(set(sources)) < 2:
        return None
    words = sorted({SOURCE_WORDS.get(s, "yoloprof's own capture or trace") if s else
                    "yoloprof's own capture or trace" for s in sources})
    return (f"the step time and throughput of the sides come from different sources ({'; '.join(words)}): "
            "part of a difference may be the two timers', not the code's")


def _batch(obj: dict) -> float | None:
    cfg = obj.get("config")
    b = finite(cfg.get("batch")) if isinstance(cfg, dict) else None
    return b if b is not None and b > 0 else None


def set_headline(profile: dict, obj: dict, trace: str | None) -> str:
    """Set the profile's step_ms, img_per_s and latency from one source (module doc); the note
    that says which."""
    from yoloprof.profiles.model import measured

    metrics = profile.setdefault("metrics", {})
    batch = _batch(obj)
    trials = [t for t in (finite(v) for v in obj.get("img_per_s_trials") or []) if t is not None and t > 0]
    if len(trials) >= 2:
        metrics["img_per_s"] = measured("img_per_s", trials)
        steps = [batch * 1000.0 / t for t in trials] if batch else [finite(obj.get("step_ms"))]
        metrics["step_ms"] = measured("step_ms", [s for s in steps if s is not None])
        _file_latency(profile, obj)
        source, note = "trials", (f"headline from libreyolo's {len(trials)} --repeat trials (one sample each: "
                                  "img/s as it measured them, step time = batch / img/s); latency: "
                                  "the file's (its last trial); the trace gives no headline figure")
    elif trace is not None:
        step = finite((metrics.get("step_ms") or {}).get("value"))
        metrics.pop("img_per_s", None)
        if step and batch:
            metrics["img_per_s"] = measured("img_per_s", batch * 1000.0 / step)
        if profile.get("kind") == "infer":
            _trace_latency(profile)
        source, note = "trace", (f"headline from the trace {trace}: step time over its steady steps, "
                                 "img/s = batch / step time" + (", latency of the same steps"
                                                                if profile.get("kind") == "infer" else "")
                                 + ("" if batch else " (no batch recorded: img/s n/a)"))
    else:  # step_ms and img_per_s: already the file's (`libreyolo.FIGURES`)
        _file_latency(profile, obj)
        source, note = "file", "headline from the libreyolo file's own figures (step time, img/s, latency)"
    profile.setdefault("source", {})["headline"] = source
    return note


def _file_latency(profile: dict, obj: dict) -> None:
    from yoloprof.profiles.model import measured

    lat = obj.get("latency")
    if not isinstance(lat, dict):
        return
    profile["latency"] = {k: v for k, v in lat.items() if finite(v) is not None}
    for q in PERCENTILES:
        v = finite(lat.get(f"p{q}_ms"))
        if v is not None:
            profile["metrics"][f"p{q}_ms"] = measured(f"p{q}_ms", v)


def _trace_latency(profile: dict) -> None:
    """Percentiles of the analysed steps' times (module doc)."""
    import numpy as np

    from yoloprof.profiles.model import measured

    rows = (profile.get("trace") or {}).get("per_step") or []
    ms = [v for v in (finite(r.get("step_ms")) for r in rows if isinstance(r, dict)) if v is not None]
    if not ms:
        profile["latency"] = None
        return
    arr = np.asarray(ms, dtype=float)
    table: dict[str, Any] = {f"p{q}_ms": float(np.percentile(arr, q)) for q in PERCENTILES}
    table.update(mean_ms=float(arr.mean()), min_ms=float(arr.min()), max_ms=float(arr.max()), n=int(arr.size))
    profile["latency"] = table
    for q in PERCENTILES:
        profile["metrics"][f"p{q}_ms"] = measured(f"p{q}_ms", table[f"p{q}_ms"])
