"""libreyolo users: its profile.json read by summary/phases/kernels, its `step/<phase>` trace
annotations, its metric names in `get`, and what-if with both flags as libreyolo combines them.

References: the figures libreyolo itself wrote (its own profilers and `analyze_trace`, made here),
the synthetic trace's known kernels, and a hand-worked what-if."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.libreyolo_made import PHASE_KERNELS, STEPS, gpu_trace
from helpers.paths import run_main

from yoloprof.errors import UsageError
from yoloprof.profiles.model import metric
from yoloprof.readers.get import compute_get
from yoloprof.readers.load import load_any
from yoloprof.readers.what_if import compute_what_if

pytest.importorskip("libreyolo")


def _json(*args: str) -> dict:
    r = run_main(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_summary_reads_a_real_libreyolo_inference_profile(infer_made) -> None:
    path, lry = infer_made
    assert lry["schema"] == "libreyolo.profile.analysis/v1"
    s = _json("summary", str(path))
    assert s["kind"] == "infer"
    assert set(s["latency"]) >= {"p50_ms", "p90_ms", "p99_ms"}  # the trace's steps (test_readers_libreyolo_sources)
    got = {r["stage"]: r["ms"] for r in s["stages"]}
    assert got == pytest.approx(lry["stages_ms"])
    total = sum(lry["stages_ms"].values())
    assert [r["share"] for r in s["stages"]] == pytest.approx([v / total for v in lry["stages_ms"].values()])
    head = {r["name"]: r for r in s["headline"]}  # one source: batch / the trace's step time
    assert head["img_per_s"]["value"] == pytest.approx(lry["config"]["batch"] * 1000 / head["step_ms"]["value"])
    # a CPU run: libreyolo writes gpu_util 0, yoloprof reads n/a with the reason, never 0
    assert head["device_util_pct"]["value"] is None and "no device kernels" in head["device_util_pct"]["na"]


def test_phases_of_a_libreyolo_inference_trace(infer_made) -> None:
    path, lry = infer_made
    rows = {r["phase"]: r for r in _json("phases", str(path))["phases"]}
    assert {"preprocess", "forward", "postprocess"} <= set(rows)  # was all "other"
    assert rows["forward"]["wall_ms_per_step"] > rows["postprocess"]["wall_ms_per_step"]
    # the ops libreyolo counted per phase in the same trace (its own definition: cpu_op events)
    assert {p["phase"] for p in lry["phases"]} == {"preprocess", "forward", "postprocess"}


def test_get_accepts_libreyolo_names(infer_made) -> None:
    path, lry = infer_made
    m = lry["metrics"]
    s = _json("summary", str(path))  # headline figures: one source, the trace (test_readers_libreyolo_sources)
    img_s = next(r["value"] for r in s["headline"] if r["name"] == "img_per_s")
    for alias, ref in (("latency_p50_ms", s["latency"]["p50_ms"]), ("latency_p99_ms", s["latency"]["p99_ms"]),
                       ("nms_ms", m["nms_ms"]), ("throughput_img_s", img_s)):
        r = run_main("get", str(path), alias)
        assert r.returncode == 0, r.stderr
        assert float(r.stdout) == pytest.approx(ref), alias
    assert run_main("get", str(path), "bound").stdout.strip()  # yoloprof's verdict
    r = run_main("get", str(path), "gpu_util")
    assert r.returncode == 0 and r.stdout.strip() == "n/a" and "no device kernels" in r.stderr


def test_get_unknown_name_suggests_close_ones() -> None:
    prof = {"schema": "yoloprof.profile/1.1", "kind": "trace",
            "metrics": {"device_util_pct": metric(80.0, "%", "higher")}}
    with pytest.raises(UsageError, match=r"did you mean: [^)]*gpu_util"):
        compute_get(prof, "gpu_utl")
    with pytest.raises(UsageError, match=r"did you mean: [^)]*device_util_pct"):
        compute_get(prof, "utilisation_util")
    r = compute_get(prof, "gpu_util")  # libreyolo's unit: a fraction of 1
    assert r["value"] == pytest.approx(0.80) and r["alias_of"] == "device_util_pct"


def _kernel_us(phase: str) -> dict[str, float]:
    return {k: us / 1000.0 for p, _, k, us in PHASE_KERNELS if p == phase}


def test_step_annotations_split_phases_and_kernels(tmp_path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(gpu_trace()))
    rows = {r["phase"]: r for r in _json("phases", str(trace), "--steps", f"0-{STEPS - 1}")["phases"]}
    for phase in ("forward", "backward"):
        assert rows[phase]["device_ms_per_step"] == pytest.approx(sum(_kernel_us(phase).values()))
        assert rows[phase]["kernels_per_step"] == len(_kernel_us(phase))
    k = _json("kernels", str(trace), "--phase", "forward", "--steps", f"0-{STEPS - 1}")
    got = {r["name"]: r["ms_per_step"] for r in k["kernels"]}
    assert got == pytest.approx(_kernel_us("forward"))


def test_libreyolo_gpu_profile_with_and_without_its_trace(gpu_made, tmp_path) -> None:
    lry = json.loads(gpu_made.read_text())
    with_trace = load_any(gpu_made)  # the trace engine reads the trace the file names
    assert with_trace["source"]["trace"] is not None
    fwd = {k["name"] for k in with_trace["kernels"] if k.get("phase") == "forward"}
    assert fwd == set(_kernel_us("forward"))
    alone = tmp_path / "profile.json"  # moved without its trace: libreyolo's own figures
    shutil.copy(gpu_made, alone)
    lry["trace"] = str(tmp_path / "gone.json")
    alone.write_text(json.dumps(lry))
    s = _json("summary", str(alone))
    head = {r["name"]: r["value"] for r in s["headline"]}
    assert head["step_ms"] == pytest.approx(lry["step_ms"])
    assert head["device_util_pct"] == pytest.approx(100 * lry["gpu_util"])
    assert head["launches_per_step"] == pytest.approx(lry["launches_per_step"])
    assert any("without its trace" in w for w in s["warnings"])
    k = _json("kernels", str(alone), "--phase", "forward")
    assert {r["name"] for r in k["kernels"]} == {r["raw_name"] for r in lry["kernels_by_phase"]["forward"]}
    r = run_main("get", str(alone), "gpu_util")
    assert float(r.stdout) == pytest.approx(lry["gpu_util"])


def _gpu_profile() -> dict:
    """Step 10 ms, H 8 ms, D 6 ms, 100 launches; gemm: 4 ms of device time, 3 ms of it not under
    other work, 20 launches."""
    return {"schema": "yoloprof.profile/1.1", "kind": "trace",
            "metrics": {"step_ms": metric(10.0, "ms", "lower"), "host_busy_ms": metric(8.0, "ms", "lower"),
                        "device_busy_ms": metric(6.0, "ms", None),
                        "launches_per_step": metric(100.0, "count", "lower")},
            "categories": [{"category": "gemm", "device_ms_per_step": 4.0, "busy_saving_ms_per_step": 3.0},
                           {"category": "elementwise", "device_ms_per_step": 2.0, "busy_saving_ms_per_step": 2.0}],
            "kernels": [{"name": "sgemm", "category": "gemm", "kind": "kernel", "count_per_step": 20.0},
                        {"name": "add", "category": "elementwise", "kind": "kernel", "count_per_step": 80.0}]}


def test_what_if_combines_category_and_launches_by_hand() -> None:
    # c = H / launches = 0.08 ms. Removing gemm and 30 more launches (libreyolo adds the two launch
    # counts and removes the category's device work): H' = 8 - (20 + 30) x 0.08 = 4, D' = 6 - 3 = 3;
    # predicted = max(10 - (max(8, 6) - max(4, 3)), 4, 3) = 6 ms.
    r = compute_what_if(_gpu_profile(), remove_category="gemm", remove_launches=30)
    assert (r["host_ms_after"], r["device_ms_after"]) == pytest.approx((4.0, 3.0))
    assert r["predicted_step_ms"] == pytest.approx(6.0)
    assert r["change"]["remove_launches"] == 30 and r["change"]["remove_category"] == "gemm"
    with pytest.raises(UsageError, match="81 exceeds the 80 launches"):
        compute_what_if(_gpu_profile(), remove_category="gemm", remove_launches=81)


def test_what_if_cli_takes_both_flags(gpu_made) -> None:
    r = run_main("what-if", str(gpu_made), "--remove-category", "gemm", "--remove-launches", "1", "--json")
    assert r.returncode == 0, r.stderr
    assert set(json.loads(r.stdout)["change"]) >= {"remove_category", "remove_launches"}
