"""The `yoloprof` sweeper (`hydra/sweeper: yoloprof`, conf/config.yaml's default): Hydra's grid
sweeper with yoloprof's pre-flight, job order, submitit result gathering and `trial=auto`.

Hydra imports every module of the `hydra_plugins` namespace while it discovers plugins, so this
one imports only Hydra's public plugin API; yoloprof is loaded when a sweep starts.
"""

# (no `from __future__ import annotations`: Hydra executes this module before it is in
# sys.modules, where dataclasses cannot resolve string annotations)
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

TARGET = "hydra_plugins.yoloprof_sweeper.yoloprof_sweeper.YoloprofSweeper"


@dataclass
class YoloprofSweeperConf:
    """The basic sweeper's settings: the grid (`params`, as `key: a,b` strings) and the batch size
    of jobs handed to the launcher at once (None: all of a round)."""

    _target_: str = TARGET
    max_batch_size: Optional[int] = None
    params: Dict[str, str] = field(default_factory=dict)


ConfigStore.instance().store(group="hydra/sweeper", name="yoloprof", node=YoloprofSweeperConf,
                             provider="yoloprof")


class YoloprofSweeper(Sweeper):
    """A Hydra Sweeper; `sweep` returns the JobReturns of every batch, as Hydra's basic one."""

    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Dict[str, str]] = None) -> None:
        from yoloprof.sweep.sweeper import SweepRunner

        self.runner = SweepRunner(max_batch_size, params)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.runner.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    @property
    def launcher(self) -> Any:  # type: ignore[override]
        return self.runner.launcher

    def sweep(self, arguments: List[str]) -> Any:
        return self.runner.sweep(arguments)
