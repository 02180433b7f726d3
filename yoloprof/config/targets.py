"""Resolving a dotted `_target_` ('usermodels.TinyResNet') with one message for every failure.

Why one home: the CLI (`workloads.models.import_target`) and the sweep's pre-flight
(`config.translate.check_target`) once worded a misspelled class differently; the sweep said
"No module named 'usermodels.TinyResNett'; 'usermodels' is not a package" (Hydra's `_locate`
tries the whole path as a module first). Here the longest importable module prefix is imported
and the rest looked up as attributes, so a misspelling reads "module 'usermodels' has no
attribute 'TinyResNett' (did you mean 'TinyResNet'?)".
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Any

from yoloprof.errors import UsageError


def _import_prefix(parts: list[str], target: str) -> tuple[Any, int]:
    """The longest importable module prefix of `parts` and how many parts it uses."""
    for n in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:n])
        try:
            return importlib.import_module(name), n
        except ModuleNotFoundError as exc:
            if exc.name is not None and not name.startswith(exc.name) and not exc.name.startswith(name):
                raise UsageError(f"cannot import {target!r}: {type(exc).__name__}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any failure inside the user's module is a usage problem
            raise UsageError(f"cannot import {target!r}: {type(exc).__name__}: {exc}") from None
    raise UsageError(f"cannot import {target!r}: ModuleNotFoundError: No module named {parts[0]!r}")


def missing_attribute(owner_name: str, owner: Any, attr: str) -> str:
    """"module 'm' has no attribute 'x' (did you mean 'y'?)": the closest public name, if any."""
    close = difflib.get_close_matches(attr, [n for n in dir(owner) if not n.startswith("_")], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"module {owner_name!r} has no attribute {attr!r}{hint}"


def locate(target: str) -> Any:
    """The object `target` names (the cwd on sys.path, as for a user's own module); UsageError
    naming the target and what is missing otherwise."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    importlib.invalidate_caches()  # a module written after start-up (tests, notebooks) is found
    parts = target.split(".")
    if len(parts) < 2 or not all(parts):
        raise UsageError(f"target {target!r} must be a dotted path like 'mymodule.Factory'")
    from yoloprof.config.model_families import stay_offline

    stay_offline(target)
    obj, n = _import_prefix(parts, target)
    owner = ".".join(parts[:n])
    for attr in parts[n:]:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise UsageError(f"cannot import {target!r}: {missing_attribute(owner, obj, attr)}") from None
        owner = f"{owner}.{attr}"
    return obj
