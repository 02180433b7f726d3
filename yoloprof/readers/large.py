"""Large traces: read as a stream in bounded memory (`traces.stream`) instead of whole.

Why a size threshold: below it the whole-buffer path is as lean (a few times a small file) and
overlaps the engine's imports with the read (`profiles.inputs.Input.prefetch`); above it the
stream keeps peak memory near the columns instead of the file plus the columns. Both give the
same figures bit for bit (`traces.stream` module doc). Whatever the stream cannot take (a slice
that does not decode alone, a document that is not a trace, an error) is handed back (None) to
`load.load_any`, which reads the file whole exactly as before: same figures, same messages.
"""

from __future__ import annotations

import os
from itertools import chain
from pathlib import Path
from typing import Any

from yoloprof.defs.metrics import BYTES_PER_MIB
from yoloprof.errors import ProfileError, UsageError
from yoloprof.profiles.blocks import estimated_size, iter_blocks
from yoloprof.profiles.inputs import HEAD_BYTES
from yoloprof.profiles.io import looks_like_profile

# Plain (decompressed) bytes from which a trace is streamed; 0 streams every trace.
STREAM_MIN_ENV = "YOLOPROF_STREAM_MIN_MB"
DEFAULT_STREAM_MIN_MB = 64.0


def stream_min_bytes() -> int:
    raw = os.environ.get(STREAM_MIN_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_STREAM_MIN_MB
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise UsageError(f"{STREAM_MIN_ENV}={raw!r} is not a number of MiB >= 0")
    return int(mb * BYTES_PER_MIB)


def load_streamed(path: str | os.PathLike) -> dict[str, Any] | None:
    """The trace's profile read as a stream (or from its cache, `readers.cache`), or None when
    the whole-buffer path must take it (too small, not plainly a trace, or a slice that does not
    decode alone)."""
    if estimated_size(path) < stream_min_bytes():
        return None
    from yoloprof.readers import cache

    cached = cache.read(Path(path))
    if cached is not None:  # the engine is not even imported
        return cached
    from yoloprof.traces.analyze import analyze_events
    from yoloprof.traces.to_profile import profile_from_analysis

    key = cache.key_of(Path(path))  # taken before the read: a trace changed meanwhile is not cached
    events = stream_events(path)
    if events is None:
        return None
    profile = profile_from_analysis(analyze_events(events, str(path), steady=True))
    cache.write(Path(path), key, events, profile)
    return profile


def stream_events(path: str | os.PathLike) -> Any | None:
    """The trace's `parse.Events` read as a stream, or None (not plainly a trace, a slice that
    does not decode alone, an error the whole-buffer path will name)."""
    from yoloprof.traces.kineto import TRACE_KEY
    from yoloprof.traces.ranges import parse_trace_file
    from yoloprof.traces.stream import Restart, parse_trace_blocks

    try:  # a plain file: its slices read straight from it, on every core (traces.ranges)
        events = parse_trace_file(path, accept=lambda head: _plainly_a_trace(head[:HEAD_BYTES], TRACE_KEY))
    except ProfileError:  # the stream would refuse it alike: the whole-buffer path names it
        return None
    except (Restart, OSError):
        events = None
    if events is not None:
        return events
    blocks = iter_blocks(path)
    try:
        first = next(blocks, b"")
        head = first[:HEAD_BYTES]
        if not _plainly_a_trace(head, TRACE_KEY):
            return None
        stream = chain([first], blocks)
        del first  # the first block is freed once decoded
        return parse_trace_blocks(stream)
    except (Restart, ProfileError):  # the whole-buffer path reads it again, with its messages
        return None
    finally:
        blocks.close()


def _plainly_a_trace(head: bytes, key: bytes) -> bool:
    """The first bytes name "traceEvents" and are not those of a yoloprof profile."""
    return key in head and not looks_like_profile(head)
