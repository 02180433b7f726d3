"""One home per sweep axis (issue 25, item 1): every table of axes (row schema, analysis axes and
override keys, identity columns, envdiff causes, history labels, the gate's matching, the hash's
pooled keys) follows from the capture settings' own `Spec`.

The pinned values below were computed by the code *before* the axes were derived (hand-typed
tuples in rows.py, analysis/configs.py, envdiff.py, gate.py, history.py, translate.py): equal
values here mean old results.parquet files and old config hashes stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from yoloprof.config import axes
from yoloprof.config.capture_settings import Axis, CaptureSettings, setting
from yoloprof.config.translate import config_hash, group_hash

# The row columns between `wall_s` and `overrides` as profiles/rows.py typed them by hand.
OLD_AXES_STR = ("mode", "model", "size", "data", "precision", "device")
# the knobs added since (config/knobs.py): str axes after precision, in field order; old hashes unchanged
KNOB_AXES = ("compile", "memory_format", "runtime", "optimizer_impl")
OLD_AXES_INT = ("batch", "imgsz", "workers", "threads", "warmup", "steps", "runs", "repeat", "trial")
# analysis/configs.py's hand-typed tables (AXIS_COLUMNS as a set: its order is now field order).
OLD_ANALYSIS = {"mode", "model", "size", "data", "device", "batch", "imgsz", "precision", "threads",
                "workers", "warmup", "steps", "runs", "repeat"}
OLD_KEY_COLUMNS = {"model._target_": "model", "model.name": "model", "model.cfg": "model", "model.family": "model", "capture.warmup": "warmup",
                   "capture.steps": "steps", "capture.runs": "runs", "data.path": "data"}
OLD_LABELS = ("source", "mode", "model", "size", "precision", "device", "batch", "imgsz", "workers",
              "warmup", "steps", "runs", "repeat", "sweep_name", "swept")

# (mode, overrides, config_hash, group_hash, config_hash with a user task), computed before the
# change. Threads are explicit: 0 resolves to the machine's CPU count.
TASK = {"_target_": "pkg.task", "n": 1}
PINNED = [
    # `device="0"`: the default before `auto` (which hashes as the device it resolves to: below)
    ("train", {"threads": 1, "device": "0"}, "920fd3883b9397fd", "8a4eb2db6d00180c", "e9a7746e7602f7c9"),
    ("infer", {"threads": 4, "device": "0"}, "50e52c3a8226dcf2", "f88263e82ce88c35", "3193d7e033d55ccf"),
    ("train", {"batch": 4, "imgsz": 320, "precision": "bfloat16", "device": "cpu", "trial": 2, "seed": 3,
               "threads": 1}, "0268cadccdde7d42", "5dac11971442ba04", "5a1350d7c6877284"),
    ("infer", {"device": "cpu", "precision": "auto", "threads": 2, "runs": 7, "warmup": 3},
     "a99c270375cf9fa9", "0fdf7f8cd1e4437c", "e324e2dde71e550e"),
    ("train", {"model": "mypkg.Net", "model_kwargs": {"width": 32}, "workers": 2, "steps": 5, "threads": 3,
               "device": "cuda:1"}, "502fbcd344fa024b", "742d475d92c94f11", "f75f0619e7812c76"),
]
OLD_NOISE_KEY = "30dab5d55ab61f79"  # metrics/noise.workload_key({"batch": 2}, "train") before the change
OLD_IDENTITY = {
    "config_hash": "d199e2439f844ca3", "group_hash": "866d2f07032a8b1c", "mode": "train", "model": "mypkg.Net",
    "size": None, "data": "synthetic", "precision": "float32", "device": "cpu", "batch": 16, "imgsz": 640,
    "workers": 8, "warmup": 5, "steps": 20, "runs": None, "repeat": 1, "trial": 0, "seed": 0, "threads": 1}


def _axis_block(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    names = schema.names
    return [(f.name, f.type) for f in schema][names.index("wall_s") + 1:names.index("overrides")]


def test_row_schema_axes_equal_the_old_hand_typed_ones():
    from yoloprof.profiles.rows import ROW_SCHEMA

    old = [(n, pa.string()) for n in OLD_AXES_STR] + [(n, pa.int32()) for n in OLD_AXES_INT]
    at = OLD_AXES_STR.index("precision") + 1
    old[at:at] = [(n, pa.string()) for n in KNOB_AXES]
    assert _axis_block(ROW_SCHEMA) == old


def test_an_old_rows_file_reads_unchanged(tmp_path):
    """A row file written with the old hand-typed axis columns conforms to the derived schema
    without a cast or a null: same names, order and types."""
    from yoloprof.profiles.rows import read_row

    fields = [("wall_s", pa.float64())] + [(n, pa.string()) for n in OLD_AXES_STR] \
        + [(n, pa.int32()) for n in OLD_AXES_INT] + [("overrides", pa.string())]
    values = {"wall_s": 1.5, "mode": "train", "model": "yolo", "size": "n", "data": "synthetic",
              "precision": "float16", "device": "cuda:0", "batch": 16, "imgsz": 640, "workers": 8,
              "threads": 4, "warmup": 5, "steps": 20, "runs": None, "repeat": 1, "trial": 2, "overrides": "[]"}
    pq.write_table(pa.Table.from_pylist([values], schema=pa.schema(fields)), tmp_path / "row.parquet")
    row = read_row(tmp_path / "row.parquet")
    assert {k: row[k] for k in values} == values


def test_analysis_tables_equal_the_old_ones():
    from yoloprof.analysis import configs, envdiff, history

    assert set(configs.AXIS_COLUMNS) == OLD_ANALYSIS | set(KNOB_AXES)
    assert configs.KEY_COLUMNS == OLD_KEY_COLUMNS
    assert configs.NOT_AXES == {"trial", "seed"}
    at = OLD_LABELS.index("precision") + 1
    assert history.LABEL_COLUMNS == OLD_LABELS[:at] + KNOB_AXES + OLD_LABELS[at:]
    assert configs.DERIVED == ("data", "batch", "workers", "warmup", "steps", "runs")  # per-mode defaults
    # the old causes, and the old names of precision (`half` too: an old sweep's swept key)
    for fld, old in {"batch": ("batch",), "precision": ("amp", "amp_dtype", "half", "precision"),
                     "threads": ("threads",), "device": ("device",)}.items():
        assert envdiff.SWEPT_CAUSES[fld] == old
    assert envdiff.SWEPT_CAUSES["params"] == ("model", "size")  # a swept model or size changes it


@pytest.mark.parametrize("mode, overrides, chash, ghash, thash", PINNED)
def test_config_hashes_of_existing_configurations_are_unchanged(mode, overrides, chash, ghash, thash):
    s = CaptureSettings.for_mode(mode, **overrides)
    assert (config_hash(s), group_hash(s), config_hash(s, TASK)) == (chash, ghash, thash)


@pytest.mark.parametrize("count, old", [(1, "0"), (0, "cpu")])
def test_auto_hashes_as_the_device_it_resolves_to(gpus, count, old):
    """A row of `device=auto` is the configuration an explicit device had: on a GPU machine `0`
    (the old default, whose hash is pinned above), on a CPU machine `cpu`."""
    gpus(count)
    for mode, overrides, *_ in PINNED[:2]:
        auto = CaptureSettings.for_mode(mode, **{**overrides, "device": "auto"})
        explicit = CaptureSettings.for_mode(mode, **{**overrides, "device": old})
        assert (config_hash(auto), group_hash(auto)) == (config_hash(explicit), group_hash(explicit))
    assert CaptureSettings.for_mode("train").device == "auto"  # the default


def test_identity_columns_are_unchanged():
    from yoloprof.capturing.builtin.store_record import settings_columns

    s = CaptureSettings.for_mode("train", model="mypkg.Net", threads=1, device="cpu")
    knob_defaults = {"compile": "none", "memory_format": "contiguous", "runtime": "eager", "optimizer_impl": "default"}
    assert settings_columns(s) == {**OLD_IDENTITY, **knob_defaults}


# --- Adding an axis: one settings field (its declaration) and its use ------------------------

@dataclass
class WithChannelsLast(CaptureSettings):
    """What adding `channels_last` takes: this one field. Its use (the capture calling
    `model.to(memory_format=torch.channels_last)`) reads `settings.channels_last`."""

    channels_last: bool = setting(False, "NHWC memory format for the model and its inputs", hydra="capture",
                                  axis=Axis(), hashed="unless_default")


def test_a_new_axis_appears_everywhere_from_its_field_alone():
    from yoloprof.analysis import configs, envdiff
    from yoloprof.capturing.builtin.store_record import settings_columns
    from yoloprof.profiles import rows

    schema = rows.row_schema(WithChannelsLast)
    block = _axis_block(schema)
    assert block[-1] == ("channels_last", pa.bool_())  # a new Parquet type: a block of its own
    assert block[:-1] == _axis_block(rows.ROW_SCHEMA)  # the old columns keep their place and type
    assert axes.config_axes(WithChannelsLast) == (*configs.AXIS_COLUMNS, "channels_last")
    assert axes.override_keys(WithChannelsLast) == {**configs.KEY_COLUMNS, "capture.channels_last": "channels_last"}
    assert axes.causes(WithChannelsLast) == {**envdiff.SWEPT_CAUSES, "channels_last": ("channels_last",)}
    assert axes.history_axes(WithChannelsLast)[-1] == "channels_last"
    s = WithChannelsLast.for_mode("train", threads=1, device="cpu", channels_last=True)
    assert settings_columns(s)["channels_last"] is True
    assert axes.row_axes(WithChannelsLast)[-1] == ("channels_last", "bool")


def test_an_axis_without_a_column_type_is_refused_by_name():
    @dataclass
    class WithDictAxis(CaptureSettings):
        layout: dict = setting({}, "not a column", axis=Axis())  # noqa: RUF009 - a field factory

    with pytest.raises(TypeError, match="'layout'"):
        axes.row_axes(WithDictAxis)
    with pytest.raises(ValueError, match="unless_default"):
        setting(False, "a typo in hashed", hashed="unless-default")


def test_a_new_axis_keeps_existing_hashes_at_its_default():
    """`hashed="unless_default"`: configurations from before the field existed keep their
    config hash; setting the new axis changes it."""
    for mode, overrides, chash, ghash, _ in PINNED:
        s = WithChannelsLast.for_mode(mode, **overrides)
        assert (config_hash(s), group_hash(s)) == (chash, ghash)
        on = WithChannelsLast.for_mode(mode, **overrides, channels_last=True)
        assert config_hash(on) != chash and group_hash(on) != ghash


def test_a_new_axis_is_written_and_read_as_a_row_column(tmp_path):
    from yoloprof.capturing.builtin.store_record import settings_columns
    from yoloprof.profiles import rows

    s = WithChannelsLast.for_mode("infer", threads=1, device="cpu", channels_last=True)
    schema = rows.row_schema(WithChannelsLast)
    record = {**{n: None for n in schema.names}, **settings_columns(s), "status": "ok"}
    pq.write_table(pa.Table.from_pylist([record], schema=schema), tmp_path / "row.parquet")
    back = pq.read_table(tmp_path / "row.parquet").to_pylist()[0]
    assert back["channels_last"] is True and back["imgsz"] == 640


# --- The same axis added to the real settings file: nothing else edited --------------------

NEW_FIELD = ('    channels_last: bool = setting(False, "NHWC memory format for the model and its inputs", '
             'hydra="capture", axis=Axis(), hashed="unless_default")\n')
PROBE = r'''
import argparse, json
import pandas as pd
from yoloprof.analysis import configs, envdiff, history
from yoloprof.capturing.builtin.store_record import settings_columns
from yoloprof.config import schema
from yoloprof.config.cli_args import add_capture_arguments, settings_from_args
from yoloprof.config.compose import compose_job
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.translate import config_hash, settings_from_cfg
from yoloprof.metrics.noise_floor import workload_key
from yoloprof.profiles.rows import ROW_SCHEMA

parser = argparse.ArgumentParser()
add_capture_arguments(parser, "train")
cli = settings_from_args(parser.parse_args(["--channels-last", "--device", "cpu"]), "train")
job = settings_from_cfg(compose_job(["device=cpu", "capture.channels_last=true"]))
built = configs.build_configs(pd.DataFrame({
    "group_hash": ["a", "b"], "mode": ["train", "train"], "batch": [16, 16], "channels_last": [False, True],
    "overrides": ['["capture.channels_last=false"]', '["capture.channels_last=true"]']}))
print(json.dumps({
    "row_type": str(ROW_SCHEMA.field("channels_last").type),
    "analysis": "channels_last" in configs.AXIS_COLUMNS,
    "key": configs.KEY_COLUMNS.get("capture.channels_last"),
    "causes": envdiff.SWEPT_CAUSES.get("channels_last"),
    "history": "channels_last" in history.LABEL_COLUMNS,
    "hydra_key": "capture.channels_last" in schema.known_keys(),
    "cli": cli.channels_last, "job": job.channels_last,
    "identity": settings_columns(CaptureSettings.for_mode("train", threads=1, channels_last=True))["channels_last"],
    "old_hash": config_hash(CaptureSettings.for_mode("train", threads=1, device="0")),
    "noise_key": [workload_key({"batch": 2, "channels_last": v}, "train") for v in (False, True)],
    "configs": [built.varying, list(built.table["config"])],
}))
'''


def test_a_field_added_to_the_settings_file_reaches_every_table(tmp_path):
    """A copy of the package whose config/capture_settings.py has one more field (and no other change): the
    row schema, the analysis (a configuration axis with its label), envdiff, history, the Hydra
    schema and the command line have it, a composed job and a parsed command line set it, and an
    existing configuration's hash and noise-floor key are unchanged."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    from helpers.paths import CONF, REPO, SWEEPS

    pkg = tmp_path / "yoloprof"
    shutil.copytree(REPO / "yoloprof", pkg, ignore=shutil.ignore_patterns("__pycache__", "conf", "sweeps"))
    (tmp_path / "conf").symlink_to(CONF)
    (tmp_path / "sweeps").symlink_to(SWEEPS)
    settings = pkg / "config" / "capture_settings.py"
    text = settings.read_text()
    anchor = "\n    @classmethod\n    def for_mode("
    assert text.count(anchor) == 1
    settings.write_text(text.replace(anchor, "\n" + NEW_FIELD + anchor))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROBE], check=False, env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"row_type": "bool", "analysis": True, "key": "channels_last", "causes": ["channels_last"],
                   "history": True, "hydra_key": True, "cli": True, "job": True, "identity": True,
                   "old_hash": PINNED[0][2], "noise_key": [OLD_NOISE_KEY, got["noise_key"][1]],
                   "configs": [["channels_last"], ["channels_last=false", "channels_last=true"]]}
    assert got["noise_key"][1] != OLD_NOISE_KEY  # the new axis away from its default: another workload
