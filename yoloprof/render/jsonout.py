"""`--json` output: machine-readable, on stdout, and nothing else there."""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def _clean(obj: Any) -> Any:
    """JSON has no NaN/Infinity: emit them as null so every consumer (jq, JSON.parse) can read us."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return _clean(obj.item())
    return obj


def as_json(obj: Any) -> Any:
    """The value `emit_json` prints, as Python (what the API returns for the same result)."""
    return _clean(obj)


def emit_json(obj: Any, stream=None) -> None:
    stream = stream or sys.stdout
    json.dump(_clean(obj), stream, indent=1)
    stream.write("\n")
    stream.flush()
