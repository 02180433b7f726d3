"""The metric registry, file names and the one number format: what they promise, checked against
hand-worked values and against what the writers actually produce."""

from __future__ import annotations

import pytest
import yaml

from helpers.paths import CONF, trace_path
from yoloprof.defs import files
from yoloprof.defs import metrics as registry
from yoloprof.render.fmt import fmt_num, fmt_pct, fmt_ratio, fmt_val
from yoloprof.traces.analyze import analyze_trace_file


@pytest.mark.parametrize("name, unit, better, device_only", [
    ("step_ms", "ms", "lower", False),
    ("img_per_s", "img/s", "higher", False),
    ("peak_mem_mb", "MiB", "lower", False),
    ("peak_rss_mb", "MiB", "lower", False),
    ("launches_per_step", "count", "lower", True),
    ("forward_wall_ms", "ms", "lower", False),  # family <phase>_wall_ms
    ("backward_device_ms", "ms", "lower", True),  # family <phase>_device_ms
    ("forward_kernels", "count", None, True),
    ("p95_ms", "ms", "lower", False),
    ("trace_peak_mem_mb", "MiB", "lower", False),  # the trace pass's own figure of a metric
    ("something_new", "", None, False),  # unknown: neutral, never a guess
])
def test_spec_resolves_names_and_families(name, unit, better, device_only):
    spec = registry.spec(name)
    assert (spec.unit, spec.better, spec.device_only) == (unit, better, device_only)


def test_role_lists_keep_registry_order_and_modes():
    assert registry.names("analyze", ["train"]) == ("step_ms", "img_per_s", "peak_mem_mb")
    assert registry.names("analyze", ["infer"]) == ("step_ms", "img_per_s", "p50_ms", "peak_mem_mb")
    assert registry.names("summary")[:2] == ("step_ms", "img_per_s")
    assert all(registry.spec(m).column == m for m in registry.names("row"))


def test_every_memory_metric_is_in_mib():
    assert {m.unit for m in registry.METRICS if m.name.endswith(("_mb", "_mib"))} == {"MiB"}


def test_trace_engine_writes_the_registry_units():
    sections = analyze_trace_file(trace_path("rank0.json.gz")).profile_sections()
    wrong = {name: entry["unit"] for name, entry in sections["metrics"].items()
             if entry["unit"] != registry.unit(name) or entry["better"] != registry.better(name)}
    assert wrong == {}
    assert sections["metrics"]["peak_mem_mb"]["unit"] == "MiB"


def test_job_log_name_is_hydras_job_name():
    conf = yaml.safe_load((CONF / "config.yaml").read_text(encoding="utf-8"))
    assert conf["hydra"]["job"]["name"] + ".log" == files.JOB_LOG


@pytest.mark.parametrize("value, text", [
    (None, "n/a"), (float("nan"), "n/a"), (float("inf"), "n/a"), (0.0, "0"), (7, "7"),
    (123456, "123,456"), (9.87654, "9.877"), (123.456, "123.5"), (1234.6, "1,235"),
    (123456.7, "123,457"), (0.0125, "0.01250"), (1e-5, "1e-05"), (True, "true"),
])
def test_fmt_num_four_significant_digits(value, text):
    assert fmt_num(value) == text


def test_units_ratios_and_shares():
    assert fmt_val(2.5, "ms") == "2.500 ms"
    assert fmt_val(41.25, "%") == "41.25%"
    assert fmt_val(5.0, "count") == "5"  # a whole count as an integer; "per step" is in the name
    assert fmt_val(None, "ms") == "n/a"
    assert fmt_pct(12.345) == "12.3%"
    assert fmt_ratio(1.05, 0.99, 1.1) == "1.050x [0.990, 1.100]"
    assert fmt_ratio(1.05) == "1.050x"
