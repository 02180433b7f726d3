"""One entry point for every reader: a profile dict from a profile.json or from any raw Kineto
trace (.json / .json.gz), the latter through the trace engine (kind "trace").

It lives here, above traces/, so that profiles/ (the storage layer) never imports the trace
engine. Detection does not depend on key order: a profile names `"schema": "yoloprof.profile/..."`
somewhere in the file. The first bytes (`Input.head`) usually show it; when they do not (a `jq -S`
sorted profile.json puts the key after "config", "env", ...) the whole file is searched before the
trace engine is tried. libreyolo's profile.json (`"schema": "libreyolo.profile.analysis/v1"`, its
first key) is read by `readers.libreyolo`. The full parse then confirms that the schema is the top-level key, and a
document whose top level is a Kineto trace ("traceEvents") goes to the trace engine even if some
event name happens to contain the mark. For a gzipped trace, decompression runs on a thread while
the engine's modules (numpy...) are imported.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from yoloprof.errors import ProfileError
from yoloprof.profiles.inputs import Input
from yoloprof.profiles.io import looks_like_profile, nonblank, parse_profile
from yoloprof.readers.libreyolo import looks_like_libreyolo, profile_from_libreyolo


def load_any(path: str | os.PathLike, select: Any = None) -> dict[str, Any]:
    """A validated profile dict; UsageError (exit 2) for a missing/unreadable/special path or one
    over the size limit, ProfileError (exit 1) for anything that is neither a valid profile nor a
    usable trace. Every error names the file. `select`: a `traces.step_selection.StepSelection` (only
    those steps of a trace analysed; `readers.select`)."""
    if select:
        from yoloprof.readers.select import load_selected

        src = Input(path)
        if looks_like_libreyolo(src.head):  # its trace's steps (`readers.libreyolo_trace`)
            return profile_from_libreyolo(nonblank(src.read(), path), str(path), select)

        return load_selected(path, select)
    from yoloprof.readers.large import load_streamed

    streamed = load_streamed(path)  # a large trace, in bounded memory (None: read it whole)
    if streamed is not None:
        return streamed
    src = Input(path)
    if looks_like_profile(src.head):
        return parse_profile(nonblank(src.read(), path), str(path))
    if looks_like_libreyolo(src.head):  # libreyolo's profile.json: its schema is its first key
        return profile_from_libreyolo(nonblank(src.read(), path), str(path))
    src.prefetch()
    # Imported while the prefetch thread inflates or reads the file (both release the GIL): numpy's
    # import and the I/O overlap. A profile whose mark is past the first bytes pays this import.
    from yoloprof.traces.kineto import TRACE_KEY
    from yoloprof.traces.to_profile import profile_from_trace_bytes

    data = nonblank(src.read(), path)
    # A Kineto trace names "traceEvents" in its first bytes (after schemaVersion and the device
    # list), where a profile never does: then the search of the whole buffer for the profile mark
    # is skipped, and only tried if the trace engine refuses the document.
    trace_first = TRACE_KEY in src.head
    if not trace_first and looks_like_profile(data):
        try:
            return parse_profile(data, str(path))
        except ProfileError:
            if TRACE_KEY not in data:
                raise

    try:
        return profile_from_trace_bytes(data, source=str(path))
    except ProfileError as exc:  # every error names its file (the engine's messages may not)
        if trace_first and looks_like_profile(data):
            with contextlib.suppress(ProfileError):
                return parse_profile(data, str(path))
        if str(path) in str(exc):
            raise
        raise ProfileError(f"{path}: {exc}") from None
