"""The one home of Hydra's private API (`hydra._internal`) in yoloprof.

Why any private API at all: Hydra's public API composes configs for an app (`hydra.compose`,
`hydra.main`), but yoloprof's pre-flight needs what `hydra.main` does before it runs anything -
its command-line parser, a Hydra instance over a search path (to ask for the run mode and compose
the sweep config with its `hydra` node), a config loader for shell completion, and Hydra's own
import of a `_target_` without its error logging. Everything else (the sweeper, the launchers,
override parsing, the config store) goes through Hydra's public plugin API
(`hydra_plugins/yoloprof_sweeper`).

Each function below is a thin pass-through; tests/test_config_hydra_adapter.py pins the private
behaviour each one relies on, so a Hydra upgrade that changes it fails there, by name.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type of main_hydra's instance, for its callers' annotations (mypy only)
    from hydra._internal.hydra import Hydra as HydraApp


def args_parser() -> argparse.ArgumentParser:
    """Hydra's own command-line parser (`-m`, `--config-dir`, `--cfg`, `-sc`, overrides...)."""
    from hydra._internal.utils import get_args_parser

    return get_args_parser()


def locate(path: str) -> Any:
    """Import the object a dotted `_target_` names; raises ImportError with the reason.
    (`hydra.utils.get_object` does the same but also logs an error line of its own.)"""
    from hydra._internal.utils import _locate

    return _locate(path)


def search_path(primary: str) -> Any:
    """Hydra's config search path with `primary` (a `file://` or `pkg://` URL) as the app's own."""
    from hydra._internal.utils import create_config_search_path

    return create_config_search_path(primary)


def main_hydra(task_name: str, config_search_path: Any) -> "HydraApp":
    """A Hydra instance (registered globally, as `hydra.main` makes it) over the search path:
    `compose_config(..., run_mode=...)`, `get_mode(...)` and `config_loader`."""
    from hydra._internal.hydra import Hydra

    return Hydra.create_main_hydra2(task_name=task_name, config_search_path=config_search_path)


def config_loader(config_search_path: Any) -> Any:
    """Hydra's config loader over the search path (what its completion plugin reads)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    return ConfigLoaderImpl(config_search_path=config_search_path)
