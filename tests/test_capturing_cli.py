"""`yoloprof run` and `yoloprof infer`: exit codes, files, schema.

As a user runs them (subprocess): the README's two commands verbatim, a tiny `infer --json`, a user
model from the current folder, Ctrl-C, and two bad inputs. Everything else goes through the CLI's own
`main` in process (helpers.paths.run_main: the same parsing, errors and exit codes, without a fresh
interpreter and torch import per call). The shared captures are session fixtures: a module fixture
is captured again whenever xdist interleaves another module's tests on the worker.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.fixtures_capture import TINY_INFER, TINY_TRAIN, load_valid
from helpers.paths import REPO, run_cli, run_main
from yoloprof.sweep.machine import REGISTRY, RUNTIME_ENV


# The README's two commands as typed there, at their real sizes (640 px inference, 320 px training at
# batch 4), with fewer timed iterations appended (the last value of a flag wins): each flag the
# README shows is still parsed and applied, without paying 25 inference calls and 21 training steps.
README_INFER = ("infer", "--warmup", "5", "--runs", "20")  # no --device: auto, the first GPU else the CPU
README_TRAIN = ("run", "synthetic", "--batch", "4", "--imgsz", "320", "--steps", "5",
                "--warmup", "2", "--repeat", "3")
# Fewer steps than the README's (the size and batch are its own): one timed step in one trial and
# one recorded step or call in the trace pass, right away (the trace's analysis has its own tests).
# One trial, not the README's three: a trial at 320 px costs a model build and two steps (about 4 s
# of CPU); that `--repeat 3` keeps one sample per trial is checked on the tiny train_profile run.
# A fixed warm-up (--warmup-max = --warmup): the auto warm-up may add up to 20 steps per trial
# waiting for steady step times on a loaded machine (its own tests: test_capturing_steady.py).
FEWER_INFER = ("--warmup", "1", "--warmup-max", "1", "--runs", "5", "--trace-wait", "0", "--trace-warmup", "0",
               "--trace-active", "1")
FEWER_TRAIN = ("--steps", "1", "--warmup", "1", "--warmup-max", "1", "--repeat", "1", "--trace-wait", "0",
               "--trace-warmup", "0", "--trace-active", "1")


def test_the_readme_shows_these_commands():
    readme = (REPO / "README.md").read_text()
    for command in (README_INFER, README_TRAIN):
        assert "yoloprof " + " ".join(command) in readme, command


def test_run_writes_profile_and_trace(train_profile):
    profile, proc, project = train_profile
    assert (project / "train" / "profile_trace.json").stat().st_size > 1000
    assert profile["kind"] == "train" and profile["config"]["batch"] == 2
    assert profile["env"]["device_type"] == "cpu" and profile["env"]["threads"] >= 1
    assert "step time" in proc.stdout  # the short summary at the end


def test_repeat_keeps_one_sample_per_trial(train_profile):
    metrics = train_profile[0]["metrics"]
    step = metrics["step_ms"]
    assert step["n"] == 3 and len(step["samples"]) == 3
    assert len(metrics["peak_mem_mb"]["samples"]) == 3 and len(metrics["forward_wall_ms"]["samples"]) == 3
    assert step["value"] == pytest.approx(sum(step["samples"]) / 3)
    # throughput is derived per trial from the same samples, not from the mean
    for ms, ips in zip(step["samples"], metrics["img_per_s"]["samples"]):
        assert ips == pytest.approx(2 * 1000.0 / ms)


def test_every_phase_has_a_wall_time_per_trial(train_profile):
    # (that the phases add up to the step holds by construction: the clock's step total is the sum
    # of its spans; the clock itself is checked against independent timings in test_capturing_clocks.py)
    metrics = train_profile[0]["metrics"]
    phases = ("dataload", "to_device", "forward", "backward", "optimizer")
    for p in phases:
        samples = metrics[f"{p}_wall_ms"]["samples"]
        assert len(samples) == 3 and all(s > 0 for s in samples)
    by_phase = {row["phase"]: row for row in train_profile[0]["phases"]}
    assert set(phases) <= set(by_phase)
    assert by_phase["forward"]["ops_per_step"] > 0  # filled from the trace pass


def test_flops_and_memory_are_real(train_profile):
    metrics = train_profile[0]["metrics"]
    assert metrics["gflops_per_step"]["value"] > 0
    assert metrics["peak_rss_mb"]["n"] == 3 and metrics["peak_rss_mb"]["value"] > 50
    assert metrics["peak_mem_mb"]["value"] > 0  # CPU allocator peak from the trace pass
    assert train_profile[0]["verdict"]["bound"]


def test_infer_json_is_the_profile_and_only_that(infer_profile):
    """In process; the README's inference command below checks the same of a real process's stdout."""
    profile, proc, _ = infer_profile
    assert json.loads(proc.stdout) == profile


def test_infer_latency_and_stages(infer_profile):
    profile = infer_profile[0]
    lat = profile["latency"]
    assert lat["n"] == 12  # 6 runs x 2 trials
    assert lat["min_ms"] <= lat["p50_ms"] <= lat["p90_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert [s["stage"] for s in profile["stages"]] == ["preprocess", "forward", "postprocess"]
    assert profile["metrics"]["p50_ms"]["n"] == 2
    assert math.isclose(profile["metrics"]["img_per_s"]["samples"][0],
                        1000.0 / profile["metrics"]["step_ms"]["samples"][0])


# A CPU has no fast float16 convolutions (a 64 px training step of the detector took seconds):
# the smallest input and one timed step or call still run the whole capture under autocast.
AUTOCAST_TRAIN = (*TINY_TRAIN, "--imgsz", "32", "--steps", "1")
AUTOCAST_INFER = (*TINY_INFER, "--imgsz", "32", "--runs", "1", "--warmup", "1")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cpu_autocast_train_and_infer(tmp_path, dtype):
    proc = run_main("run", *AUTOCAST_TRAIN, "--precision", dtype, "--no-trace", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = load_valid(tmp_path / "train" / "profile.json")
    assert profile["config"]["amp"] is True and profile["config"]["precision"] == dtype
    assert profile["config"]["imgsz"] == 32 and profile["metrics"]["step_ms"]["value"] > 0
    proc = run_main("infer", *AUTOCAST_INFER, "--precision", dtype, "--no-trace", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert load_valid(tmp_path / "infer" / "profile.json")["config"]["precision"] == dtype


BAD_ARGS = [
    (("run", "--steps", "0"), 2, "--steps must be >= 1"),
    (("run", "--warmup", "-1"), 2, "--warmup must be >= 0"),
    (("run", "--precision", "float8"), 2, "argument --precision: invalid choice: 'float8'"),
    (("run", "--amp", "--precision", "bfloat16"), 2, "not allowed with argument"),
    (("run", "weights=X.pt"), 2, "did you mean --weights X.pt?"),
    (("run", "amp_dtype=bfloat16"), 2, "did you mean --precision"),
    (("infer", "trace=false"), 2, "did you mean --no-trace?"),
    (("run", "--size", "x"), 2, "--size x: the built-in detector's sizes are n, t, s, m, l"),
    (("run", "nosuchdata"), 2, "nosuchdata"),
    (("infer", "--batch", "-1"), 2, "needs a CUDA device"),
]


@pytest.mark.parametrize("args,code,text", BAD_ARGS, ids=[" ".join(a[0]) for a in BAD_ARGS])
def test_bad_input_one_line_error(tmp_path, capsys, args, code, text):
    """In process (the CLI's own main): what a subprocess would add is start-up, which the two
    user-style runs below still pay."""
    from yoloprof.cli import main

    full = [*args, "--device", "cpu", "--imgsz", "64", "--project", str(tmp_path)]
    assert main(full) == code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("yoloprof: error:") and text in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "train" / "profile.json").exists()


@pytest.mark.parametrize("args,code,text", [BAD_ARGS[0], BAD_ARGS[4]], ids=["steps 0", "weights="])
def test_bad_input_one_line_error_as_a_user_runs_it(tmp_path, args, code, text):
    full = [*args, "--device", "cpu", "--imgsz", "64", "--project", str(tmp_path)]
    proc = run_cli(*full)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("yoloprof: error:") and text in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
def test_cuda_device_without_cuda_suggests_cpu(tmp_path):
    proc = run_main("run", "--device", "0", "--project", tmp_path)
    assert proc.returncode == 2 and "--device cpu" in proc.stderr


def test_dataset_too_small_exits_3_before_measuring(tmp_path):
    data = tmp_path / "ds"
    (data / "images").mkdir(parents=True)
    from PIL import Image

    for i in range(5):
        Image.new("RGB", (48, 40), (i * 40, 90, 20)).save(data / "images" / f"{i}.jpg")
    proc = run_main("run", data, "--device", "cpu", "--batch", "2", "--imgsz", "64", "--steps", "3",
                   "--warmup", "1", "--workers", "0", "--project", tmp_path / "out")
    assert proc.returncode == 3, proc.stderr
    msg = proc.stderr.strip()
    for way in ("larger dataset", "fewer --steps", "smaller --batch"):
        assert way in msg
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("profile.json"))


def test_weights_that_do_not_match_exit_2_naming_the_key(tmp_path):
    import torch

    torch.save({"model.0.conv.weight": torch.zeros(3)}, tmp_path / "bad.pt")
    proc = run_main("run", *TINY_TRAIN, "--weights", tmp_path / "bad.pt", "--project", tmp_path)
    assert proc.returncode == 2 and "yoloprof: error:" in proc.stderr
    torch.save([1, 2, 3], tmp_path / "notdict.pt")
    proc = run_main("infer", *TINY_INFER, "--weights", tmp_path / "notdict.pt", "--project", tmp_path)
    assert proc.returncode == 2 and "state dict" in proc.stderr


USER_MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1), nn.ReLU(), nn.Conv2d(width, 4, 3, 2, 1))

    def forward(self, x):
        return self.body(x)
'''


def test_user_model_from_the_current_directory_in_both_modes(tmp_path):
    (tmp_path / "mymodels.py").write_text(USER_MODEL)
    proc = run_cli("run", *TINY_TRAIN, "--model", "mymodels.Net", "--project", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    train = load_valid(tmp_path / "out" / "train" / "profile.json")
    assert train["config"]["model"] == "mymodels.Net" and train["metrics"]["step_ms"]["value"] > 0
    # the same import from the current folder in process: the CLI puts the folder on sys.path and
    # imports `mymodels`; both are undone so no other test in this worker sees this module
    try:
        _forget(tmp_path)
        proc = run_main("infer", *TINY_INFER, "--model", "mymodels.Net", "--project", "out", cwd=tmp_path)
    finally:
        _forget(tmp_path)
    assert proc.returncode == 0, proc.stderr
    infer = load_valid(tmp_path / "out" / "infer" / "profile.json")
    assert infer["latency"]["n"] == 6


def _forget(folder: Path) -> None:
    sys.modules.pop("mymodels", None)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(folder)]


@pytest.mark.parametrize("delay", [0.0, 1.0])
def test_ctrl_c_leaves_the_previous_profile_intact(tmp_path, delay):
    """A real SIGINT from outside, as a terminal sends it: at once (while torch is first imported,
    where it used to abort the process or end it by SIGINT, returncode -2) and a second later."""
    out = tmp_path / "train"
    out.mkdir()
    before = b'{"schema": "yoloprof.profile/1", "marker": "previous run"}\n'
    (out / "profile.json").write_bytes(before)
    runtime = tmp_path / "runtime"  # where the capture registers itself once it starts (sweep/machine.py)
    env = {**os.environ, "NO_COLOR": "1", RUNTIME_ENV: str(runtime)}
    proc = subprocess.Popen([sys.executable, "-m", "yoloprof", "run", "--device", "cpu", "--batch", "2",
                             "--imgsz", "64", "--steps", "400", "--warmup", "1", "--workers", "0",
                             "--project", str(tmp_path), "--exist-ok"], stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 120
    while not (runtime / REGISTRY / f"{proc.pid}.json").exists():  # torch imported, capture starting
        assert proc.poll() is None and time.monotonic() < deadline, "the capture never started"
        time.sleep(0.05)
    time.sleep(delay)  # into the capture (import, checks, build or steps: 400 take ~10 s); any moment must do
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.decode().splitlines()[-1:] == ["yoloprof: interrupted"] and b"Traceback" not in err, err
    assert (out / "profile.json").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left behind


@pytest.mark.slow
def test_the_documented_default_inference_captures(tmp_path):
    """The README's inference command, with its real size (640 px); with --json, a real process's
    stdout is the profile and only that (nothing the libraries print goes there)."""
    proc = run_cli(*README_INFER, *FEWER_INFER, "--json", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    infer = load_valid(tmp_path / "infer" / "profile.json")
    assert infer["config"]["imgsz"] == 640 and infer["latency"]["n"] == 5
    import torch  # auto: the device that ran is recorded, and that auto chose it

    assert infer["config"]["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert infer["config"]["device_asked"] == "auto"
    assert json.loads(proc.stdout) == infer


@pytest.mark.slow
def test_the_documented_default_training_captures(tmp_path):
    """The README's training command, with its real size (320 px, batch 4)."""
    proc = run_cli(*README_TRAIN, *FEWER_TRAIN, "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    train = load_valid(tmp_path / "train" / "profile.json")
    assert train["config"]["imgsz"] == 320 and train["config"]["batch"] == 4
    assert all(len(m["samples"]) == 1 for name, m in train["metrics"].items()
               if name in ("step_ms", "img_per_s", "peak_mem_mb", "forward_wall_ms"))


def test_infer_folder_with_a_corrupt_image_skips_it_and_says_so(tmp_path):
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    Image.new("RGB", (80, 60), (200, 30, 30)).save(folder / "good.jpg")
    (folder / "bad.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    proc = run_main("infer", folder, *TINY_INFER, "--no-trace", "--project", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    profile = load_valid(tmp_path / "out" / "infer" / "profile.json")
    assert any("bad.jpg" in w for w in profile["warnings"]), profile["warnings"]


def test_one_meaning_per_metric_name_across_modes(train_profile, infer_profile):
    """Timing-pass figures are unprefixed and hold one sample per trial (train --repeat 3, infer
    --repeat 2); the trace pass runs once, so a traced host-clock figure has one sample and must be
    `trace_`-prefixed in both modes (an infer profile used to hold the traced forward_wall_ms)."""
    for (profile, _, _), trials in ((train_profile, 3), (infer_profile, 2)):
        for name, entry in profile["metrics"].items():
            if name.startswith("trace_"):
                continue
            if name.endswith("_wall_ms") or name in ("step_ms", "img_per_s"):
                assert entry["n"] == trials, (profile["kind"], name)
        assert "trace_step_ms" in profile["metrics"]
    assert "forward_wall_ms" not in infer_profile[0]["metrics"]
    assert infer_profile[0]["metrics"]["trace_forward_wall_ms"]["n"] == 1


def test_threads_and_precision_are_set_and_recorded(train_profile):
    profile = train_profile[0]
    expected = max(1, len(os.sched_getaffinity(0)) // 2)  # the documented auto rule, worked here
    assert profile["config"]["threads"] == profile["env"]["threads"] == expected
    assert profile["config"]["precision"] == "float32" and profile["config"]["amp"] is False  # auto on CPU
    assert profile["config"]["device"] == "cpu"


def test_trace_schedule_and_recording_flags(tmp_path):
    proc = run_main("infer", *TINY_INFER, "--repeat", "1", "--threads", "1", "--trace-wait", "0",
                   "--trace-warmup", "1", "--trace-active", "2", "--no-record-shapes", "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = load_valid(tmp_path / "infer" / "profile.json")
    assert profile["trace"]["steps_analyzed"] == 2 and profile["config"]["threads"] == 1
    trace = json.loads((tmp_path / "infer" / "profile_trace.json").read_text())
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]
    assert ops and not any("Input Dims" in e.get("args", {}) for e in ops)


def test_default_trace_records_input_shapes(train_profile):
    trace = json.loads((train_profile[2] / "train" / "profile_trace.json").read_text())
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]
    assert sum("Input Dims" in e.get("args", {}) for e in ops) > len(ops) / 2
