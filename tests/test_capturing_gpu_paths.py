"""The CUDA paths of the capture, the user loop and `@timeit` on the second of two fake devices
(tests/helpers/fake_cuda.py behaves like torch: a current device, one stream per device, events
that belong to a device and cannot be read before they completed, CPU devices refused), plus the
torch floor, the GradScaler guard, the capability warnings, CUPTI teardown, the user-module copy
and the NVTX check. Each test states the figures it expects from the work it enqueues."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from helpers.fake_cuda import MIB, FakeCuda
from yoloprof.capturing.device.torch_device import DeviceInfo

REPO = Path(__file__).resolve().parents[1]
CUDA1 = torch.device("cuda", 1)


def test_the_fake_refuses_what_torch_refuses():
    cuda = FakeCuda()
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.synchronize(torch.device("cpu"))
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.max_memory_allocated(torch.device("cuda", 2))
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record(cuda.current_stream(1))
    cuda.run(4.0, device=1)
    end.record(cuda.current_stream(1))
    with pytest.raises(RuntimeError, match="not ready"):  # torch raises before completion
        start.elapsed_time(end)
    cuda.synchronize(1)
    assert start.elapsed_time(end) == 4.0


def test_capture_runs_under_the_chosen_device_and_restores_the_callers(monkeypatch, tmp_path):
    from yoloprof.capturing.builtin import capture_entry as api
    from yoloprof.config.capture_settings import CaptureSettings

    cuda = FakeCuda()
    seen = {}
    monkeypatch.setattr(api, "resolve_device", lambda spec: DeviceInfo(CUDA1, "cuda", api=cuda))
    monkeypatch.setattr(api, "_capture", lambda settings, device, *a: seen.setdefault("current", cuda.current))
    settings = CaptureSettings.for_mode("train", device="cuda:1", batch=2, imgsz=32, workers=0)
    api.capture(settings, tmp_path / "out")
    assert seen["current"] == 1  # every CUDA call of the capture (pin-memory thread included) goes to cuda:1
    assert cuda.current == 0


def _user_loop(fake: FakeCuda, prof, x) -> None:
    while not prof.done:
        with prof.phase("forward"):
            fake.run(2.0, device=1)
        prof.step(x)


def test_user_loop_runs_under_its_device_and_times_it(fake, tmp_path):
    import yoloprof

    inside = []
    with yoloprof.profile(tmp_path, device="cuda:1", warmup=1, steps=4, repeat=2, trace_steps=0,
                          flops=False) as prof:
        inside.append(fake.current)
        _user_loop(fake, prof, torch.zeros(8, 3))
    assert inside == [1] and fake.current == 0
    p = prof.result
    assert p["config"]["device"] == "cuda:1" and p["config"]["phase_timing"] == "cuda_events"
    assert p["phases"][0]["wall_ms_per_step"] == pytest.approx(2.0)
    assert set(fake.device_syncs) == {1}
    assert p["env"]["device_name"] == "NVIDIA A100-SXM4-40GB"


class _OnCuda1(torch.Tensor):
    """A CPU tensor that reports cuda:1, as a batch on the second GPU would."""

    @property
    def device(self):  # noqa: D401 - torch's attribute
        return CUDA1


def test_user_loop_without_model_finds_the_device_of_the_batch(fake, tmp_path):
    import yoloprof

    x = torch.zeros(8, 3).as_subclass(_OnCuda1)
    with yoloprof.profile(tmp_path, warmup=0, steps=3, trace_steps=0, flops=False) as prof:
        _user_loop(fake, prof, x)
    p = prof.result
    assert p["config"]["device"] == "cuda:1" and p["config"]["phase_timing"] == "cuda_events"
    assert p["phases"][0]["wall_ms_per_step"] == pytest.approx(2.0)
    assert fake.device_syncs and set(fake.device_syncs) == {1}
    assert any("the first iteration is untimed" in w for w in p["warnings"])


def test_timeit_synchronises_a_function_that_first_touches_cuda_on_its_device(fake):
    import yoloprof

    @yoloprof.timeit(repeat=3, warmup=0, log=False)
    def work():
        fake.alloc(MIB, device=1)  # the first call initialises CUDA, on cuda:1
        fake.run(5.0, device=1)
        fake.free(MIB, device=1)

    assert not fake.initialized
    work()
    # not before the first sample (nothing could be queued), then at every boundary
    assert fake.device_syncs.count(1) == 2 * 3 - 1


def test_nvtx_check_fails_when_a_push_fails(monkeypatch):
    from yoloprof.capturing.extras import nvtx

    def broken(name):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")

    monkeypatch.setattr(torch.cuda.nvtx, "range_push", broken)
    device = DeviceInfo(CUDA1, "cuda", api=FakeCuda())
    assert nvtx.nvtx_usable(device) is False
    assert "cannot emit NVTX ranges" in nvtx.nvtx_note(device)


def test_cupti_is_torn_down_after_a_cuda_trace_unless_the_user_says_otherwise(monkeypatch):
    from yoloprof.capturing.passes.tracing import cupti_teardown

    cuda = DeviceInfo(CUDA1, "cuda", api=FakeCuda())
    env: dict[str, str] = {}
    assert cupti_teardown(cuda, env) is None and env == {"TEARDOWN_CUPTI": "1"}
    kept = {"TEARDOWN_CUPTI": "0"}
    with pytest.warns(RuntimeWarning, match="CUPTI stays attached"):
        assert "TEARDOWN_CUPTI=0" in cupti_teardown(cuda, kept)
    assert kept == {"TEARDOWN_CUPTI": "0"}
    cpu: dict[str, str] = {}
    assert cupti_teardown(DeviceInfo(torch.device("cpu"), "cpu"), cpu) is None and cpu == {}


def test_the_user_module_is_copied_to_the_host_one_tensor_at_a_time(monkeypatch):
    from torch import nn

    from yoloprof.workloads.models import build_model

    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Linear(3, 3))
    net[2].weight = net[0].weight  # tied weights
    params = {id(p) for p in net.parameters()} | {id(b) for b in net.buffers()}
    deep_copied = []
    original = torch.Tensor.__deepcopy__

    def spy(self, memo):
        if id(self) in params:
            deep_copied.append(tuple(self.shape))  # a deepcopy of a weight lands on the weight's device
        return original(self, memo)

    monkeypatch.setattr(torch.Tensor, "__deepcopy__", spy)
    copy = build_model(net)
    assert deep_copied == []
    assert all(t.device.type == "cpu" for t in [*copy.parameters(), *copy.buffers()])
    assert copy[2].weight is copy[0].weight and copy[0].weight is not net[0].weight
    assert all(torch.equal(a, b) for a, b in zip(copy.state_dict().values(), net.state_dict().values()))


def test_declared_torch_floor_is_the_guarded_floor():
    from yoloprof.capturing.device.torch_compat import TORCH_FLOOR

    text = (REPO / "pyproject.toml").read_text()
    floor = re.search(r'"torch>=(\d+)\.(\d+)"', text)
    assert floor and (int(floor.group(1)), int(floor.group(2))) == TORCH_FLOOR


def test_grad_scaler_before_torch_2_3_is_the_cuda_amp_one(monkeypatch):
    from yoloprof.capturing.device.torch_compat import grad_scaler

    class OldScaler:  # torch 2.1-2.2: torch.cuda.amp.GradScaler(), no torch.amp.GradScaler
        pass

    monkeypatch.delattr(torch.amp, "GradScaler", raising=False)
    monkeypatch.setattr(torch.cuda.amp, "GradScaler", OldScaler)
    assert isinstance(grad_scaler(), OldScaler)


@pytest.mark.parametrize("name, cap, precision, expected", [
    ("Tesla T4", (7, 5), "bfloat16", "no native bfloat16"),
    ("Tesla V100-SXM2-16GB", (7, 0), "bfloat16", "no native bfloat16"),
    ("Tesla P100-PCIE-16GB", (6, 0), "float16", "no Tensor Cores"),
    ("NVIDIA A100-SXM4-40GB", (8, 0), "float32", "convolutions run TF32"),
    ("NVIDIA A100-SXM4-40GB", (8, 0), "bfloat16", None),
    ("Tesla T4", (7, 5), "float16", None),
])
def test_capability_warnings(name, cap, precision, expected):
    from yoloprof.capturing.device.gpu_capability import capability_warnings

    cuda = FakeCuda()
    cuda.devices[1].name, cuda.devices[1].capability = name, cap
    lines = capability_warnings(precision, DeviceInfo(CUDA1, "cuda", api=cuda),
                                {"cudnn_allow_tf32": True, "matmul_allow_tf32": False})
    if expected is None:
        assert lines == []
    else:
        assert len(lines) == 1 and expected in lines[0] and name in lines[0] and "\n" not in lines[0]


def test_a_cuda_trace_session_asks_kineto_to_detach_cupti(monkeypatch):
    import os

    from yoloprof.capturing.passes import tracing

    class StubProfiler:  # the real one needs a CUDA build for a CUDA activity
        def __init__(self, **kwargs):
            self.started = False

        def start(self):
            self.started = True

    env: dict[str, str] = {}
    monkeypatch.setattr(os, "environ", env)
    monkeypatch.setattr(torch.profiler, "profile", StubProfiler)
    session = tracing.TraceSession(DeviceInfo(CUDA1, "cuda", api=FakeCuda()))
    session.start()
    assert session._prof.started and env == {"TEARDOWN_CUPTI": "1"}
