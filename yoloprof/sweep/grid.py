"""A sweep's grid from its overrides, through Hydra's public override parser: the job list the
yoloprof sweeper runs and the pre-flight plans (one expansion, so count and order agree).

The expansion is Hydra's BasicSweeper's (the cartesian product of every sweep override, first
key outermost, `range()`/`choice()`/`a,b` as Hydra expands them), written here against the
public `Override` API instead of calling the basic sweeper's private class. `trial=auto` is not
a value but the adaptive sweep's switch (sweep/adaptive.py): it is taken out of the grid.
"""

from __future__ import annotations

import itertools
from typing import Any

from yoloprof.errors import UsageError

AUTO = "auto"          # `trial=auto`: the sweeper decides how many trials each configuration gets
TRIAL_KEY = "trial"


def expand(overrides: list[Any]) -> list[list[str]]:
    """Job override lists from parsed Hydra overrides (hydra.core.override_parser.types.Override)."""
    lists: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise UsageError(f"{key}: the yoloprof sweeper runs grids (a,b or range() or choice()); "
                                 f"interval sweeps need a search sweeper (hydra/sweeper=optuna)")
            lists[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            lists[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*lists.values())]


def parse(config_loader: Any, items: list[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create(config_loader=config_loader).parse_overrides(items)


def is_auto(job: list[str]) -> bool:
    return any(_trial_item(item) and item.split("=", 1)[1] == AUTO for item in job)


def _trial_item(item: str) -> bool:
    return item.lstrip("+").startswith(f"{TRIAL_KEY}=")


def with_trial(job: list[str], trial: int) -> list[str]:
    """The job with its `trial=auto` (or any trial item) set to `trial`, in the same place."""
    return [f"{item.split('=', 1)[0]}={trial}" if _trial_item(item) else item for item in job]


def params_items(params: Any) -> list[str]:
    """`hydra.sweeper.params` as override strings (Hydra's order), `trial=auto` included."""
    if not params:
        return []
    return [f"{key}={value}" for key, value in dict(params).items()]
