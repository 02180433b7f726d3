"""yoloprof's Hydra sweeper is a plugin Hydra finds itself, selected by config, and a sweep
patches nothing of Hydra or submitit (the methods are the same objects before, during and after)."""

from __future__ import annotations

import pytest

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_sweep import fake_capture
from yoloprof.sweep.app import main

QUIET = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]


def test_hydra_plugin_discovery_lists_the_yoloprof_sweeper_and_the_config_selects_it():
    from hydra.core.plugins import Plugins
    from hydra.plugins.sweeper import Sweeper

    from yoloprof.config.compose import compose_job

    names = [f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(Sweeper)]
    target = "hydra_plugins.yoloprof_sweeper.yoloprof_sweeper.YoloprofSweeper"
    assert target in names
    cfg = compose_job([])
    assert cfg.hydra.sweeper._target_ == target and cfg.hydra.runtime.choices["hydra/sweeper"] == "yoloprof"
    # a sweep file may still pick another sweeper (its override comes after the default's)
    assert compose_job(["sweep=search_throughput"]).hydra.sweeper._target_.endswith("OptunaSweeper")


def _methods() -> dict[str, object]:
    """Every function attribute of the classes the old hooks patched, by identity."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    owners = [BasicSweeper, ConfigLoaderImpl]
    try:
        import submitit
        from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
        owners += [BaseSubmititLauncher, submitit.AutoExecutor]
    except ImportError:
        pass
    return {f"{o.__name__}.{k}": v for o in owners for k, v in vars(o).items() if callable(v) or isinstance(v, staticmethod)}


def test_a_sweep_patches_nothing(tmp_path, monkeypatch):
    before = _methods()
    during: list[dict[str, object]] = []

    def capture(settings, out_dir, **kw):
        during.append(_methods())
        return fake_capture(settings, out_dir, **kw)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", capture)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    assert main(["-m", "batch=1,2", "trial=range(0,2)", *QUIET]) == 0
    assert len(during) == 4 and all(d == before for d in during)
    assert _methods() == before


@pytest.mark.parametrize("args", [
    ["batch=1,2", "imgsz=64,128,256"],
    ["trial=range(0,3)", "precision=float32,bfloat16", "device=cpu"],
    ["model.width=choice(8,16)", "size=n", "+extra=a,b"],
    ["imgsz=range(32,129,32)", "batch=4"],
])
def test_the_grid_is_hydras_basic_sweeper_grid(args):
    """The expansion (sweep/grid.py, public override API) gives the jobs Hydra's own BasicSweeper
    gives, in its order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from yoloprof.sweep import grid

    parsed = OverridesParser.create().parse_overrides(args)
    assert grid.expand(parsed) == BasicSweeper.split_arguments(parsed, None)[0]
