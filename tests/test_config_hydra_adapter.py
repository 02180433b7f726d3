"""The private Hydra behaviour yoloprof relies on, pinned: config/hydra_adapter.py is the one
module that imports `hydra._internal`, and each of its functions is checked here for exactly what
its callers use, so a Hydra upgrade that changes it fails by name instead of deep in a sweep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from yoloprof.config import hydra_adapter

REPO = Path(__file__).resolve().parents[1]


def test_hydra_internal_is_imported_by_one_module_only():
    """`hydra._internal` appears in the source of exactly one yoloprof module (and in none of the
    sweeper plugin's): everything else uses Hydra's public API."""
    users = sorted(str(p.relative_to(REPO)) for root in ("yoloprof", "hydra_plugins")
                   for p in (REPO / root).rglob("*.py") if re.search(r"\bhydra\._internal\b", p.read_text()))
    assert users == ["yoloprof/config/hydra_adapter.py"]


def test_args_parser_reads_hydra_flags_intermixed_with_overrides():
    args = hydra_adapter.args_parser().parse_intermixed_args(["batch=1,2", "-m", "--config-dir", "d", "x=3"])
    assert args.multirun and args.config_dir == "d" and args.overrides == ["batch=1,2", "x=3"]
    info = hydra_adapter.args_parser().parse_args(["--cfg", "job", "-sc", "install=bash"])
    assert info.cfg == "job" and info.shell_completion
    for flag in ("help", "hydra_help", "info", "shell_completion", "cfg", "config_dir", "multirun"):
        assert hasattr(info, flag), flag  # sweep/app.py reads each of these attributes


def test_locate_imports_a_target_or_raises_import_error_with_the_cause():
    from collections import OrderedDict

    assert hydra_adapter.locate("collections.OrderedDict") is OrderedDict
    with pytest.raises(ImportError):
        hydra_adapter.locate("no_such_module_here.Net")


def test_main_hydra_composes_with_the_hydra_node_and_tells_the_run_mode():
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    from yoloprof.config.paths import conf_dir
    from yoloprof.config.schema import register

    register()
    GlobalHydra.instance().clear()
    try:
        hydra = hydra_adapter.main_hydra("yoloprof", hydra_adapter.search_path(f"file://{conf_dir()}"))
        assert hydra.get_mode("config", ["hydra.mode=MULTIRUN"]) == RunMode.MULTIRUN
        cfg = hydra.compose_config("config", ["batch=1,2"], with_log_configuration=False, run_mode=RunMode.MULTIRUN)
        assert list(cfg.hydra.overrides.task) == ["batch=1,2"] and "sweep" in cfg.hydra
        assert "demo" in hydra.config_loader.get_group_options("sweep")
        # the loader the sweeper wraps (sweep/sweeper.py ReusingLoader): one job's config
        job = hydra.config_loader.load_sweep_config(cfg, ["batch=2"])
        assert job.batch == 2 and job.hydra.job.override_dirname == "batch=2"
    finally:
        GlobalHydra.instance().clear()


def test_config_loader_lists_groups_for_completion():
    from yoloprof.config.paths import conf_dir
    from yoloprof.config.schema import register

    register()
    loader = hydra_adapter.config_loader(hydra_adapter.search_path(f"file://{conf_dir()}"))
    assert {"train", "infer"} <= set(loader.get_group_options("mode"))
