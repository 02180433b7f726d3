"""yoloprof: where does a PyTorch training step or inference call spend its time?"""

__version__ = "0.1.0"

# Public names imported on first use, so that `import yoloprof` (and `yoloprof get`) stays cheap
# and never imports torch. name -> (module, attribute)
_LAZY = {
    # profile your own code (docs/userloop.md)
    "profile": ("yoloprof.capture.loop", "profile"),
    "timeit": ("yoloprof.capture.decorators", "timeit"),
    "profileit": ("yoloprof.capture.decorators", "profileit"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'yoloprof' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
