"""yoloprof: where does a PyTorch training step or inference call spend its time?

The public API (docs/CONTRACTS.md "Public API"; implemented in yoloprof/api.py), imported lazily
so that `import yoloprof` stays cheap (no torch, pandas or hydra until a function needs them):

    import yoloprof
    p = yoloprof.load("runs/profile/train/profile.json")   # profile.json or a Kineto trace
    print(p.summary())

- load(path, steps=, window=) -> Profile: one method per reader of the CLI (readers/table.py):
  .summary() .report() .get(field) .phases() .kernels() .ops() .modules() .hotspots()
  .what_if(...) .compare(after), each returning what `yoloprof <reader> --json` prints
- compare(a, b, metrics=, alpha=, noise=, ...) -> CompareResult; capture(settings, out_dir) ->
  Profile, with CaptureSettings
- read_results(sweep_dir) -> DataFrame; analyze(sweep_dir, baseline=, ...) -> AnalysisResult
- ProfileError, UsageError, YoloprofError: the errors behind the CLI's exit codes
- profile(...), timeit, profileit: measure your own loop or function (docs/userloop.md)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yoloprof.defs.version import __version__
from yoloprof.errors import ProfileError, UsageError, YoloprofError

if TYPE_CHECKING:
    from yoloprof.api import Profile
    from yoloprof.config.capture_settings import CaptureSettings

# name -> (module, attribute): resolved on first use by __getattr__ below.
_LAZY = {
    "Profile": ("yoloprof.api", "Profile"),
    "load": ("yoloprof.api", "load"),
    "compare": ("yoloprof.api", "compare"),
    "ab": ("yoloprof.api", "ab"),
    "read_results": ("yoloprof.api", "read_results"),
    "analyze": ("yoloprof.api", "analyze"),
    "capture": ("yoloprof.api", "capture"),  # its package is yoloprof.capturing
    "CaptureSettings": ("yoloprof.config.capture_settings", "CaptureSettings"),
    # profile your own code (docs/userloop.md)
    "profile": ("yoloprof.capturing.userloop.loop", "profile"),
    "timeit": ("yoloprof.capturing.userloop.decorators", "timeit"),
    "profileit": ("yoloprof.capturing.userloop.decorators", "profileit"),
    "profile_trainer": ("yoloprof.capturing.userloop.ultralytics_hooks", "profile_trainer"),
}

# spelled out for tools that read __all__ statically (ruff, type checkers); tests/test_api_typed.py
# checks it is exactly the eager names and _LAZY's
__all__ = [
    "CaptureSettings",
    "Profile",
    "ProfileError",
    "UsageError",
    "YoloprofError",
    "__version__",
    "ab",
    "analyze",
    "capture",
    "compare",
    "load",
    "profile",
    "profile_trainer",
    "profileit",
    "read_results",
    "timeit",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'yoloprof' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
