"""Where the Hydra config (`conf/`) and the experiment files (`sweeps/`) are.

The repository keeps them at the top level (the design card's layout); a built wheel carries them
inside the package as `yoloprof/conf` and `yoloprof/sweeps` (setup.py's build step copies them),
so `yoloprof sweep +sweep=NAME` works after `pip install` from any folder. A checkout, plain or
installed with `pip install -e .`, reads them from the repository itself.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # yoloprof/


def _data_dir(name: str, marker: str) -> Path:
    """The packaged copy when it holds `marker` (a bare folder, such as a `__pycache__` left behind
    by the old layout, does not count), else the checkout's."""
    packaged = _PACKAGE / name
    return packaged if any(packaged.glob(marker)) else _PACKAGE.parent / name


def conf_dir() -> Path:
    """The primary config (`config.yaml`) and its groups."""
    return _data_dir("conf", "config.yaml")


def sweeps_dir() -> Path:
    """The packaged experiment files, selected with `+sweep=NAME`."""
    return _data_dir("sweeps", "*.yaml")
