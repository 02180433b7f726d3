"""What differs between two sides of a comparison besides the code: device model, thread count,
torch version, precision, batch, the runtime settings of defs/envfields.py (cuDNN and TF32 flags,
CUDA_LAUNCH_BLOCKING, allocator settings, driver), the workload (model class and size, its
arguments, parameter count, data source, image size, loader workers), capture time. Shared by
`compare` (readers) and `analyze` (whose rows carry only the machine, runtime and precision facts:
a sweep varies the workload on purpose).

Why: a ratio of step times between an A100 and a V100, or 2 threads against 1, is a measurement
of the machines, not of the change; a verdict drawn across such a difference is flagged, and
every difference is listed (table and JSON), so that nothing changes silently.

A side is described by `side_facts(env, config, created_at)` (the profile's `env`, `config` and
`created_at`, or a sweep row's equivalents: a row can be passed as both env and config, its
`torch_version`, `device_name`, `threads`, `batch`, `amp`/`amp_dtype` are read); `differences(before, after)` lists the fields whose
values differ, each with `big` = True when it invalidates a like-for-like verdict. A different
workload (model class, size, arguments, parameters; data source: the synthetic loader, a dataset,
the user's own tensors; image size; loader workers) is listed but does not flag: it is what a
user changes on purpose to compare (smaller images to fix a slow loader, another model), and the
table says that the sides differ in it.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Mapping

from yoloprof.config.knobs import BY_NAME as KNOBS
from yoloprof.defs.envfields import RUNTIME_FIELDS

# Capture times further apart than this flag a verdict (machine state drifts: thermals, other
# load, driver or library updates); closer ones are listed but do not flag.
CAPTURE_GAP_FLAG_S = 3600.0

Getter = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


def _precision(env: Mapping[str, Any], cfg: Mapping[str, Any]) -> Any:
    """The arithmetic the run used: an explicit precision setting, else autocast's dtype when
    amp is on, else float32 (amp off runs float32 whatever amp_dtype says)."""
    for key in ("precision", "effective_dtype", "dtype"):
        if cfg.get(key) is not None:
            return str(cfg[key])
    if "amp" not in cfg:
        return None
    return str(cfg.get("amp_dtype") or "float16") if cfg.get("amp") else "float32"


def _data_source(env: Mapping[str, Any], cfg: Mapping[str, Any]) -> Any:
    """Where the images came from: the user's own loop (`yoloprof.profile`), else the capture's
    `data` (synthetic, a dataset path, or the bundled sample for inference when none)."""
    if cfg.get("source") == "yoloprof.profile":
        return "the user's own data (yoloprof.profile)"
    if "data" not in cfg:
        return None
    return cfg["data"] if cfg["data"] is not None else "bundled sample image"


def _model_args(env: Mapping[str, Any], cfg: Mapping[str, Any]) -> Any:
    kwargs = cfg.get("model_kwargs")
    return dict(sorted(kwargs.items())) if isinstance(kwargs, Mapping) and kwargs else None


# (field, label, getter, big): `big` differences flag a verdict.
FIELDS: tuple[tuple[str, str, Getter, bool], ...] = (
    ("device", "device model", lambda env, cfg: env.get("device_name"), True),
    ("threads", "thread count", lambda env, cfg: cfg.get("threads", env.get("threads")), True),
    ("torch", "torch version", lambda env, cfg: env.get("torch", env.get("torch_version")), True),
    ("precision", "precision", _precision, True),
    ("batch", "batch", lambda env, cfg: cfg.get("batch"), True),
    # the runtime settings (defs/envfields.py): each changes speed without changing the code
    *((key, label, (lambda env, cfg, k=key: env.get(k)), True) for key, label, _ in RUNTIME_FIELDS),
    ("model", "model", lambda env, cfg: cfg.get("model"), False),
    ("model_size", "model size", lambda env, cfg: cfg.get("size"), False),
    ("model_args", "model arguments", _model_args, False),
    ("params", "parameters", lambda env, cfg: cfg.get("params_total"), False),
    ("data", "data source", _data_source, False),
    ("imgsz", "image size", lambda env, cfg: cfg.get("imgsz"), False),
    ("workers", "loader workers", lambda env, cfg: cfg.get("workers_effective", cfg.get("workers")), False),
    # the knobs (docs/knobs.md): changed on purpose, listed, never flagging; a capture's config
    # from before a knob existed ran its default (a raw trace's config says nothing)
    *((name, name.replace("_", " "), (lambda env, cfg, k=name: cfg.get(k, KNOBS[k].default if "mode" in cfg else None)),
       False) for name in KNOBS),
)


def side_facts(env: Mapping[str, Any] | None, config: Mapping[str, Any] | None,
               created_at: str | None = None) -> dict[str, Any]:
    """The compared facts of one side (None where the side does not record one)."""
    env, config = env or {}, config or {}
    facts = {name: get(env, config) for name, _, get, _ in FIELDS}
    facts["captured_at"] = created_at
    return facts


def profile_facts(profile: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's facts. A raw trace's `created_at` is when it was read, not captured: its
    capture time is the trace's own (`env.captured_at`: baseTimeNanoseconds + the first event's
    ts) or unknown (`profiles.captured`)."""
    from yoloprof.profiles.captured import capture_time

    env = profile.get("env") or {}
    when = capture_time(profile)[0]
    config = dict(profile.get("config") or {})
    model = profile.get("model")
    facts = model if isinstance(model, Mapping) else {}
    if facts.get("params_total") is not None:  # the model section's exact count
        config["params_total"] = facts["params_total"]
    return side_facts(env, config, when)


def _time(text: Any) -> _dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every field that differs between two `side_facts`. A value missing on one side is listed
    (`big` False: unknown is not a proven difference); capture times are listed whenever both are
    known and differ, with the gap in seconds, `big` beyond CAPTURE_GAP_FLAG_S."""
    rows = []
    for name, label, _, big in FIELDS:
        b, a = before.get(name), after.get(name)
        if b == a or (b is None and a is None):
            continue
        known = b is not None and a is not None
        rows.append({"field": name, "label": label, "before": b, "after": a, "big": big and known,
                     "why": f"{label} differs" if known else f"{label} recorded on one side only"})
    tb, ta = _time(before.get("captured_at")), _time(after.get("captured_at"))
    if tb and ta and tb != ta:  # the same capture time (a file against itself) is no difference
        gap = abs((ta - tb).total_seconds())
        rows.append({"field": "captured_at", "label": "capture time", "before": before["captured_at"],
                     "after": after["captured_at"], "gap_s": gap, "big": gap > CAPTURE_GAP_FLAG_S,
                     "why": f"captured {_span(gap)} apart, not interleaved"})
    return rows


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def flag_reasons(diffs: list[dict[str, Any]]) -> list[str]:
    """The differences that turn a verdict into a flagged one."""
    return [d["why"] for d in diffs if d.get("big")]
