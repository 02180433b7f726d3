"""Unit tests of summary, get, phases, kernels and ops on hand-made profiles."""

from __future__ import annotations

import io
import json

import pytest
from helpers.profiles import GPU_KERNELS, cpu_train_profile, gpu_train_profile, infer_profile

from yoloprof.errors import UsageError
from yoloprof.profiles.model import metric
from yoloprof.readers.get import compute_get
from yoloprof.readers.kernels import compute_kernels
from yoloprof.readers.ops import compute_ops
from yoloprof.readers.phases import compute_phases
from yoloprof.readers.summary import compute_summary
from yoloprof.render import terminal
from yoloprof.render._out import Out


def _headline(result: dict) -> dict:
    return {f["name"]: f for f in result["headline"]}


def test_summary_gpu_figures_and_top_kernels() -> None:
    p = gpu_train_profile()
    s = compute_summary(p)
    h = _headline(s)
    assert h["step_ms"]["value"] == pytest.approx(100.0)
    assert h["device_util_pct"]["value"] == 60.0
    assert s["verdict"]["bound"] == "host"
    assert len(s["top_kernels"]) == 5
    expected = sorted(GPU_KERNELS, key=lambda k: -k[4])[:5]
    assert [k["ms_per_step"] for k in s["top_kernels"]] == [k[4] for k in expected]
    assert s["categories"][0]["category"] == "gemm/conv"
    assert s["unreliable"] is None
    json.dumps(s)  # JSON-able


def test_summary_cpu_shows_na_with_reason_never_zero() -> None:
    s = compute_summary(cpu_train_profile())
    h = _headline(s)
    for name in ("device_util_pct", "tensorcore_pct", "launches_per_step"):
        assert h[name]["value"] is None
        assert "no device" in h[name]["na"]
    buf = io.StringIO()
    terminal.render_summary(s, source="p.json", out=Out(buf, rich=False))
    text = buf.getvalue()
    assert "device utilisation  n/a (no device" in text
    assert "0.000%" not in text


def test_summary_infer_latency_and_stages() -> None:
    s = compute_summary(infer_profile())
    assert s["latency"]["p99_ms"] == 30.0
    assert [st["stage"] for st in s["stages"]] == ["preprocess", "forward", "postprocess"]


def test_summary_marks_memory_thrashing() -> None:
    p = gpu_train_profile()
    p["metrics"]["alloc_calls_per_step"] = metric(5000.0, "count", "lower")
    assert compute_summary(p)["unreliable"] is None  # thousands of tensor allocations are normal
    p["metrics"]["malloc_calls_per_step"] = metric(12.0, "count", "lower")
    s = compute_summary(p)
    assert s["unreliable"] and "12.0 cudaMalloc/cudaFree calls per step" in s["unreliable"]["why"]
    buf = io.StringIO()
    terminal.render_summary(s, out=Out(buf, rich=False))
    assert "UNRELIABLE" in buf.getvalue()


def test_get_metric_and_dotted_paths() -> None:
    p = gpu_train_profile()
    assert compute_get(p, "step_ms")["value"] == pytest.approx(100.0)
    assert compute_get(p, "metrics.step_ms")["value"] == pytest.approx(100.0)
    assert compute_get(p, "verdict.bound")["value"] == "host"
    assert compute_get(p, "config.batch")["value"] == 16
    assert compute_get(p, "env.torch")["value"] == "2.13.0"
    assert compute_get(infer_profile(), "latency.p99_ms")["value"] == 30.0
    fields = [f["field"] for f in compute_get(p, None)["fields"]]
    assert {"step_ms", "img_per_s", "verdict.bound", "config.batch", "env.torch"} <= set(fields)


def test_get_unknown_field_lists_close_ones_and_where_the_rest_are() -> None:
    with pytest.raises(UsageError) as exc:
        compute_get(gpu_train_profile(), "stepms")
    msg = str(exc.value)  # close names only (at most ten), never every field (issue 41: a 2,000-character line)
    assert "did you mean: step_ms" in msg and "`yoloprof get FILE` lists every field" in msg
    assert "verdict.bound" not in msg and len(msg) < 300


def test_render_get_prints_only_the_value(capsys) -> None:
    terminal.render_get(compute_get(gpu_train_profile(), "config.batch"))
    assert capsys.readouterr().out == "16\n"


def test_phases_shares_and_cpu_na() -> None:
    r = compute_phases(gpu_train_profile())
    assert [p["phase"] for p in r["phases"]] == ["forward", "backward", "optimizer"]
    assert r["totals"]["wall_ms_per_step"] == pytest.approx(90.0)
    assert r["unattributed_wall_ms"] == pytest.approx(10.0)
    assert r["phases"][0]["wall_share"] == pytest.approx(0.4)
    c = compute_phases(cpu_train_profile())
    assert all(p["device_ms_per_step"] is None for p in c["phases"])


def test_kernels_filters_sorts_and_totals() -> None:
    p = gpu_train_profile()
    r = compute_kernels(p, category="elementwise", sort="count")
    counts = [k[5] for k in GPU_KERNELS if k[1] == "elementwise"]
    assert [k["count_per_step"] for k in r["kernels"]] == sorted(counts, reverse=True)
    assert r["matched_ms_per_step"] == pytest.approx(sum(k[4] for k in GPU_KERNELS if k[1] == "elementwise"))
    assert [k["tensorcore"] for k in compute_kernels(p, tensorcore=True)["kernels"]] == [True]
    assert len(compute_kernels(p, grep="GEMM")["kernels"]) == 2  # case-insensitive
    assert [k["phase"] for k in compute_kernels(p, phase="backward")["kernels"]] == ["backward"] * 2
    names = [k["short_name"].lower() for k in compute_kernels(p, sort="name", top=0)["kernels"]]
    assert names == sorted(names)
    assert len(compute_kernels(p, top=2)["kernels"]) == 2
    assert compute_kernels(p, category="attention")["kernels"] == []  # known, just absent


@pytest.mark.parametrize("kw,word", [({"category": "/"}, "gemm/conv"), ({"category": "tensor"}, "gemm/conv"),
                                     ({"phase": "fwd"}, "forward"),
                                     ({"grep": "("}, "invalid --grep")])
def test_kernels_bad_filters_are_usage_errors(kw, word) -> None:
    with pytest.raises(UsageError) as exc:
        compute_kernels(gpu_train_profile(), **kw)
    assert word in str(exc.value)


def test_kernels_tensorcore_on_cpu_warns() -> None:
    r = compute_kernels(cpu_train_profile(), tensorcore=True)
    assert r["kernels"] == [] and any("--tensorcore has no effect" in w for w in r["warnings"])


def test_ops_by_self_time() -> None:
    r = compute_ops(cpu_train_profile(), top=3)
    assert [o["name"] for o in r["ops"]] == ["aten::mkldnn_convolution", "aten::silu_", "aten::add"]
    assert r["self_ms_per_step"] == pytest.approx(40.0)
    assert r["ops"][0]["pct"] == pytest.approx(75.0)
    assert r["ops"][0]["mean_self_us"] == pytest.approx(500.0)
    with pytest.raises(UsageError):
        compute_ops(cpu_train_profile(), phase="nope")


def test_kernel_rows_merge_by_name_across_phases() -> None:
    p = gpu_train_profile()
    extra = dict(p["kernels"][0], phase="backward", ms_per_step=4.0, count_per_step=10)
    p["kernels"].append(extra)
    rows = compute_kernels(p, top=0)["kernels"]
    merged = next(k for k in rows if k["name"] == extra["name"])
    assert merged["ms_per_step"] == pytest.approx(GPU_KERNELS[0][4] + 4.0)
    assert merged["count_per_step"] == pytest.approx(GPU_KERNELS[0][5] + 10)
    assert merged["phase"] == "forward,backward"
    assert len(compute_kernels(p, phase="backward", top=0)["kernels"]) == 3  # per-phase rows kept


@pytest.mark.parametrize("rich", [True, False])
def test_every_renderer_runs_in_both_modes(rich: bool) -> None:
    from yoloprof.readers.compare import compute_compare
    from yoloprof.readers.what_if import compute_what_if

    buf = io.StringIO()
    out = Out(buf, rich=rich)
    gpu = gpu_train_profile()
    terminal.render_summary(compute_summary(infer_profile()), source="p.json", out=out)
    terminal.render_get(compute_get(gpu, None), out=out)
    terminal.render_phases(compute_phases(gpu), out=out)
    terminal.render_kernels(compute_kernels(gpu), out=out)
    terminal.render_ops(compute_ops(gpu), out=out)
    floors = {"step_ms": {"sd": 0.02, "df": 5, "within_sd": 0.01, "trials": 3, "processes": 6}}
    terminal.render_compare(compute_compare(gpu, gpu_train_profile((120.0, 121.0, 119.0)), floors=floors), out=out)
    terminal.render_what_if(compute_what_if(gpu, remove_launches=50), out=out)
    text = buf.getvalue()
    assert "regressed" in text and "predicted step" in text and "aten::silu_" in text
    assert ("─" in text) == rich  # box drawing only on a terminal


def test_na_reasons_name_the_right_cause():
    from yoloprof.profiles.model import empty_profile
    from yoloprof.readers._common import na_reason

    train = empty_profile("train")
    assert "inference profiles only" in na_reason(train, "p99_ms")
    for name in ("preprocess_wall_ms", "postprocess_ms"):  # stage names start with "p" too
        assert "inference profiles only" not in na_reason(train, name)
    for name in ("forward_device_ms", "backward_kernels", "mean_kernel_us", "device_busy_ms"):
        assert "no device kernels" in na_reason(train, name)
