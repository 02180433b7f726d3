"""Configurations (one per group_hash), the axes that vary across them, and the baseline plan.

A baseline is a set of axis values. Every other configuration is compared with the baseline
configuration that agrees with it on all varying axes the baseline does not name, so
`--baseline batch=1` in a batch x imgsz sweep compares batch=16,imgsz=640 with batch=1,imgsz=640,
and `--vary batch` is the same as `--baseline batch=<first level>`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd

from yoloprof.errors import UsageError

AXIS_COLUMNS = ("mode", "model", "size", "data", "device", "batch", "imgsz", "amp", "amp_dtype",
                "workers", "warmup", "steps", "runs", "repeat")
# Keys that never define a configuration: trials are pooled, seeds are part of a trial.
NOT_AXES = {"trial", "seed"}


def fmt_value(v: object) -> str:
    """One spelling per value, for labels and for matching `--baseline key=value` strings."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "null"
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _override_axes(overrides: object) -> dict[str, str]:
    """Extra axes from the job's Hydra overrides (e.g. capture.steps=50) not in the row columns."""
    try:
        items = json.loads(overrides) if isinstance(overrides, str) else []
    except ValueError:
        return {}
    out = {}
    for item in items if isinstance(items, list) else []:
        key, sep, value = str(item).lstrip("+~").partition("=")
        if sep and key not in AXIS_COLUMNS and key not in NOT_AXES and not key.startswith(("hydra", "sweep")):
            out[key] = value
    return out


@dataclass
class Configs:
    table: pd.DataFrame          # one row per group_hash, in order of first job; axis columns
    axes: list[str]              # every axis column present
    varying: list[str]           # axes with more than one value

    def label(self, group_hash: str) -> str:
        if "_labels" not in self.__dict__:
            self.__dict__["_labels"] = dict(zip(self.table.index, self.table["config"].astype(str)))
        return self.__dict__["_labels"][group_hash]

    def levels(self, axis: str) -> list[object]:
        """Levels of an axis: numbers ascending, anything else in order of first appearance."""
        vals = list(dict.fromkeys(self.table[axis].tolist()))
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return sorted(nums) if len(nums) == len(vals) else vals


def build_configs(ok: pd.DataFrame) -> Configs:
    first = ok.drop_duplicates("group_hash", keep="first").set_index("group_hash", drop=False)
    extra = pd.DataFrame([_override_axes(o) for o in first.get("overrides", pd.Series(index=first.index))],
                         index=first.index)
    axes = [c for c in AXIS_COLUMNS if c in first] + [c for c in extra.columns if c not in first]
    table = pd.concat([first[[c for c in AXIS_COLUMNS if c in first]], extra[[c for c in axes if c in extra]]], axis=1)
    table = table.astype(object).where(table.notna(), None)
    varying = [a for a in axes if table[a].map(fmt_value).nunique() > 1]
    labels = (table[varying].apply(lambda r: ", ".join(f"{a}={fmt_value(r[a])}" for a in varying), axis=1)
              if varying else pd.Series("all jobs", index=table.index))
    dup = labels.duplicated(keep=False)
    labels[dup] = labels[dup] + " #" + table.index[dup].str[:6]
    table.insert(0, "config", labels)
    table.insert(1, "group_hash", table.index)
    table["n_jobs"] = ok.groupby("group_hash").size().reindex(table.index).to_numpy()
    return Configs(table, axes, varying)


@dataclass
class Plan:
    """Which baseline each configuration is compared with, and how that was decided."""

    pairs: dict[str, str]                     # group_hash -> baseline group_hash
    baselines: list[str]                      # baseline group hashes
    description: str
    unpaired: list[str] = field(default_factory=list)


def _parse_baseline(items: list[str], configs: Configs) -> dict[str, str]:
    keys: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--baseline takes KEY=VALUE, not {item!r}")
        if key not in configs.axes:
            raise UsageError(f"--baseline: unknown axis {key!r}; axes: {', '.join(configs.axes)}")
        keys[key] = value
    return keys


def _match(configs: Configs, keys: dict[str, str]) -> list[str]:
    t = configs.table
    mask = pd.Series(True, index=t.index)
    for k, v in keys.items():
        mask &= t[k].map(fmt_value).str.lower() == v.lower()
    if not mask.any():
        avail = "; ".join(f"{k} has {', '.join(fmt_value(x) for x in configs.levels(k))}" for k in keys)
        shown = " ".join(f"{k}={v}" for k, v in keys.items())
        raise UsageError(f"baseline {shown} matches no ok job ({avail})")
    return list(t.index[mask])


def _pair(configs: Configs, keys: dict[str, str], base: list[str], description: str) -> Plan:
    others = [a for a in configs.varying if a not in keys]
    t = configs.table
    sig = t[others].apply(lambda r: tuple(fmt_value(x) for x in r), axis=1) if others else pd.Series(
        [()] * len(t), index=t.index)
    by_sig = {}
    for g in base:
        by_sig.setdefault(sig[g], g)
    pairs, unpaired = {}, []
    for g in t.index:
        if g in base:
            continue
        if sig[g] in by_sig:
            pairs[g] = by_sig[sig[g]]
        else:
            unpaired.append(g)
    return Plan(pairs, base, description, unpaired)


def plan_baseline(configs: Configs, *, baseline: list[str] | None = None, vary: str | None = None) -> Plan:
    """Resolve --baseline / --vary / the default rule into comparison pairs (see module doc)."""
    if baseline and vary:
        raise UsageError("give either --baseline or --vary, not both")
    if vary is not None:
        if vary not in configs.varying:
            raise UsageError(f"--vary {vary}: that axis does not vary in this sweep; axes that vary: "
                             f"{', '.join(configs.varying) or 'none'}")
        first = fmt_value(configs.levels(vary)[0])
        keys = {vary: first}
        return _pair(configs, keys, _match(configs, keys), f"each level of {vary} vs {vary}={first}, "
                     "within every combination of the other axes")
    if baseline:
        keys = _parse_baseline(baseline, configs)
        shown = " ".join(f"{k}={v}" for k, v in keys.items())
        return _pair(configs, keys, _match(configs, keys), f"baseline {shown} (given)")
    if not configs.varying:
        return Plan({}, list(configs.table.index[:1]), "one configuration only: nothing to compare")
    if len(configs.varying) == 1:
        axis = configs.varying[0]
        first = fmt_value(configs.levels(axis)[0])
        keys = {axis: first}
        return _pair(configs, keys, _match(configs, keys), f"baseline {axis}={first} "
                     f"(first level of the only swept axis)")
    g0 = configs.table.index[0]
    keys = {a: fmt_value(configs.table.loc[g0, a]) for a in configs.varying}
    return _pair(configs, keys, [g0], f"baseline {configs.label(g0)} (the first job's configuration; "
                 "choose with --baseline KEY=VALUE or --vary AXIS)")
