"""A columnar cache beside a large trace, so that every reader after the first opens it at once.

What it holds: an Arrow IPC file of the trace's event columns (`parse.Events`: name, category,
thread, start, duration, correlation, device, stream and input-shape codes) as a record batch,
with in the schema's metadata the tables those codes index (names, shapes), the trace's metadata,
warnings and counts and its `[memory]` columns; and beside it, as JSON, the profile the readers
were given. A second `summary`/`kernels`/`ops`/`phases` of the same file reads only that JSON
(milliseconds, without importing pyarrow or numpy); the columns serve the readers that analyse
the events again (selections, `readers.select`).

Never stale: it is used only when its key equals the trace's now: size, mtime (ns), the cache's
format and the reader's version, a hash of the source of the packages that compute the figures
(`ENGINE_PACKAGES`), so a changed engine never serves an old figure. Never required: a cache
that cannot be written (read-only folder, full disk) is skipped, one that cannot be read (corrupt,
truncated, another format) is ignored and rewritten; both fall back to parsing the trace. Written
atomically (a temporary file in the same folder, then a rename), only when the trace did not
change while it was read.

Where: beside the trace as `.<trace file name>.yoloprof.arrow` and `.yoloprof.profile`, or in
$YOLOPROF_CACHE_DIR (two files per trace path); $YOLOPROF_CACHE=off turns it off. Only traces read as a stream
(`readers.large`, 64 MiB and more) are cached: a smaller one parses in well under a second.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "YOLOPROF_CACHE"  # "off" (or 0/no/false) turns the cache off
CACHE_DIR_ENV = "YOLOPROF_CACHE_DIR"  # a folder for every cache instead of beside each trace
CACHE_SUFFIX = ".yoloprof.arrow"  # the event columns
PROFILE_SUFFIX = ".yoloprof.profile"  # {"key": ..., "profile": ...} as JSON
FORMAT = 1
ENGINE_PACKAGES = ("traces", "metrics", "profiles", "defs", "readers")
_OFF = {"off", "0", "no", "false"}
_EVENT_COLUMNS = ("name", "cat", "thread", "ts", "dur", "corr", "device", "stream")
_MEMORY_COLUMNS = ("ts", "device_type", "device_id", "nbytes", "allocated", "reserved")


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "").strip().lower() not in _OFF


def profile_path(trace: Path) -> Path:
    """The profile's half of the cache: plain JSON, so that a second reader needs neither pyarrow
    nor numpy (their imports are most of its time)."""
    path = cache_path(trace)
    return path.with_name(path.name[:-len(CACHE_SUFFIX)] + PROFILE_SUFFIX)


def cache_path(trace: Path) -> Path:
    folder = os.environ.get(CACHE_DIR_ENV, "").strip()
    if folder:
        digest = hashlib.sha1(str(trace.resolve()).encode()).hexdigest()[:20]
        return Path(folder) / f"{digest}{CACHE_SUFFIX}"
    return trace.parent / f".{trace.name}{CACHE_SUFFIX}"


@functools.cache
def engine_version() -> str:
    """Hash of the source of every module that computes the figures (ENGINE_PACKAGES)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha1()
    for pkg in ENGINE_PACKAGES:
        for src in sorted((root / pkg).glob("*.py")):
            h.update(src.name.encode())
            h.update(src.read_bytes())
    return h.hexdigest()


def key_of(trace: Path) -> dict[str, Any] | None:
    try:
        st = os.stat(trace)
    except OSError:
        return None
    return {"format": FORMAT, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "version": engine_version()}


def read(trace: Path) -> dict[str, Any] | None:
    """The cached profile of `trace`, or None (off, absent, stale or unreadable)."""
    if not enabled():
        return None
    key = key_of(trace)
    path = profile_path(trace)
    if key is None or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_bytes())
        if doc["key"] != key:
            return None
        profile = doc["profile"]
    except Exception:  # noqa: BLE001 (any unreadable cache: parse the trace instead)
        return None
    return profile if isinstance(profile, dict) else None


def read_events(trace: Path) -> Any | None:
    """The cached event columns of `trace` as a `parse.Events`, or None."""
    if not enabled() or key_of(trace) is None or not cache_path(trace).is_file():
        return None
    try:
        import pyarrow as pa

        import numpy as np

        from yoloprof.traces.parse import Events, Memory

        with pa.memory_map(str(cache_path(trace)), "r") as src:
            reader = pa.ipc.open_file(src)
            meta = reader.schema.metadata or {}
            if json.loads(meta[b"key"]) != key_of(trace):
                return None
            table = reader.read_all()
        info = json.loads(meta[b"info"])
        cols = {c: table.column(c).to_numpy() for c in table.column_names}
        mem = Memory(*(np.frombuffer(meta[f"mem_{c}".encode()], np.float64).copy() for c in _MEMORY_COLUMNS))
        return Events(strings=info["strings"], t0=info["t0"], memory=mem, meta=info["meta"],
                      warnings=info["warnings"], counts=info["counts"], shape=cols.get("shape"),
                      shape_strings=info["shape_strings"], **{c: cols[c] for c in _EVENT_COLUMNS})
    except Exception:  # noqa: BLE001
        return None


def write(trace: Path, key: dict[str, Any] | None, events: Any, profile: dict[str, Any]) -> Path | None:
    """Write the cache of `trace` atomically; None when off, when the trace changed since `key`
    was taken (before it was read), or when it cannot be written."""
    if not enabled() or key is None or key_of(trace) != key:
        return None
    path = cache_path(trace)
    tmp = None
    try:
        import numpy as np
        import pyarrow as pa

        columns = {c: getattr(events, c) for c in _EVENT_COLUMNS}
        if events.shape is not None:
            columns["shape"] = events.shape
        info = {"strings": events.strings, "shape_strings": events.shape_strings, "t0": events.t0,
                "meta": events.meta, "warnings": events.warnings, "counts": events.counts}
        meta: dict[str, str | bytes] = {"key": json.dumps(key), "info": json.dumps(info, default=_plain)}
        meta.update({f"mem_{c}": np.ascontiguousarray(getattr(events.memory, c), np.float64).tobytes()
                     for c in _MEMORY_COLUMNS})
        table = pa.table(columns).replace_schema_metadata(meta)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from the trace's other readers
        with os.fdopen(fd, "wb") as fh, pa.ipc.new_file(fh, table.schema) as out:
            out.write_table(table)
        os.replace(tmp, path)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(json.dumps({"key": key, "profile": profile}, default=_plain).encode())
        os.replace(tmp, profile_path(trace))
        tmp = None
    except Exception:  # noqa: BLE001 (never required: an unwritable cache is skipped)
        return None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return path


def _plain(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return str(obj)
