"""libreyolo's files read without surprises (issue 41): which trace, one source per headline,
--repeat trials, every metric name, hints and capture times that hold.

Files: made by libreyolo's own profilers while the tests run (`helpers.libreyolo_made`: its
InferenceProfiler, its `profile infer --repeat` command, its training profiler). References: a
plain-Python recount of the trace JSON and the figures libreyolo wrote."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
from helpers.paths import run_main

from yoloprof.readers.get import compute_get
from yoloprof.readers.libreyolo_trace import libreyolo_window
from yoloprof.readers.load import load_any

pytest.importorskip("libreyolo")


def _json(*args: str, cwd: Path | None = None) -> dict:
    r = run_main(*args, "--json", cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _events(trace: Path) -> list[dict]:
    return json.loads(trace.read_text())["traceEvents"]


def _step_ms(trace: Path, ids: list[int]) -> list[float]:
    """Each listed ProfilerStep's duration (ms) from the trace JSON (CPU-side span)."""
    spans = {int(e["name"].split("#")[1]): e["dur"] / 1000.0 for e in _events(trace)
             if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"}
    return [spans[i] for i in ids]


def _head(s: dict) -> dict:
    return {r["name"]: r for r in s["headline"]}


def _trial(repeat_made: Path, i: int) -> Path:
    return repeat_made.parent / f"infer_{i}" / "profile.json"


# 1. which trace -----------------------------------------------------------------------------

def test_the_window_rule_is_libreyolos(infer_made, train_made) -> None:
    for path in (infer_made[0], train_made):
        lry = json.loads(path.read_text())
        steps = [e for e in _events(path.with_name("profile_trace.json")) if e.get("ph") == "X"
                 and str(e.get("name", "")).startswith("ProfilerStep")]
        got = libreyolo_window([e["name"] for e in steps], [e["ts"] for e in steps], [e.get("dur", 0) for e in steps])
        assert got == (lry["window"]["wall_ms"], lry["window"]["real_steps"])


def test_the_trace_beside_the_profile_wins_over_another_runs_at_the_written_path(repeat_made, tmp_path) -> None:
    lry = json.loads(_trial(repeat_made, 0).read_text())
    assert lry["trace"] == "ly/rep/infer_0/profile_trace.json"  # libreyolo wrote it relative
    mate = tmp_path / "teammate"
    mate.mkdir()
    shutil.copy(_trial(repeat_made, 0), mate / "profile.json")
    shutil.copy(_trial(repeat_made, 0).with_name("profile_trace.json"), mate / "profile_trace.json")
    other = tmp_path / "ly/rep/infer_0"  # the current folder holds another run's trace at that path
    other.mkdir(parents=True)
    shutil.copy(_trial(repeat_made, 1).with_name("profile_trace.json"), other / "profile_trace.json")
    s = _json("summary", "teammate/profile.json", cwd=tmp_path)
    assert any(f"from its trace {mate / 'profile_trace.json'}" in w for w in s["warnings"])
    assert s["source"]["trace"] == str(mate / "profile_trace.json") and s["source"]["headline"] == "trace"
    ids = s["trace"] and load_any(mate / "profile.json")["trace"]["step_ids"]
    want = statistics.fmean(_step_ms(mate / "profile_trace.json", ids))
    assert _head(s)["step_ms"]["value"] == pytest.approx(want, rel=1e-6)


def test_another_runs_trace_is_refused_and_the_file_read(repeat_made, infer_made, tmp_path) -> None:
    mate = tmp_path / "teammate"
    mate.mkdir()
    shutil.copy(_trial(repeat_made, 0), mate / "profile.json")
    other = tmp_path / "ly/rep/infer_0"  # a run with another window (6 runs, 3 steps in its window)
    other.mkdir(parents=True)
    shutil.copy(Path(infer_made[1]["trace"]), other / "profile_trace.json")
    lry = json.loads((mate / "profile.json").read_text())
    s = _json("summary", "teammate/profile.json", cwd=tmp_path)
    assert any("is not this run's trace" in w and "without its trace" in w for w in s["warnings"])
    assert _head(s)["step_ms"]["value"] == pytest.approx(lry["step_ms"])
    assert _head(s)["img_per_s"]["value"] == pytest.approx(lry["img_per_s"])
    assert s["latency"]["p50_ms"] == pytest.approx(lry["latency"]["p50_ms"])


def test_a_truncated_trace_beside_the_profile_falls_back_to_its_figures(repeat_made, tmp_path) -> None:
    path = _trial(repeat_made, 0)
    lry = json.loads(path.read_text())
    shutil.copy(path, tmp_path / "profile.json")
    data = path.with_name("profile_trace.json").read_bytes()
    (tmp_path / "profile_trace.json").write_bytes(data[: len(data) // 2])
    r = run_main("summary", str(tmp_path / "profile.json"), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert any("without its trace" in w and "could not be read as a trace" in w for w in s["warnings"])
    assert _head(s)["step_ms"]["value"] == pytest.approx(lry["step_ms"])


def test_without_a_trace_libreyolos_verdict_is_marked_as_libreyolos(train_made, tmp_path) -> None:
    lry = json.loads(train_made.read_text())
    assert lry["bound"] == "host / launch" and lry["kernels_per_step"] == 0  # libreyolo's, on a CPU run
    shutil.copy(train_made, tmp_path / "profile.json")  # moved without its trace
    s = _json("summary", "profile.json", cwd=tmp_path)
    assert s["verdict"]["bound"] == "host / launch" and "libreyolo's, not yoloprof's" in s["verdict"]["by"]
    text = run_main("summary", "profile.json", cwd=tmp_path).stdout
    assert "verdict (libreyolo's, not yoloprof's): host / launch" in text
    with_trace = _json("summary", str(train_made))  # with its trace: yoloprof's own verdict
    assert "by" not in with_trace["verdict"]
    r = run_main("get", "profile.json", "bound", cwd=tmp_path)
    assert r.stdout.strip() == "host / launch" and "libreyolo's own figure, not yoloprof's" in r.stderr
    assert "own figure" not in run_main("get", str(train_made), "bound").stderr


# 2. one source per headline -------------------------------------------------------------------

def test_with_a_trace_step_time_throughput_and_latency_are_the_traces(infer_made) -> None:
    path, lry = infer_made
    s = _json("summary", str(path))
    ids = load_any(path)["trace"]["step_ids"]
    ms = _step_ms(Path(lry["trace"]), ids)
    head = _head(s)
    assert head["step_ms"]["value"] == pytest.approx(statistics.fmean(ms), rel=1e-6)
    assert head["img_per_s"]["value"] == pytest.approx(lry["config"]["batch"] * 1000 / statistics.fmean(ms), rel=1e-6)
    qs = statistics.quantiles(ms, n=100, method="inclusive")  # numpy's linear interpolation
    assert [s["latency"][f"p{q}_ms"] for q in (50, 90, 99)] == pytest.approx([qs[49], qs[89], qs[98]], rel=1e-6)
    assert any("headline from the trace" in w for w in s["warnings"])


def test_training_throughput_is_batch_over_the_traces_step(train_made) -> None:
    lry = json.loads(train_made.read_text())
    head = _head(_json("summary", str(train_made)))
    assert head["img_per_s"]["value"] == pytest.approx(lry["config"]["batch"] * 1000 / head["step_ms"]["value"])


# 3. --repeat trials ---------------------------------------------------------------------------

def test_repeat_trials_are_the_samples(repeat_made) -> None:
    lry = json.loads(repeat_made.read_text())
    assert lry["img_per_s_n"] == 3 and len(lry["img_per_s_trials"]) == 3
    prof = load_any(repeat_made)
    img = prof["metrics"]["img_per_s"]
    assert img["samples"] == pytest.approx(lry["img_per_s_trials"]) and img["n"] == 3
    assert img["std"] == pytest.approx(statistics.stdev(lry["img_per_s_trials"]))
    step = prof["metrics"]["step_ms"]["samples"]
    assert step == pytest.approx([lry["config"]["batch"] * 1000 / t for t in lry["img_per_s_trials"]])
    assert prof["source"]["headline"] == "trials"
    assert compute_get(prof, "img_per_s_n")["value"] == 3
    assert compute_get(prof, "img_per_s_std")["value"] == pytest.approx(lry["img_per_s_std"])
    c = _json("compare", str(_trial(repeat_made, 0)), str(repeat_made))
    rows = {r["metric"]: r for r in c["metrics"]}
    assert rows["img_per_s"]["before"]["n"] == 1 and rows["img_per_s"]["after"]["n"] == 3
    assert rows["img_per_s"]["after"]["samples"] == pytest.approx(lry["img_per_s_trials"])
    assert any("come from different sources (libreyolo's --repeat trials; the trace)" in w for w in c["warnings"])
    assert not any("different sources" in w for w in _json("compare", str(repeat_made), str(repeat_made))["warnings"])


# 4. every metric name -------------------------------------------------------------------------

def test_every_name_of_libreyolos_metrics_block_resolves(infer_made, train_made, repeat_made, gpu_made, tmp_path) -> None:
    alone = tmp_path / "profile.json"  # also without its trace (its relative path not found from here)
    shutil.copy(train_made, alone)
    for path in (infer_made[0], train_made, repeat_made, gpu_made, alone):
        lry = json.loads(path.read_text())
        prof = load_any(path)
        for name in lry["metrics"]:
            row = compute_get(prof, name)
            assert row["value"] is not None or row.get("na"), (path, name)
        for name in ("dataload_ms", "dataload_frac", "unique_kernels", "memory_pressure", "ops_per_step"):
            if name in lry["metrics"]:
                assert compute_get(prof, name)["value"] == lry["metrics"][name], (path, name)
    r = run_main("get", str(train_made), "forward_ops")
    assert r.returncode == 0 and float(r.stdout) > 0
    r = run_main("get", str(gpu_made), "forward_gpu_ms")  # yoloprof's device time of the phase
    assert r.returncode == 0 and float(r.stdout) == pytest.approx(0.08)  # 60 + 20 us per step


def test_a_libreyolo_only_name_on_a_trace_is_na_with_why(infer_made) -> None:
    r = run_main("get", infer_made[1]["trace"], "dataload_frac")
    assert r.returncode == 0 and r.stdout.strip() == "n/a" and "only libreyolo's profile.json" in r.stderr


def test_an_unknown_name_lists_at_most_ten_close_names(train_made) -> None:
    r = run_main("get", str(train_made), "forward_gpu")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and len(r.stderr) < 400
    close = re.search(r"did you mean: ([^?]*)\?", r.stderr).group(1).split(", ")
    assert 1 <= len(close) <= 10 and "forward_gpu_ms" in r.stderr


# 5. hints and times that hold -----------------------------------------------------------------

def test_steps_and_the_steps_hint_run_on_the_same_file(infer_made) -> None:
    path, lry = infer_made
    ids = sorted({int(e["name"].split("#")[1]) for e in _events(Path(lry["trace"]))
                  if str(e.get("name", "")).startswith("ProfilerStep#")})
    s = _json("summary", str(path), "--steps", f"{ids[0]}-{ids[-1]}")  # every step of its trace
    assert s["trace"]["steps_analyzed"] == len(ids)
    assert _head(s)["step_ms"]["value"] == pytest.approx(statistics.fmean(_step_ms(Path(lry["trace"]), ids)), rel=1e-6)
    hints = [m.groups() for m in (re.search(r"--steps (\d+)-(\d+)", w) for w in _json("summary", str(path))["warnings"]) if m]
    for lo, hi in hints:  # a warm-up hint, where the run had one, runs as printed
        assert _json("summary", str(path), "--steps", f"{lo}-{hi}")["trace"]["steps_analyzed"] == int(hi) - int(lo) + 1


def test_steps_on_a_profile_without_its_trace_is_one_usage_line(repeat_made, tmp_path) -> None:
    shutil.copy(_trial(repeat_made, 0), tmp_path / "profile.json")
    r = run_main("summary", "profile.json", "--steps", "1-2", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "choose steps of its trace, and none is read" in r.stderr


def _first_time(trace: Path) -> str:
    doc = json.loads(trace.read_text())
    first = min(e["ts"] for e in doc["traceEvents"] if "ts" in e)
    t = dt.datetime.fromtimestamp(doc["baseTimeNanoseconds"] / 1e9 + first / 1e6, dt.timezone.utc)
    return t.isoformat(timespec="seconds")


def test_capture_time_is_base_plus_first_ts_on_every_input(infer_made, repeat_made, tmp_path) -> None:
    path, lry = infer_made
    trace = Path(lry["trace"])
    want = _first_time(trace)
    assert abs(dt.datetime.fromisoformat(want) - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(days=1)
    for f in (trace, path):
        r = run_main("get", str(f), "env.captured_at")
        assert r.returncode == 0 and r.stdout.strip() == want, (f, r.stderr)
    doc = json.loads(trace.read_text())
    del doc["baseTimeNanoseconds"]
    (tmp_path / "t.json").write_text(json.dumps(doc))
    r = run_main("get", str(tmp_path / "t.json"), "env.captured_at")
    assert r.returncode == 0 and r.stdout.strip() == "n/a" and "baseTimeNanoseconds" in r.stderr
    alone = _trial(repeat_made, 0)  # without its trace (a relative path, read from elsewhere)
    shutil.copy(alone, tmp_path / "profile.json")
    r = run_main("get", "profile.json", "env.captured_at", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "n/a" and "records no time" in r.stderr


def test_a_file_compared_with_itself_has_no_capture_time_difference(infer_made) -> None:
    for f in (infer_made[0], infer_made[1]["trace"]):
        c = _json("compare", str(f), str(f))
        assert not [d for d in c.get("differences") or [] if d["field"] == "captured_at"], f


def test_a_yoloprof_captures_time_is_when_it_was_written() -> None:
    from helpers.profiles import gpu_train_profile

    prof = gpu_train_profile()
    assert "captured_at" not in prof["env"]
    assert compute_get(prof, "env.captured_at")["value"] == prof["created_at"]


def test_a_real_gpu_trace_belongs_to_libreyolos_analysis_of_it(traces_dir, tmp_path) -> None:
    """libreyolo's own analyze_trace over a real GPU trace (its GPU-side ProfilerStep mirror included):
    the window yoloprof recounts is the one it wrote, so the trace is read, and every name of its
    metrics block resolves."""
    import gzip

    from libreyolo.training.profiler import analyze_trace

    trace = tmp_path / "profile_trace.json"
    trace.write_bytes(gzip.decompress((traces_dir / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes()))
    lry = analyze_trace(trace)
    (tmp_path / "profile.json").write_text(json.dumps(lry))
    prof = load_any(tmp_path / "profile.json")
    assert prof["source"]["trace"] == str(trace) and prof["source"]["headline"] == "trace"
    for key in lry["metrics"]:
        row = compute_get(prof, key)
        assert row["value"] is not None or row.get("na"), key
    assert compute_get(prof, "unique_kernels")["value"] == lry["unique_kernels"]
    assert "unphased" in {p["phase"] for p in lry["phases"]}  # libreyolo's name for yoloprof's "other"
    assert compute_get(prof, "unphased_gpu_ms")["alias_of"] == "other_device_ms"
