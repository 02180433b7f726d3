"""Readers on the engine's figures: category names as the spec matches them, ops sorting and
shapes, what-if bounds (hand-worked), get's n/a, and what compare says differs between sides."""

from __future__ import annotations

import gzip

import pytest

from helpers.paths import run_cli, trace_path
from yoloprof.errors import UsageError
from yoloprof.metrics.sides import CAPTURE_GAP_FLAG_S, differences, side_facts
from yoloprof.readers._common import match_category
from yoloprof.readers.compare import compute_compare
from yoloprof.readers.get import compute_get
from yoloprof.readers.ops import compute_ops
from yoloprof.readers.what_if import compute_what_if
from yoloprof.traces.to_profile import profile_from_trace_bytes

CATS = ["communication", "attention", "gemm/conv", "layout/copy", "norm/reduction", "elementwise",
        "memcpy/memset", "other"]


@pytest.mark.parametrize("given,want", [("gemm", "gemm/conv"), ("conv", "gemm/conv"), ("GEMM", "gemm/conv"),
                                        ("comm", "communication"), ("memset", "memcpy/memset"),
                                        ("gemm/conv", "gemm/conv"), ("layout", "layout/copy")])
def test_category_by_unique_prefix_or_substring(given, want):
    assert match_category(given, CATS) == want


@pytest.mark.parametrize("given,candidates", [("/", ["gemm/conv", "layout/copy", "memcpy/memset",
                                                     "norm/reduction"]),
                                              ("co", ["communication"]),  # a unique prefix wins
                                              ("ti", ["attention", "communication"])])
def test_ambiguous_category_lists_candidates(given, candidates):
    if len(candidates) == 1:
        assert match_category(given, CATS) == candidates[0]
        return
    with pytest.raises(UsageError) as exc:
        match_category(given, CATS)
    assert "ambiguous" in str(exc.value) and all(c in str(exc.value) for c in candidates)


def test_cli_category_substring_and_ambiguity():
    t = trace_path("mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    ok = run_cli("what-if", t, "--remove-category", "elem", "--json")
    assert ok.returncode == 0, ok.stderr
    bad = run_cli("kernels", t, "--category", "/")
    assert bad.returncode == 2 and bad.stderr.startswith("yoloprof: error:") and "ambiguous" in bad.stderr


def test_what_if_never_below_remaining_host_or_device(rank_apr):
    """The issue's case: removing gemm/conv on rank-0.Apr predicted 28.7 ms with 44.4 ms of host
    time left."""
    r = compute_what_if(rank_apr, remove_category="gemm")
    assert r["change"]["remove_category"] == "gemm/conv"
    assert r["predicted_step_ms"] >= max(r["host_ms_after"], r["device_ms_after"]) - 1e-9
    assert r["predicted_step_ms"] == pytest.approx(r["host_ms_after"])  # host time left binds


def _gpu_profile(step, host, busy, cats):
    """A hand-made GPU profile: categories as (name, summed ms, busy saving ms, launches)."""
    metrics = {"step_ms": {"value": step, "unit": "ms"}, "host_busy_ms": {"value": host, "unit": "ms"},
               "device_busy_ms": {"value": busy, "unit": "ms"},
               "launches_per_step": {"value": sum(c[3] for c in cats), "unit": ""}}
    return {"kind": "trace", "metrics": metrics,
            "categories": [{"category": c, "device_ms_per_step": ms, "pct": 0.0,
                            "busy_saving_ms_per_step": save} for c, ms, save, _ in cats],
            "kernels": [{"name": c, "short_name": c, "category": c, "tensorcore": False, "phase": "forward",
                         "kind": "kernel", "ms_per_step": ms, "pct": 0.0, "count_per_step": n}
                        for c, ms, _, n in cats]}


def test_what_if_removes_only_the_exposed_part_of_overlapping_work():
    """Hand-worked: step 100 ms, host 50 ms over 100 launches (0.5 ms each), device union 90 ms.
    Communication sums 40 ms but only 10 ms of it is exposed (30 ms hidden under compute): removing
    it leaves D' = 80 ms and H' = 50 - 10 * 0.5 = 45 ms, so the step drops by 10 ms to 90 ms (the
    old no-overlap assumption said 50 ms)."""
    p = _gpu_profile(100.0, 50.0, 90.0, [("communication", 40.0, 10.0, 10), ("gemm/conv", 60.0, 50.0, 90)])
    r = compute_what_if(p, remove_category="comm")
    assert r["device_ms_after"] == pytest.approx(80.0) and r["host_ms_after"] == pytest.approx(45.0)
    assert r["predicted_step_ms"] == pytest.approx(90.0)


def _cpu_profile(step, ops):
    return {"kind": "train", "metrics": {"step_ms": {"value": step, "unit": "ms"}},
            "ops": [{"name": n, "phase": "forward", "self_ms_per_step": s, "total_ms_per_step": s,
                     "count_per_step": c} for n, s, c in ops]}


def test_cpu_remove_launches_never_reaches_zero_or_negative_host():
    """Self times summed over threads (14 ms) exceed the 10 ms step: removing 9 of 10 ops leaves
    1 ms (10 ms / 10 ops each), never 0 or below; removing all 10 is refused."""
    p = _cpu_profile(10.0, [("aten::mm", 12.0, 5), ("aten::add", 2.0, 5)])
    r = compute_what_if(p, remove_launches=9)
    assert r["predicted_step_ms"] == pytest.approx(1.0) and r["host_ms_after"] > 0
    assert r["predicted_step_ms_if_cheapest"] > 0
    with pytest.raises(UsageError):
        compute_what_if(p, remove_launches=10)


OPS = [("aten::mm", "forward", 5.0, 6.0, 2.0), ("aten::mm", "backward", 7.0, 8.0, 4.0),
       ("aten::add", "forward", 1.0, 1.0, 10.0), ("aten::linear", "forward", 0.5, 6.5, 2.0)]


def _ops_profile():
    p = {"kind": "train", "metrics": {"step_ms": {"value": 20.0, "unit": "ms"}},
         "ops": [{"name": n, "phase": ph, "self_ms_per_step": s, "total_ms_per_step": t, "count_per_step": c,
                  "alloc_bytes_per_step": 1024.0 * c, "freed_bytes_per_step": 0.0} for n, ph, s, t, c in OPS],
         "ops_by_shape": [{"name": "aten::mm", "input_shapes": "[[2, 3], [3, 4]]", "self_ms_per_step": 9.0,
                           "total_ms_per_step": 10.0, "count_per_step": 4.0},
                          {"name": "aten::mm", "input_shapes": "[[8, 8], [8, 8]]", "self_ms_per_step": 3.0,
                           "total_ms_per_step": 4.0, "count_per_step": 2.0}]}
    return p


@pytest.mark.parametrize("sort,expected", [("self", ["aten::mm", "aten::add", "aten::linear"]),
                                           ("total", ["aten::mm", "aten::linear", "aten::add"]),
                                           ("calls", ["aten::add", "aten::mm", "aten::linear"]),
                                           ("name", ["aten::add", "aten::linear", "aten::mm"])])
def test_ops_sort_orders_merged_rows(sort, expected):
    r = compute_ops(_ops_profile(), sort=sort)
    assert [o["name"] for o in r["ops"]] == expected
    mm = next(o for o in r["ops"] if o["name"] == "aten::mm")
    assert (mm["self_ms_per_step"], mm["count_per_step"], mm["phase"]) == (12.0, 6.0, "forward,backward")
    assert mm["alloc_bytes_per_step"] == 6 * 1024.0 and r["has_memory"]


def test_ops_shapes_rows_and_bad_sort():
    r = compute_ops(_ops_profile(), shapes=True)
    assert [(o["name"], o["input_shapes"]) for o in r["ops"]] == [("aten::mm", "[[2, 3], [3, 4]]"),
                                                                  ("aten::mm", "[[8, 8], [8, 8]]")]
    with pytest.raises(UsageError):
        compute_ops(_ops_profile(), sort="time")
    plain = dict(_ops_profile(), ops_by_shape=[])
    assert any("no input shapes" in w for w in compute_ops(plain, shapes=True)["warnings"])


def test_get_known_field_without_value_is_na():
    t = trace_path("triton_example.json.gz")
    p = profile_from_trace_bytes(gzip.decompress(t.read_bytes()), t.name)
    r = compute_get(p, "img_per_s")
    assert r["value"] is None and "batch" in r["na"]
    with pytest.raises(UsageError):
        compute_get(p, "img_per_sec")
    cli = run_cli("get", t, "img_per_s")
    assert cli.returncode == 0 and cli.stdout.strip() == "n/a" and "batch size" in cli.stderr


def _trial_profile(samples, *, device="NVIDIA A100", threads=2, torch_v="2.13.0", amp=False,
                   batch=8, created="2026-01-01T10:00:00+00:00"):
    mean = sum(samples) / len(samples)
    return {"kind": "train", "created_at": created,
            "env": {"device_name": device, "threads": threads, "torch": torch_v},
            "config": {"batch": batch, "amp": amp, "amp_dtype": "bfloat16"},
            "metrics": {"step_ms": {"value": mean, "unit": "ms", "better": "lower", "samples": list(samples)}}}


def test_compare_lists_and_flags_what_differs_besides_the_code():
    """The issue's case: an A100 against a V100, 2 threads against 1, bf16 autocast against
    float32, captured two hours apart: each is listed; the verdict is flagged."""
    before = _trial_profile([100, 101, 99])
    after = _trial_profile([4.0, 4.1, 3.9], device="Tesla V100", threads=1, amp=True,
                           created="2026-01-01T12:00:00+00:00")
    floors = {"step_ms": {"sd": 0.02, "df": 5, "within_sd": 0.01, "trials": 3, "processes": 6}}
    r = compute_compare(before, after, floors=floors)  # one capture per side: judged by a noise floor
    fields = {d["field"]: d for d in r["differences"]}
    assert set(fields) == {"device", "threads", "precision", "captured_at"}
    assert (fields["precision"]["before"], fields["precision"]["after"]) == ("float32", "bfloat16")
    assert fields["captured_at"]["gap_s"] == 7200 and fields["captured_at"]["big"]
    step = next(m for m in r["metrics"] if m["metric"] == "step_ms")
    assert step["verdict_code"] == "improved" and "flagged" in step["verdict"] and step["flagged"]
    same = compute_compare(_trial_profile([100, 101, 99]),
                           _trial_profile([90, 91, 89], created="2026-01-01T10:00:30+00:00"), floors=floors)
    assert same["differences"][0]["field"] == "captured_at" and not same["flagged"]
    at_once = compute_compare(_trial_profile([100, 101, 99]), _trial_profile([90, 91, 89]), floors=floors)
    assert at_once["differences"] == []  # one capture time on both sides is no difference (issue 41)
    assert "flagged" not in next(m for m in same["metrics"] if m["metric"] == "step_ms")["verdict"]


def test_side_differences_unknown_is_listed_not_flagged():
    d = differences(side_facts({"torch": "2.13.0"}, {}), side_facts({}, {"batch": 4}))
    assert {x["field"] for x in d} == {"torch", "batch"} and not any(x["big"] for x in d)
    near = differences(side_facts({}, {}, "2026-01-01T10:00:00Z"),
                       side_facts({}, {}, f"2026-01-01T10:{int(CAPTURE_GAP_FLAG_S // 120):02d}:00Z"))
    assert near and not near[0]["big"]


def test_docs_quote_the_thresholds_the_code_uses():
    from pathlib import Path

    from yoloprof.metrics.stats import FULL_POWER_TRIALS, MIN_TRIALS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "readers.md").read_text()
    assert f"`CAPTURE_GAP_FLAG_S` =\n{CAPTURE_GAP_FLAG_S:.0f} s" in doc or \
        f"`CAPTURE_GAP_FLAG_S` = {CAPTURE_GAP_FLAG_S:.0f} s" in doc
    assert f"needs at least {MIN_TRIALS} trials per side" in doc
    assert f"--repeat {FULL_POWER_TRIALS}` (or more" in doc


def test_summary_shows_per_device_figures_and_labelled_device_time():
    from yoloprof.readers.summary import compute_summary

    p = _gpu_profile(100.0, 50.0, 45.0, [("gemm/conv", 60.0, 40.0, 10)])
    p["metrics"].update({k: {"value": v, "unit": "ms"} for k, v in
                         (("kernel_ms", 60.0), ("memcpy_ms", 5.0), ("memset_ms", 0.5))})
    p["trace"] = {"devices": [{"device": 0, "busy_ms_per_step": 80.0, "util_pct": 80.0},
                              {"device": 1, "busy_ms_per_step": 10.0, "util_pct": 10.0}]}
    s = compute_summary(p)
    assert [d["util_pct"] for d in s["devices"]] == [80.0, 10.0]
    labels = {f["name"]: f["label"] for f in s["device_time"]}
    assert "union of kernels, memcpy, memset" in labels["device_busy_ms"]
    assert [f["value"] for f in s["device_time"]] == [45.0, 60.0, 5.0, 0.5]


def test_cli_as_a_libreyolo_or_key_averages_user_types_it():
    """`kernels --category gemm`, `what-if --remove-category gemm` and `ops --sort total`, which
    used to exit 2."""
    t = trace_path("nccl_data.json.gz")
    k = run_cli("kernels", t, "--category", "gemm", "--json")
    assert k.returncode == 0, k.stderr
    import json

    rows = json.loads(k.stdout)["kernels"]
    assert rows and {r["category"] for r in rows} == {"gemm/conv"}
    w = run_cli("what-if", t, "--remove-category", "gemm", "--json")
    assert w.returncode == 0 and json.loads(w.stdout)["change"]["remove_category"] == "gemm/conv"
    o = run_cli("ops", t, "--sort", "total", "--top", "3", "--json")
    totals = [r["total_ms_per_step"] for r in json.loads(o.stdout)["ops"]]
    assert o.returncode == 0 and totals == sorted(totals, reverse=True)


def test_what_if_says_when_the_measured_step_is_not_steady_state():
    # every step, warm-up included (--steps 101-105): the default leaves the warm-up steps out
    from yoloprof.readers.select import load_selected
    from yoloprof.traces.step_selection import StepSelection

    every = load_selected(trace_path("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), StepSelection(steps=(101, 105)))
    r = compute_what_if(every, remove_launches=100)
    assert r["device_ms"] > r["step_ms"] and any("not a steady state" in w for w in r["warnings"])
    assert r["predicted_step_ms"] >= max(r["host_ms_after"], r["device_ms_after"]) - 1e-9


def test_side_facts_read_a_sweep_row_too():
    row = {"device_name": "NVIDIA H200", "threads": 4, "torch_version": "2.13.0", "batch": 8,
           "amp": True, "amp_dtype": "float16"}
    f = side_facts(row, row)
    assert (f["device"], f["threads"], f["torch"], f["batch"], f["precision"]) == (
        "NVIDIA H200", 4, "2.13.0", 8, "float16")
