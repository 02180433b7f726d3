"""The readers through the command line, on every real trace in the shared fixtures and on
hand-made profiles; exit codes and one-line errors for bad inputs.

Most calls go through the CLI's own `main` in process (helpers.paths.run_main: the same parsing,
rendering, errors and exit codes, without a fresh interpreter per call); a few run `yoloprof` in a
subprocess exactly as a user does (run_cli): a value piped out of `get`, plain text when piped,
exit code 4, one bad input per reader, and the start-up imports.

Figures are checked against values this file computes itself from the raw trace JSON with the
standard library (gzip + json), independently of the trace engine.
"""

from __future__ import annotations

import functools
import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from helpers.paths import TRACES, run_cli, run_main, trace_path
from helpers.profiles import gpu_train_profile

from yoloprof.profiles.io import write_profile

ALL_TRACES = sorted(p.name for p in TRACES.glob("*.json.gz")) if TRACES.is_dir() else [
    "nccl_data.json.gz", "triton_example.json.gz"]
BIG = {"df_index_resolver.json.gz", "rank0.json.gz", "trace_diff_control.json.gz", "trace_diff_test.json.gz",
       "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"}
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
# Leading warm-up steps the readers leave out by default (the steady-state rule for traces,
# docs/steady-state.md "Traces"), read off the step times by hand: rank-0.Apr's 35.1 and 72.1 ms
# against 95.6-95.7 ms; rank0.json's 209.7 ms against 215.5-216.5 ms (3% off, the rule's
# tolerance being 2%). Every other fixture's first steps are within its steps' own spread.
WARMUP_STEPS = {"rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": 2, "rank0.json.gz": 1}
# each shared fixture trace parsed once per module (fixtures_readers.one_parse_per_fixture_trace)
pytestmark = pytest.mark.usefixtures("one_parse_per_fixture_trace")


def _traces(big_slow: bool = True) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if big_slow and n in BIG else n for n in ALL_TRACES]


def _events(name: str) -> list[dict]:
    doc = json.loads(gzip.decompress(trace_path(name).read_bytes()))
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@functools.lru_cache(maxsize=None)
def _reference(name: str) -> dict:
    """Every figure these tests take from a raw trace, computed from one decode of it and kept (the
    figures are small; the decoded events of a big trace are not, so they are dropped)."""
    events = _events(name)
    steps = _steps(events)[WARMUP_STEPS.get(name, 0):]
    return {"steps": steps, "kernel_ms": _kernel_ms_by_name(events, steps),
            "last_end": max(float(e["ts"]) + float(e.get("dur") or 0) for e in events
                            if e.get("ph") == "X" and e.get("cat") not in ("Trace", "user_annotation"))}


def _steps(events: list[dict]) -> list[tuple[float, float]]:
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
             if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"]
    return sorted(spans)


def _kernel_ms_by_name(events: list[dict], steps: list[tuple[float, float]]) -> tuple[dict[str, float], int]:
    """Total kernel ms per name over the analysed steps (a kernel belongs to the step its launch is
    in; one without a launch event in the trace, by its own start), and the number of steps; a
    trace without ProfilerStep is one step."""
    launch_ts = {e["args"]["correlation"]: float(e["ts"]) for e in events
                 if e.get("cat") in LAUNCH_CATS and "correlation" in (e.get("args") or {})}
    total: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") != "kernel":
            continue
        ts = launch_ts.get((e.get("args") or {}).get("correlation"), float(e["ts"]))
        if steps and not any(a <= ts <= b for a, b in steps):
            continue
        total[e["name"]] += float(e["dur"]) / 1000.0
    return dict(total), max(len(steps), 1)


def _json(*args: str) -> dict:
    res = run_main(*args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)  # stdout is JSON and nothing else


# ------------------------------------------------------------------ every reader on every trace

@pytest.mark.parametrize("name", _traces())
def test_summary_on_trace(name: str) -> None:
    path = trace_path(name)
    s = _json("summary", str(path))
    steps = _reference(name)["steps"]
    assert s["kind"] == "trace"
    assert s["trace"]["steps_analyzed"] == max(len(steps), 1)
    step = next(f for f in s["headline"] if f["name"] == "step_ms")
    last_end = _reference(name)["last_end"]
    if steps and steps[-1][1] <= last_end:  # a step cut by the end of the recording is not compared
        mean_ms = sum(b - a for a, b in steps) / len(steps) / 1000.0
        assert step["value"] == pytest.approx(mean_ms, rel=0.01)
    text = run_main("summary", str(path))
    assert text.returncode == 0 and "verdict:" in text.stdout, text.stderr


@pytest.mark.parametrize("name", _traces())
def test_kernels_top_kernel_matches_raw_trace(name: str) -> None:
    path = trace_path(name)
    k = _json("kernels", str(path), "--top", "0")
    by_name, nsteps = _reference(name)["kernel_ms"]
    engine: dict[str, float] = defaultdict(float)
    for row in k["kernels"]:
        engine[row["name"]] += row["ms_per_step"]
    top = max(by_name, key=by_name.get)
    assert engine[top] == pytest.approx(by_name[top] / nsteps, rel=0.02)
    text = run_main("kernels", str(path), "--top", "5")
    assert text.returncode == 0 and "kernel" in text.stdout


@pytest.mark.parametrize("name", _traces())
@pytest.mark.parametrize("reader", ["phases", "ops", "get"])
def test_other_readers_on_trace(name: str, reader: str) -> None:
    path = trace_path(name)
    data = _json(reader, str(path))
    if reader == "ops":
        assert data["ops"], "every fixture has cpu ops"
        assert data["ops"] == sorted(data["ops"], key=lambda o: -o["self_ms_per_step"])
    if reader == "get":
        assert "step_ms" in [f["field"] for f in data["fields"]]
    assert run_main(reader, str(path)).returncode == 0


def test_get_single_value_is_just_the_value() -> None:
    path = trace_path("nccl_data.json.gz")
    res = run_cli("get", str(path), "trace.steps_analyzed")
    assert res.returncode == 0 and res.stdout == f"{len(_reference('nccl_data.json.gz')['steps'])}\n"


def test_compare_two_raw_traces() -> None:
    a, b = trace_path("trace_diff_control.json.gz"), trace_path("trace_diff_test.json.gz")
    r = _json("compare", str(a), str(b))
    assert any("not a trial" in n for n in r["notes"])
    assert all(m["verdict"] is None for m in r["metrics"])
    for side, name in (("before", a.name), ("after", b.name)):
        raw = [(y - x) / 1000.0 for x, y in _reference(name)["steps"]]
        got = [s["step_ms"] for s in r["per_step"][side]]
        assert got == pytest.approx(raw, rel=0.01)
    assert r["categories"], "per-category deltas"
    res = run_main("compare", str(a), str(b), "--fail-on-regression")
    assert res.returncode == 0, "no verdict, so no regression"


@pytest.mark.parametrize("name", ["nccl_data.json.gz", "mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_what_if_on_gpu_trace(name: str) -> None:
    r = _json("what-if", str(trace_path(name)), "--remove-launches", "2")
    assert r["predicted_step_ms"] <= r["step_ms"]
    assert r["predicted_step_ms"] >= max(r["host_ms_after"], r["device_ms_after"]) - 1e-9
    cat = _json("summary", str(trace_path(name)))["categories"][0]["category"]
    r = _json("what-if", str(trace_path(name)), "--remove-category", cat)
    assert r["device_ms_after"] < r["device_ms"]


# ------------------------------------------------------------------ hand-made profiles

def test_profile_readers(profiles) -> None:
    text = run_cli("summary", str(profiles["gpu"]))
    assert text.returncode == 0 and "verdict: host" in text.stdout
    assert "│" not in text.stdout and "─" not in text.stdout  # piped: plain text, no box drawing
    s = _json("summary", str(profiles["cpu"]))
    assert next(f for f in s["headline"] if f["name"] == "device_util_pct")["value"] is None
    assert run_main("get", str(profiles["gpu"]), "step_ms").stdout == "100.0\n"
    assert run_main("get", str(profiles["infer"]), "latency.p99_ms").stdout == "30.0\n"
    warn = run_main("kernels", str(profiles["cpu"]), "--tensorcore")
    assert warn.returncode == 0 and "no effect" in warn.stdout
    r = _json("what-if", str(profiles["cpu"]), "--remove-launches", "10")
    assert r["mode"] == "cpu"


def test_compare_fail_on_regression(tmp_path) -> None:
    runs = [(100.0, 101.0, 99.0), (101.0, 100.0, 102.0), (99.0, 100.5, 100.0)]  # 3 captures per side
    before = [str(write_profile(tmp_path / f"a{i}.json", gpu_train_profile(r))) for i, r in enumerate(runs)]
    after = [str(write_profile(tmp_path / f"b{i}.json", gpu_train_profile(tuple(1.2 * x for x in r))))
             for i, r in enumerate(runs)]
    res = run_cli("compare", *before, "vs", *after, "--fail-on-regression")
    assert res.returncode == 4, res.stderr
    assert "regressed" in res.stdout and res.stderr.startswith("yoloprof: error:")
    assert run_main("compare", *after, "vs", *before, "--fail-on-regression").returncode == 0
    # one capture per side and no noise floor: never a regression, and it says what would decide
    one = run_main("compare", before[0], after[0], "--fail-on-regression")
    assert one.returncode == 0 and "run-to-run noise unknown" in one.stdout and "yoloprof calibrate" in one.stdout
    assert run_main("compare", before[0], after[0], after[1]).returncode == 2  # 3 paths, no "vs"


# ------------------------------------------------------------------ bad inputs

def _bad_files(tmp: Path) -> dict[str, tuple[Path, int]]:
    files = {
        "empty": (b"", 1),
        "truncated": (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur"', 1),
        "corrupt_gzip": (b"\x1f\x8b\x08\x00garbage-not-deflate", 1),
        "array": (b"[1, 2, 3]", 1),
        "not_a_trace": (b'{"hello": "world"}', 1),
        "future_schema": (json.dumps({**gpu_train_profile(), "schema": "yoloprof.profile/9"}).encode(), 1),
    }
    out = {}
    for key, (data, code) in files.items():
        p = tmp / f"{key}.json"
        p.write_bytes(data)
        out[key] = (p, code)
    out["missing"] = (tmp / "nope.json", 2)
    out["directory"] = (tmp, 2)
    return out


# one bad input per reader as a user runs it (a subprocess); every case in process
AS_A_USER = {("summary", "truncated"), ("get", "missing"), ("kernels", "future_schema")}


@pytest.mark.parametrize("case", ["empty", "truncated", "corrupt_gzip", "array", "not_a_trace",
                                  "future_schema", "missing", "directory"])
@pytest.mark.parametrize("reader", ["summary", "get", "kernels"])
def test_bad_inputs_exit_codes(tmp_path, case: str, reader: str) -> None:
    path, code = _bad_files(tmp_path)[case]
    res = (run_cli if (reader, case) in AS_A_USER else run_main)(reader, str(path))
    assert res.returncode == code, (res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("yoloprof: error:"), res.stderr
    if case == "future_schema":
        assert "yoloprof.profile/9" in lines[0] and "yoloprof.profile/1" in lines[0]


@pytest.mark.parametrize("args,word", [
    (("get", "{gpu}", "nope"), "step_ms"),
    (("kernels", "{gpu}", "--phase", "fwd"), "forward"),
    (("kernels", "{gpu}", "--category", "/"), "gemm/conv"),  # ambiguous: lists the candidates
    (("kernels", "{gpu}", "--grep", "[a-"), "--grep"),
    (("ops", "{gpu}", "--phase", "fwd"), "forward"),
    (("what-if", "{gpu}", "--remove-category", "nope"), "elementwise"),
    (("what-if", "{cpu}", "--remove-category", "elementwise"), "no device kernels"),
    (("compare", "{gpu}", "{gpu}", "--metric", "nope"), "step_ms"),
])
def test_usage_errors_exit_2(profiles, args, word: str) -> None:
    res = run_main(*(a.format(**{k: str(v) for k, v in profiles.items()}) for a in args))
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("yoloprof: error:") and word in res.stderr
    assert "Traceback" not in res.stderr


# ------------------------------------------------------------------ fast start

GET_IMPORTS = """
import sys
from yoloprof.cli import main
rc = main(["get", sys.argv[1], "step_ms"])
# numpy.ma (9 ms) and the settings schema are not needed to read a trace either
heavy = [m for m in ("torch", "pandas", "hydra", "scipy", "rich", "numpy.ma", "yoloprof.config.capture_settings")
         if m in sys.modules]
print("HEAVY", heavy, rc)
"""


@pytest.mark.parametrize("which", ["profile", "trace"])
def test_get_imports_no_heavy_modules(profiles, which: str) -> None:
    import subprocess

    path = profiles["gpu"] if which == "profile" else trace_path("triton_example.json.gz")
    res = subprocess.run([sys.executable, "-c", GET_IMPORTS, str(path)], capture_output=True, text=True,
                         timeout=120)
    last = res.stdout.strip().splitlines()[-1]
    assert last == "HEAVY [] 0", (res.stdout, res.stderr)
