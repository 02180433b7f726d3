"""When a profile's measurements were taken: one definition for `get FILE env.captured_at`,
`compare`'s "capture time" row and `analyze`.

- A yoloprof capture (kind train/infer written by yoloprof): `created_at`, written when the
  capture ended.
- A raw Kineto trace: `env.captured_at`, the trace's own wall clock at its first event =
  `baseTimeNanoseconds` (Kineto's origin) + the first event's `ts` (µs after that origin;
  `traces.to_profile`). A trace without `baseTimeNanoseconds` has none: the time it was read is
  not a capture time.
- libreyolo's profile.json (`readers.libreyolo`): its trace's capture time when a trace that
  belongs to it was read; the file itself records no time, so none otherwise.

Where a profile records `env.captured_at` (even null) that is its capture time; otherwise a
yoloprof capture's `created_at`, and none for a trace.
"""

from __future__ import annotations

from typing import Any, Mapping

CAPTURED_AT = "env.captured_at"
NO_BASE_TIME = "the trace has no baseTimeNanoseconds (Kineto's wall-clock origin)"


def capture_time(profile: Mapping[str, Any]) -> tuple[str | None, str]:
    """(ISO time or None, why it is None)."""
    env = profile.get("env") or {}
    if "captured_at" in env:
        value = env.get("captured_at")
        src = profile.get("source")
        if isinstance(src, Mapping) and str(src.get("schema", "")).startswith("libreyolo."):
            why = "libreyolo's profile.json records no time, and no trace of it was read"
        else:
            why = NO_BASE_TIME
        return (value if isinstance(value, str) and value else None), why
    if profile.get("kind") == "trace":
        return None, NO_BASE_TIME
    created = profile.get("created_at")
    return (created if isinstance(created, str) and created else None), "the profile records no creation time"
