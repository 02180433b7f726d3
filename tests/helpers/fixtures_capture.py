"""Fixtures of the capture, workload and sweep-job tests: real CPU captures shared by the tests
that read them, the CPU fake of torch.cuda, user projects written into a temporary folder
(registered by tests/conftest.py through `pytest_plugins`)."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import torch

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_cuda import FakeCuda
from helpers.fake_sweep import fake_capture
from helpers.paths import run_main
from helpers.profiles import cpu_train_profile
from yoloprof.defs import files
from yoloprof.defs.metrics import BYTES_PER_MIB, MIB
from yoloprof.profiles.model import metric
from yoloprof.traces.analyze import analyze_trace_file
from yoloprof.workloads.data import collate
from yoloprof.workloads.synthetic import SyntheticDetection

# --- the fixtures of tests/test_capturing_cli.py

SCHEMA = json.loads(resources.files("yoloprof.profiles").joinpath("profile.schema.json").read_text())

# A fixed warm-up (--warmup-max = --warmup): the auto one may run up to 20 more steps per trial
# while a loaded machine keeps step times from settling (tested in test_capturing_steady.py). No
# per-module pass (steps of its own): the README runs keep every default section, and the module
# times have their own tests (test_capturing_userloop_extras.py).
TINY_TRAIN = ("--device", "cpu", "--batch", "2", "--imgsz", "64", "--steps", "3", "--warmup", "1",
              "--warmup-max", "1", "--workers", "0", "--no-modules")

TINY_INFER = ("--device", "cpu", "--imgsz", "64", "--runs", "6", "--warmup", "2", "--warmup-max", "2",
              "--no-modules")


def load_valid(path: Path) -> dict:
    profile = json.loads(path.read_text())
    jsonschema.validate(profile, SCHEMA)
    return profile


@pytest.fixture(scope="session")
def train_profile(tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess, Path]:
    project = tmp_path_factory.mktemp("train")
    proc = run_main("run", "synthetic", *TINY_TRAIN, "--repeat", "3", "--project", project)
    assert proc.returncode == 0, proc.stderr
    return load_valid(project / "train" / "profile.json"), proc, project


@pytest.fixture(scope="session")
def infer_profile(tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess, Path]:
    project = tmp_path_factory.mktemp("infer")
    proc = run_main("infer", *TINY_INFER, "--repeat", "2", "--project", project, "--json")
    assert proc.returncode == 0, proc.stderr
    return load_valid(project / "infer" / "profile.json"), proc, project


# --- the fixtures of tests/test_capturing_gpu_paths.py and tests/test_capturing_userloop_cuda_paths.py

@pytest.fixture
def fake(monkeypatch) -> FakeCuda:
    return FakeCuda().install(monkeypatch)


# --- the fixtures of tests/test_capturing_outdirs.py

@pytest.fixture
def fake_run(monkeypatch):
    """`yoloprof run` with a capture that writes a valid CPU profile whose step time it is given."""
    steps = iter([50.0, 60.0, 70.0, 80.0])

    def capture(settings, out_dir, **kw):
        profile = cpu_train_profile(next(steps))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "profile.json").write_text(json.dumps(profile))
        return profile

    monkeypatch.setattr(capture_api, "capture", capture)


# --- the fixtures of tests/test_capturing_runtime_env.py

@pytest.fixture(scope="session")
def captured(tmp_path_factory):

    import yoloprof
    from yoloprof.capturing.builtin.capture_entry import capture

    saved = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
             torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    env_saved = {k: os.environ.get(k) for k in ("CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF")}
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = True, True
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
    os.environ.update(CUDA_LAUNCH_BLOCKING="1", PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        settings = yoloprof.CaptureSettings.for_mode("train", model=net, device="cpu", batch=1, imgsz=32, steps=1,
                                                     warmup=0, workers=0, trace=False, modules=False)
        return capture(settings, tmp_path_factory.mktemp("env") / "out", echo_warnings=False)
    finally:
        (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
         torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) = saved
        for key, value in env_saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


# --- the fixtures of tests/test_capturing_userloop.py

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # tests/assets


@pytest.fixture(scope="module")
def user_loop():
    sys.path.insert(0, str(ASSETS))
    try:
        import user_loop as mod

        yield mod
    finally:
        sys.path.remove(str(ASSETS))


@pytest.fixture(scope="module")
def two_runs(user_loop, tmp_path_factory):
    """Two profiles of the user's script: a Slow module sleeping a quarter of the known times, and
    the full known times (sleep floors keep both runs' steps well above this machine's noise)."""
    import torch

    torch.set_num_threads(1)
    base = tmp_path_factory.mktemp("user")
    fast = Path(user_loop.train(str(base / "fast"), width=32, slow=0.25))
    slow = Path(user_loop.train(str(base / "slow"), width=32, slow=1.0))
    return fast, slow


# --- the fixtures of tests/test_capturing_userloop_extras.py

@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.capture_settings import CaptureSettings

    out = tmp_path_factory.mktemp("cap")
    settings = CaptureSettings.for_mode("train", device="cpu", batch=1, imgsz=64, steps=1, warmup=0,
                                        workers=0, trace=False, python_hotspots=True, nvtx=True)
    return capture(settings, out, echo_warnings=False), settings, out


# --- the fixtures of tests/test_render_capture.py

def tiny_cpu_training_trace(out: Path, *, active: int, dataload: bool = False,
                            profile_memory: bool = False) -> Path:
    """A real torch.profiler CPU trace of a tiny training loop (one warm-up step, then `active`
    profiled steps), its phases marked as a capture marks them; written to `out`."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(2, 3, 8, 8), torch.randn(2, 2)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=active),
                 profile_memory=profile_memory,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out))) as prof:
        for _ in range(active + 1):
            xb, yb = x, y
            if dataload:
                with record_function("yoloprof/dataload"):
                    xb, yb = x.clone(), y.clone()
            with record_function("yoloprof/forward"):
                loss = torch.nn.functional.mse_loss(model(xb), yb)
            with record_function("yoloprof/backward"):
                loss.backward()
            with record_function("yoloprof/optimizer"):
                opt.step()
                opt.zero_grad()
            prof.step()
    return out


# --- the fixtures of tests/test_render_capture.py

@pytest.fixture(scope="session")
def cpu_capture(tmp_path_factory) -> Path:
    """A CPU training trace (profile_memory on) as profile_trace.json with its profile.json."""
    from yoloprof.readers.load import load_any

    folder = tmp_path_factory.mktemp("cpu")
    trace = tiny_cpu_training_trace(folder / files.TRACE, active=2, profile_memory=True)
    doc = load_any(trace)
    doc["trace"]["file"] = files.TRACE  # as a capture records it: the name beside the profile
    (folder / files.PROFILE).write_text(json.dumps(doc))
    return folder / files.PROFILE


# --- the fixtures of tests/test_traces_cpu.py

@pytest.fixture(scope="session")
def cpu_trace(tmp_path_factory) -> Path:
    return tiny_cpu_training_trace(tmp_path_factory.mktemp("cpu") / "trace.json", active=3, dataload=True)


# --- the fixtures of tests/test_traces_truth.py

@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """A CPU trace recorded here with shapes and memory, plus torch's own key_averages."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    x = torch.randn(64, 32, requires_grad=True)
    lin = torch.nn.Linear(32, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for _ in range(2):
            (lin(x).relu().mean(dim=1).sum() / 3).backward()
            x.mean(dim=1).sum().backward()
    path = tmp_path_factory.mktemp("ka") / "trace.json"
    prof.export_chrome_trace(str(path))
    by_name = {e.key: e for e in prof.key_averages()}
    by_shape = {(e.key, str(e.input_shapes)): e.count for e in prof.key_averages(group_by_input_shape=True)}
    return analyze_trace_file(path), by_name, by_shape, json.loads(path.read_text())["traceEvents"]


# --- the fixtures of tests/test_workloads_gpu.py

@pytest.fixture
def batch():
    return collate([SyntheticDetection(4, 128, 8, seed=2)[i] for i in range(4)])


# --- the fixtures of tests/test_workloads_models.py

USER_MODULE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width=8, heads=2):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.fc = nn.Linear(width, heads)

    def forward(self, x):
        feats = self.conv(x).mean((2, 3))
        return {"logits": self.fc(feats), "feats": feats, "ids": torch.zeros(2, dtype=torch.long)}


def make_loss(scale=1.0):
    def loss(outputs, targets):
        return outputs["logits"].pow(2).mean() * scale
    return loss


def bad_factory():
    return 42


def broken(**kw):
    raise RuntimeError("boom")
"""


@pytest.fixture
def user_project(tmp_path, monkeypatch):
    """A user's project folder holding `ymods_user.py`, made the working directory."""
    (tmp_path / "ymods_user.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    yield tmp_path
    __import__("sys").modules.pop("ymods_user", None)


# --- the fixtures of tests/test_sweep_preflight_inputs.py

USERMODELS = "import torch\n\ndef TinyResNet(width=4):\n    return torch.nn.Conv2d(3, width, 3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    monkeypatch.setattr("sys.path", list(sys.path))
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    (tmp_path / "usermodels.py").write_text(USERMODELS)
    yield tmp_path
    sys.modules.pop("usermodels", None)


# --- the fixtures of tests/test_sweep_isolation.py

LEAK_MIB = 24


_LEFTOVERS: list[mmap.mmap] = []  # what a leaky job leaves behind in its process


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


def leaky_capture(settings, out_dir, *, progress: bool = False) -> dict:
    """A capture that keeps LEAK_MIB of touched memory alive after it returns (as caches and heap
    fragments do) and reports its peak as the real capture does on CPU: the resident set.

    The leftover is fresh anonymous memory (mmap, every page touched), so it is new resident memory
    whatever this process did before: a heap allocation could reuse pages an earlier test in the
    same xdist worker freed (an in-process trace parse) and leave the resident set unchanged."""
    leak = mmap.mmap(-1, LEAK_MIB * BYTES_PER_MIB)
    for offset in range(0, len(leak), mmap.PAGESIZE):
        leak[offset] = 1
    _LEFTOVERS.append(leak)
    peak = _rss_mib()
    profile = {"schema": "yoloprof.profile/1", "kind": settings.mode, "config": settings.to_dict(),
               "env": {}, "metrics": {"step_ms": metric([1.0], "ms", "lower"),
                                      "peak_mem_mb": metric([peak], MIB, "lower")},
               "verdict": {"bound": "compute", "why": "fake", "evidence": {}}}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "profile.json").write_text(json.dumps(profile))
    return profile


@pytest.fixture
def leaky_sweep_env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", leaky_capture)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)

    def sweep_dir() -> Path:
        [one] = sorted((tmp_path / "runs" / "profile" / "sweeps" / "adhoc").iterdir())
        return one
    return sweep_dir


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's module in the working directory: a factory, a loss factory that takes the model,
    one that takes nothing, and a post-process with keywords."""
    (tmp_path / "famhooks.py").write_text(textwrap.dedent("""
        import torch
        SEEN = {}
        def net(width=4):
            return torch.nn.Conv2d(3, width, 3)
        def loss_with_model(model):
            SEEN["model"] = model
            return lambda out, targets: (out.square().mean(), {"sq": out.square().mean().detach()})
        def loss_plain():
            return lambda out, targets: out.abs().mean()
        def post(outputs, conf, max_det):
            return outputs.flatten(1).topk(max_det).values > conf
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("famhooks", None)


@pytest.fixture
def gpus(monkeypatch):
    """`gpus(n)`: how many GPUs `device=auto` sees (config/device_spec.gpu_count faked); the
    once-per-process decision is cleared before and after."""
    from yoloprof.config import device_spec

    def set_count(n: int) -> None:
        monkeypatch.setattr(device_spec, "gpu_count", lambda: n)
        device_spec.auto_device.cache_clear()

    yield set_count
    device_spec.auto_device.cache_clear()
