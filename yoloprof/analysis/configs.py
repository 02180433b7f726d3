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
from typing import Any

import pandas as pd

from yoloprof.config.axes import config_axes, override_keys, per_mode_axes, pooled
from yoloprof.errors import UsageError

# The configuration axes: the capture settings' sweep axes but the pooled (config/axes.py).
AXIS_COLUMNS = config_axes()
# Keys that never define a configuration: trials are pooled, seeds are part of a trial.
NOT_AXES = set(pooled())
# Override keys spelled differently from their row column (`capture.steps`, `model._target_`).
KEY_COLUMNS = override_keys()
# Row fields that follow from the mode (steps for training, runs for inference, its data): never
# an axis unless the user swept them.
DERIVED = per_mode_axes()


def fmt_value(v: object) -> str:
    """One spelling per value, for labels and for matching `--baseline key=value` strings."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "null"
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def short_value(v: object) -> str:
    """A dotted import path shortened to its last name (`pkg.models.Net` -> `Net`)."""
    text = fmt_value(v)
    head, dot, tail = text.rpartition(".")
    return tail if dot and head and tail and text.replace(".", "").replace("_", "").isalnum() \
        and not text.replace(".", "").isdigit() else text


def column_of(key: str) -> str:
    """The row column (or extra axis name) an override key sets."""
    key = key.lstrip("+~")
    if key in KEY_COLUMNS:
        return KEY_COLUMNS[key]
    if key.startswith("capture.") and key[len("capture."):] in AXIS_COLUMNS:
        return key[len("capture."):]
    return key


def _overrides(overrides: object) -> dict[str, str]:
    """A job's Hydra overrides as {key: value}, without Hydra's own keys, the sweep choice, trials
    and seeds."""
    try:
        items = json.loads(overrides) if isinstance(overrides, str) else []
    except ValueError:
        return {}
    out = {}
    for item in items if isinstance(items, list) else []:
        key, sep, value = str(item).lstrip("+~").partition("=")
        if sep and key not in NOT_AXES and not key.startswith(("hydra", "sweep", "resume")):
            out[key] = value
    return out


def _override_axes(overrides: object) -> dict[str, str]:
    """Extra axes from the job's Hydra overrides (e.g. model.width=32) not in the row columns."""
    return {k: v for k, v in _overrides(overrides).items() if column_of(k) not in AXIS_COLUMNS}


def swept_columns(first: pd.DataFrame) -> set[str] | None:
    """The columns (and extra axes) whose override value differs between configurations; None
    when the rows carry no overrides (older rows, synthetic tables)."""
    if "overrides" not in first or first["overrides"].isna().all():
        return None
    per_job = [_overrides(o) for o in first["overrides"]]
    keys = {k for d in per_job for k in d}
    return {column_of(k) for k in keys if len({d.get(k) for d in per_job}) > 1}


def _fallback_varying(table: pd.DataFrame, cols: list[str]) -> list[str]:
    """Without overrides: columns that vary, less the derived ones that only follow the mode."""
    out = []
    for a in cols:
        if table[a].map(fmt_value).nunique() <= 1:
            continue
        if a in DERIVED and "mode" in table and table["mode"].map(fmt_value).nunique() > 1 and \
                (table.groupby(table["mode"].map(fmt_value))[a].agg(lambda s: s.map(fmt_value).nunique()) <= 1).all():
            continue
        out.append(a)
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

    def levels(self, axis: str) -> list[Any]:
        """Levels of an axis: numbers ascending, anything else in order of first appearance."""
        vals = list(dict.fromkeys(self.table[axis].tolist()))
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return sorted(nums) if len(nums) == len(vals) else vals


def axis_text(table: pd.DataFrame, axis: str) -> pd.Series:
    """How an axis' values are shown (tables and plots alike): import paths shortened to their
    last name when that stays unambiguous, else in full."""
    full = table[axis].map(fmt_value)
    short = table[axis].map(short_value)
    return short if short.nunique() == full.nunique() else full


def swept_key(per_config: list[dict[str, str]], axis: str) -> str | None:
    """The one override key that tells the configurations apart on `axis` when the user swept it
    under another name (`model.cfg=yolov8n.yaml,yolo11n.yaml` sets the `model` column to
    `ultralytics:yolov8n.yaml` ...): where it is shorter, the label reads as typed,
    `model.cfg=yolo11n.yaml`, not `model=ultralytics:yolo11n.yaml` whose distinguishing part is at
    its end. None when the axis' own key varies, several keys do, or a configuration lacks it."""
    keys = {k for d in per_config for k in d if column_of(k) == axis}
    varying = [k for k in keys if len({d.get(k) for d in per_config}) > 1]
    if len(varying) != 1 or varying[0].lstrip("+~") == axis or any(varying[0] not in d for d in per_config):
        return None
    return varying[0]


def _labels(table: pd.DataFrame, varying: list[str], overrides: list[dict[str, str]] | None = None) -> pd.Series:
    """`axis=value, ...` over the swept axes; import paths shortened when that stays unambiguous;
    an axis swept under another key shown under that key (`swept_key`)."""
    if not varying:
        return pd.Series("all jobs", index=table.index)
    shown: dict[str, Any] = {a: axis_text(table, a) for a in varying}
    names = {a: a for a in varying}
    for a in varying:
        key = swept_key(overrides, a) if overrides else None
        if key is None or overrides is None:
            continue
        typed = pd.Series([d[key] for d in overrides], index=table.index)
        # the shorter spelling: `model.cfg=yolo11n.yaml` over `model=ultralytics:yolo11n.yaml`, but
        # `model=NetB` (an import path shortened) over `model._target_=pkg.nets.NetB`
        if sum(len(f"{key}={v}") for v in typed) < sum(len(f"{a}={v}") for v in shown[a]):
            names[a], shown[a] = key, typed
    labels = pd.Series([", ".join(f"{names[a]}={shown[a][g]}" for a in varying) for g in table.index],
                       index=table.index)
    dup = labels.duplicated(keep=False)
    labels[dup] = labels[dup] + " #" + table.index[dup].str[:6]
    return labels


def build_configs(ok: pd.DataFrame) -> Configs:
    """One row per configuration. Its axes are the keys the user swept (read from the jobs'
    override lists), not every field that happens to differ: steps/runs/data follow the mode."""
    first = ok.drop_duplicates("group_hash", keep="first").set_index("group_hash", drop=False)
    extra = pd.DataFrame([_override_axes(o) for o in first.get("overrides", pd.Series(index=first.index))],
                         index=first.index)
    axes = [c for c in AXIS_COLUMNS if c in first] + [c for c in extra.columns if c not in first]
    table = pd.concat([first[[c for c in AXIS_COLUMNS if c in first]], extra[[c for c in axes if c in extra]]], axis=1)
    table = table.astype(object).where(table.notna(), None)
    swept = swept_columns(first)
    if swept is None:
        varying = _fallback_varying(table, axes)
    else:
        varying = [a for a in axes if a in swept and table[a].map(fmt_value).nunique() > 1]
    per_config = ([_overrides(o) for o in first["overrides"]]
                  if swept is not None and "overrides" in first else None)
    table.insert(0, "config", _labels(table, varying, per_config))
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


def axis_name(name: str, configs: Configs, flag: str) -> str:
    """The axis a user's key names: the axis itself, the override key that sets it
    (`model._target_` -> model, `capture.steps` -> steps), or the only axis under a dotted prefix
    (`model` -> model.width when only that one exists)."""
    if name in configs.axes:
        return name
    col = column_of(name)
    if col in configs.axes:
        return col
    under = [a for a in configs.axes if a.startswith(name + ".")]
    if len(under) == 1:
        return under[0]
    raise UsageError(f"{flag}: unknown axis {name!r}; axes: {', '.join(configs.axes)}")


def _parse_baseline(items: list[str], configs: Configs) -> dict[str, str]:
    keys: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--baseline takes KEY=VALUE, not {item!r}")
        keys[axis_name(key, configs, "--baseline")] = value
    return keys


def _match(configs: Configs, keys: dict[str, str]) -> list[str]:
    """Configurations whose value of every key is the given one (full or short spelling)."""
    t = configs.table
    mask = pd.Series(True, index=t.index)
    for k, v in keys.items():
        v = v.strip("'\"").lower()
        mask &= (t[k].map(fmt_value).str.lower() == v) | (t[k].map(short_value).str.lower() == v)
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
    by_sig: dict[tuple[str, ...], Any] = {}
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


def _subset(configs: Configs, mode: str) -> Configs:
    """The configurations of one mode, with the axes that vary inside it."""
    t = configs.table[configs.table["mode"].map(fmt_value) == mode]
    varying = [a for a in configs.varying if a != "mode" and t[a].map(fmt_value).nunique() > 1]
    return Configs(t, configs.axes, varying)


def _default_plan(configs: Configs) -> Plan:
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


def _per_mode(configs: Configs) -> Plan:
    """The default rule applied inside each mode: a training step is never compared with an
    inference call."""
    pairs, bases, parts, unpaired = {}, [], [], []
    for mode in dict.fromkeys(configs.table["mode"].map(fmt_value)):
        sub = _default_plan(_subset(configs, mode))
        pairs.update(sub.pairs)
        bases += sub.baselines
        unpaired += sub.unpaired
        parts.append(f"mode={mode}: {sub.description}")
    return Plan(pairs, bases, "within each mode: " + "; ".join(parts), unpaired)


def plan_baseline(configs: Configs, *, baseline: list[str] | None = None, vary: str | None = None) -> Plan:
    """Resolve --baseline / --vary / the default rule into comparison pairs (see module doc).
    Pairs never cross modes: mode is never a baseline key, and configurations are only paired
    with a baseline of their own mode."""
    if baseline and vary:
        raise UsageError("give either --baseline or --vary, not both")
    modes = "mode" in configs.varying
    if vary is not None:
        try:
            vary = axis_name(vary, configs, "--vary")
        except UsageError:
            pass  # said below, with the axes that do vary
        if vary == "mode" and modes:
            raise UsageError("--vary mode: a training step and an inference call measure different work; "
                             "modes are compared only within themselves")
        if vary not in configs.varying:
            raise UsageError(f"--vary {vary}: that axis does not vary in this sweep; axes that vary: "
                             f"{', '.join(configs.varying) or 'none'}")
        first = fmt_value(configs.levels(vary)[0])
        keys = {vary: first}
        return _pair(configs, keys, _match(configs, keys), f"each level of {vary} vs {vary}={first}, "
                     "within every combination of the other axes")
    if baseline:
        keys = _parse_baseline(baseline, configs)
        if "mode" in keys and modes:
            raise UsageError("--baseline mode=...: modes are never compared with each other; name the "
                             "other axes, and each mode gets its own baseline")
        shown = " ".join(f"{k}={v}" for k, v in keys.items())
        return _pair(configs, keys, _match(configs, keys), f"baseline {shown} (given)")
    return _per_mode(configs) if modes else _default_plan(configs)
