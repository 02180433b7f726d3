"""Loading validates a profile's types and numbers (one ProfileError naming the field, exit 1 on the
CLI), detects a profile whatever its key order, and accepts minor versions of schema 1."""

from __future__ import annotations

import json
import math

import pytest

from yoloprof.cli import main
from yoloprof.errors import ProfileError
from yoloprof.profiles.model import empty_profile, metric
from yoloprof.readers.load import load_any


def good_profile() -> dict:
    p = empty_profile("train", config={"batch": 2}, env={"device_type": "cpu"})
    p["metrics"] = {"step_ms": metric([10.0, 12.0, 11.0], "ms", "lower"),
                    "peak_mem_mb": metric([100.0], "MiB", "lower")}
    p["phases"] = [{"phase": "forward", "wall_ms_per_step": 4.0, "device_ms_per_step": None,
                    "kernels_per_step": None, "ops_per_step": 12.0}]
    return p


def write(tmp_path, obj, name="p.json", **dump) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(obj, **dump), encoding="utf-8")
    return str(path)


def test_sorted_keys_profile_loads_as_a_profile(tmp_path):
    # `jq -S` puts "schema" after "config", "created_at", "env", "kernels", "metrics", ...: far
    # beyond the first bytes once the config is large.
    p = good_profile()
    p["config"] = {f"key{i:03d}": "x" * 20 for i in range(50)}
    path = write(tmp_path, p, sort_keys=True, indent=2)
    with open(path, encoding="utf-8") as fh:
        assert fh.read().index('"schema"') > 1000
    loaded = load_any(path)
    assert loaded["kind"] == "train" and loaded["metrics"]["step_ms"]["value"] == pytest.approx(11.0)


def test_profile_naming_trace_events_early_is_still_a_profile(tmp_path):
    """The loader goes straight to the trace engine when the first bytes name "traceEvents" (a
    Kineto trace does); a profile whose first bytes hold that string as a value must still load."""
    p = good_profile()
    p["config"] = {"a_note": "traceEvents", **{f"key{i:03d}": "x" * 20 for i in range(50)}}
    path = write(tmp_path, p, sort_keys=True, indent=2)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text.index('"traceEvents"') < 1000 < text.index('"schema"')
    assert load_any(path)["kind"] == "train"


@pytest.mark.parametrize("schema, ok", [("yoloprof.profile/1", True), ("yoloprof.profile/1.0", True),
                                        ("yoloprof.profile/1.7", True), ("yoloprof.profile/2", False),
                                        ("yoloprof.profile/10", False), ("yoloprof.profile/1.x", False)])
def test_minor_versions_of_schema_1_are_read(tmp_path, schema, ok):
    p = good_profile()
    p["schema"] = schema
    path = write(tmp_path, p)
    if ok:
        assert load_any(path)["schema"] == schema
    else:
        with pytest.raises(ProfileError, match="not supported"):
            load_any(path)


BAD = [
    ("metrics", "x", "field 'metrics' must be an object, not str"),
    ("phases", 5, "field 'phases' must be a list, not int"),
    ("kernels", {"a": 1}, "field 'kernels' must be a list, not object"),
    ("verdict", [1], "field 'verdict' must be an object or null, not array"),
    ("warnings", [3], "field 'warnings[0]' must be a string, not int"),
    ("config", None, "field 'config' must be an object, not null"),
]


@pytest.mark.parametrize("section, value, message", BAD)
def test_wrong_typed_section_is_named(tmp_path, section, value, message):
    p = good_profile()
    p[section] = value
    with pytest.raises(ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_any(write(tmp_path, p))


@pytest.mark.parametrize("edit, field", [
    (lambda p: p["metrics"].__setitem__("step_ms", "fast"), "metrics.step_ms"),
    (lambda p: p["metrics"]["step_ms"].__setitem__("value", 1e308), "metrics.step_ms.value"),
    (lambda p: p["metrics"]["step_ms"].__setitem__("value", -3.0), "metrics.step_ms.value"),
    (lambda p: p["metrics"]["step_ms"]["samples"].__setitem__(1, "12"), "metrics.step_ms.samples[1]"),
    (lambda p: p["metrics"]["step_ms"].__setitem__("better", "faster"), "metrics.step_ms.better"),
    (lambda p: p["metrics"]["peak_mem_mb"].__setitem__("value", -1.0), "metrics.peak_mem_mb.value"),
    (lambda p: p["phases"][0].__setitem__("wall_ms_per_step", -4.0), "phases[0].wall_ms_per_step"),
    (lambda p: p["phases"].append("forward"), "phases[1]"),
])
def test_bad_values_are_named(tmp_path, edit, field):
    p = good_profile()
    edit(p)
    with pytest.raises(ProfileError) as info:
        load_any(write(tmp_path, p))
    assert f"'{field}'" in str(info.value)


def test_non_finite_json_constants_are_refused(tmp_path):
    text = json.dumps(good_profile()).replace('"value": 11.0', '"value": NaN')
    assert "NaN" in text
    path = tmp_path / "nan.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_any(path)
    huge = json.dumps(good_profile()).replace('"value": 11.0', '"value": 1e999')
    path.write_text(huge, encoding="utf-8")
    with pytest.raises(ProfileError, match="finite"):
        load_any(path)
    assert math.isinf(json.loads(huge)["metrics"]["step_ms"]["value"])  # what Python would accept


@pytest.mark.parametrize("section, value", [("metrics", "x"), ("phases", 5)])
def test_cli_readers_exit_1_with_one_line(tmp_path, capsys, section, value):
    p = good_profile()
    p[section] = value
    path = write(tmp_path, p)
    for reader in ("summary", "phases", "kernels", "ops", "get"):
        assert main([reader, path]) == 1, reader
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"field '{section}'" in err and "internal error" not in err, err


@pytest.mark.parametrize("used, message", [
    ({"steps": [3, "x"]}, "config.warmup_used.steps[1]' must be int, not str"),
    ({"steady": [1]}, "config.warmup_used.steady[0]' must be bool or null, not int"),
    ({"min": -1}, "config.warmup_used.min' is negative"),
    ({"steps": 3}, "config.warmup_used.steps' must be a list, not int"),
    ("8", "config.warmup_used' must be an object, not str"),
])
def test_warmup_record_is_typed(tmp_path, used, message):
    p = good_profile()
    p["config"]["warmup_used"] = used
    with pytest.raises(ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_any(write(tmp_path, p))
    p["config"]["warmup_used"] = {"steps": [8, 1], "steady": [True, None], "min": 1, "max": 21, "window": 12}
    assert load_any(write(tmp_path, p, name="ok.json"))["config"]["warmup_used"]["steps"] == [8, 1]
