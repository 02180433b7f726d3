"""Reading and writing profiles: atomic writes, version checks, and one entry point (`load_any`)
that turns either a profile.json or any raw Kineto trace into a profile dict for the readers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from yoloprof.errors import ProfileError, UsageError
from yoloprof.profiles.inputs import Input
from yoloprof.profiles.model import SCHEMA, SCHEMA_MAJOR, SCHEMA_NAME


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write via a temp file in the same folder + os.replace, so a crash or Ctrl-C leaves either
    the old file or the new one, never half of one."""
    import tempfile  # here: readers never write, and tempfile (shutil, random) costs start-up time

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from the user's group
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def dumps_profile(profile: dict[str, Any]) -> bytes:
    # "schema" is written first so that load_any can tell a profile from a trace by its first bytes.
    ordered = {"schema": profile["schema"], **{k: v for k, v in profile.items() if k != "schema"}}
    return (json.dumps(ordered, indent=1, allow_nan=False, default=_json_default) + "\n").encode()


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy / torch scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_profile(path: str | os.PathLike, profile: dict[str, Any]) -> Path:
    return write_bytes_atomic(path, dumps_profile(profile))


def read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes, gunzipped when it is gzip. Missing, unreadable, not a regular file or over
    the size limit = usage error (exit 2); present but broken = profile error (exit 1). The checks
    live in `profiles.inputs`."""
    return _nonblank(Input(path).read(), path)


def looks_like_profile(data: bytes) -> bool:
    return f'"schema": "{SCHEMA_NAME}/'.encode() in data[:256] or b'"schema":"yoloprof.profile/' in data[:256]


def parse_profile(data: bytes, source: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{source}: not valid JSON ({exc})") from None
    check_version(obj, source)
    return obj


def check_version(obj: Any, source: str) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("schema"), str):
        raise ProfileError(f"{source}: not a yoloprof profile (no 'schema' field)")
    name, _, version = obj["schema"].partition("/")
    major = version.split(".", 1)[0]  # any 1.x: minor versions only add optional sections
    if name != SCHEMA_NAME:
        raise ProfileError(f"{source}: schema {obj['schema']!r} is not a yoloprof profile")
    if major != str(SCHEMA_MAJOR):
        raise ProfileError(
            f"{source}: profile schema {obj['schema']} is not supported; this yoloprof reads {SCHEMA}"
        )


def read_profile(path: str | os.PathLike) -> dict[str, Any]:
    data = read_bytes(path)
    return parse_profile(data, str(path))


def load_any(path: str | os.PathLike) -> dict[str, Any]:
    """A profile dict from a profile.json, or from any Kineto trace (.json / .json.gz) by running
    the trace engine over it (kind "trace"). For a gzipped trace, decompression runs on a thread
    while the engine's modules (numpy...) are imported."""
    src = Input(path)
    if looks_like_profile(src.head):
        return parse_profile(_nonblank(src.read(), path), str(path))
    src.prefetch()
    from yoloprof.traces.to_profile import profile_from_trace_bytes

    try:
        return profile_from_trace_bytes(_nonblank(src.read(), path), source=str(path))
    except ProfileError as exc:  # every error names its file (the engine's messages may not)
        if str(path) in str(exc):
            raise
        raise ProfileError(f"{path}: {exc}") from None


def _nonblank(data: bytes, path: str | os.PathLike) -> bytes:
    if not data.strip():
        raise ProfileError(f"{path} is empty")
    return data
