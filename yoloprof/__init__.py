"""yoloprof: where does a PyTorch training step or inference call spend its time?

The public API (docs/CONTRACTS.md "Public API"; implemented in yoloprof/api.py), imported lazily
so that `import yoloprof` stays cheap (no torch, pandas or hydra until a function needs them):

    import yoloprof
    p = yoloprof.load("runs/profile/train/profile.json")   # profile.json or a Kineto trace
    print(p.summary())

- load(path) -> Profile (.summary() .phases() .kernels() .ops() .get(name) .what_if(...))
- compare(a, b, **opts) -> dict; capture(settings, out_dir) -> Profile, with CaptureSettings
- read_results(sweep_dir) -> DataFrame; analyze(sweep_dir, **opts) -> AnalysisResult
- ProfileError, UsageError, YoloprofError: the errors behind the CLI's exit codes
- profile(...), timeit, profileit: measure your own loop or function (docs/userloop.md)
"""

from __future__ import annotations

from typing import Any

from yoloprof.defs.version import __version__
from yoloprof.errors import ProfileError, UsageError, YoloprofError

# name -> (module, attribute): resolved on first use by __getattr__ below.
_LAZY = {
    "Profile": ("yoloprof.api", "Profile"),
    "load": ("yoloprof.api", "load"),
    "compare": ("yoloprof.api", "compare"),
    "ab": ("yoloprof.api", "ab"),
    "read_results": ("yoloprof.api", "read_results"),
    "analyze": ("yoloprof.api", "analyze"),
    "CaptureSettings": ("yoloprof.config.capture_settings", "CaptureSettings"),
    # profile your own code (docs/userloop.md)
    "profile": ("yoloprof.capturing.userloop.loop", "profile"),
    "timeit": ("yoloprof.capturing.userloop.decorators", "timeit"),
    "profileit": ("yoloprof.capturing.userloop.decorators", "profileit"),
}

__all__ = ["__version__", "ProfileError", "UsageError", "YoloprofError", "capture", *_LAZY]


def _callable_capture_package() -> None:
    """`yoloprof.capture` is both the capture subpackage and the public `capture(settings,
    out_dir)` function: Python binds a subpackage to its parent's attribute when it is first
    imported, so a plain function of that name would be replaced by the module. The package
    (an empty __init__, cheap to import) gets a module class with __call__ instead; its
    submodules stay reachable as attributes."""
    import types

    import yoloprof.capturing as package

    class CapturePackage(types.ModuleType):
        def __call__(self, settings: Any, out_dir: Any = "runs/profile/api", *, progress: bool = False,
                     project: Any = None) -> Any:
            from yoloprof.api import capture

            return capture(settings, out_dir, progress=progress, project=project)

    package.__class__ = CapturePackage


_callable_capture_package()


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
