"""The model families by name: one row each (docs/workloads.md "Model families").

A model setting names its family: `yolo` (the built-in detector), `ultralytics:yolov8n.yaml`,
`libreyolo:yolo9`, `torchvision:resnet18`; anything else is a user's factory by dotted path
(`mymodels.Net`), or, from Python, a callable or an `nn.Module`. Sweeps spell the same with the
config group `model=<family>` and the family's name key (`model.cfg=`, `model.family=`,
`model.name=`: `name_key`). Each row names its adapter by "module:attribute" (imported only when
the family is chosen: workloads/families.py) and the optional extra that installs its package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yoloprof.errors import UsageError


SEPARATOR = ":"  # `--model <family>:<name>`


@dataclass(frozen=True)
class Family:
    """One row of the table: how a family is named, found and installed."""

    adapter: str  # "module:attribute" of its Adapter, imported when the family is chosen
    package: str | None  # the import name of its package (None: part of yoloprof)
    extra: str | None  # the pip extra of yoloprof that installs it
    name_key: str | None  # its Hydra key for the model's name (conf/model/<family>.yaml)
    example: str  # a model name of the family, for help and errors
    help: str
    # environment its package reads at import to stay offline (set unless the user set it)
    offline_env: tuple[tuple[str, str], ...] = ()


FAMILIES: dict[str, Family] = {
    "yolo": Family("yoloprof.workloads.family_builtin:BUILTIN", None, None, None, "yolo",
                   "the built-in YOLO-style detector (sizes n s m l x)"),
    "factory": Family("yoloprof.workloads.family_builtin:FACTORY", None, None, "_target_", "mymodels.Net",
                      "any importable factory of an nn.Module, by dotted path"),
    "ultralytics": Family("yoloprof.workloads.family_ultralytics:ADAPTER", "ultralytics", "ultralytics", "cfg",
                          "yolov8n.yaml", "an Ultralytics model yaml (yolov8n.yaml, yolo11n.yaml) or .pt",
                          # its import resolves two DNS names to decide whether it is online
                          offline_env=(("YOLO_OFFLINE", "1"),)),
    "libreyolo": Family("yoloprof.workloads.family_libreyolo:ADAPTER", "libreyolo", "libreyolo", "family",
                        "yolo9", "a LibreYOLO model family, its size by --size"),
    "torchvision": Family("yoloprof.workloads.family_torchvision:ADAPTER", "torchvision", "torchvision", "name",
                          "resnet18", "a torchvision classification or detection builder by name"),
}
BUILTIN, FACTORY = "yolo", "factory"
# families whose models come in sizes chosen by the `size` setting
SIZED = (BUILTIN, "libreyolo")
# families named `<family>:<name>` (the built-in is `yolo`, a factory its dotted path)
NAMED = tuple(k for k in FAMILIES if k not in (BUILTIN, FACTORY))


def split_model(model: Any) -> tuple[str, Any]:
    """(family, the family's model name) of a model setting; UsageError for an unknown family."""
    if not isinstance(model, str):
        return FACTORY, model
    if model == BUILTIN:
        return BUILTIN, BUILTIN
    family, sep, name = model.partition(SEPARATOR)
    if not sep:
        return FACTORY, model
    if family not in NAMED:
        import difflib

        close = difflib.get_close_matches(family, NAMED, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}{SEPARATOR}{name}?)" if close else ""
        raise UsageError(f"--model {model}: unknown model family {family!r}{hint}; families: "
                         f"{', '.join(f'{k}:<name>' for k in NAMED)}, yolo, or a factory's dotted path")
    if not name:
        raise UsageError(f"--model {model}: name the {family} model, e.g. {family}{SEPARATOR}{FAMILIES[family].example}")
    return family, name


def family_of(model: Any) -> str:
    return split_model(model)[0]


def stay_offline(module: str) -> None:
    """Before `module` is imported: the environment that keeps its package from reaching for the
    network (a family's `offline_env`), where the user has not set it."""
    import os

    top = module.split(".")[0]
    for row in FAMILIES.values():
        if row.package == top:
            for key, value in row.offline_env:
                os.environ.setdefault(key, value)
