"""The CUDA branches of the user-loop clock and the module recorder: on a GPU for real (skipped
here), and their logic through a CPU fake of torch.cuda's events, synchronise and allocator."""

from __future__ import annotations

import time

import pytest

from gpu import requires_cuda


class FakeEvent:
    """A CUDA event that stamps perf_counter when recorded (the stream is the host here)."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.t = None

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: "FakeEvent") -> float:
        return (end.t - self.t) * 1e3

    def synchronize(self) -> None:
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    import torch

    allocated = {"bytes": 0}
    syncs = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: syncs.append(device))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: allocated["bytes"])
    from yoloprof.capture.device import DeviceInfo

    return DeviceInfo(torch.device("cpu"), "cuda"), allocated, syncs


def test_loop_clock_times_phases_with_events_and_syncs_once_per_step(fake_cuda):
    from yoloprof.capture.loopclock import LoopClock

    device, _, syncs = fake_cuda
    clock = LoopClock(device)
    clock.start()
    for _ in range(40):  # more marks than the pool: it grows
        begin = clock.now()
        time.sleep(0.0005)
        clock.add("work", begin, clock.now())
    total, phases = clock.finish()
    assert len(syncs) == 1
    assert phases["work"] >= 40 * 0.5 and total >= phases["work"]


def test_module_recorder_uses_events_and_allocator_deltas(fake_cuda):
    import torch
    from torch import nn

    from yoloprof.capture.modules import ModuleRecorder

    device, allocated, _ = fake_cuda

    class Grow(nn.Module):
        def forward(self, x):
            allocated["bytes"] += 3 * 2**20  # the call leaves 3 MiB allocated
            time.sleep(0.004)
            return x * 2

    model = nn.Sequential(nn.Linear(4, 4), Grow())
    rec = ModuleRecorder(model, device).attach()
    for _ in range(2):
        rec.begin_step()
        model(torch.randn(2, 4, requires_grad=True)).sum().backward()
        rec.end_step()
    rec.detach()
    section = rec.section()
    rows = {r["module"]: r for r in section["rows"]}
    assert section["timing"] == "cuda_events"
    assert rows["1"]["mem_mb"] == pytest.approx(3.0) and rows[""]["mem_mb"] == pytest.approx(3.0)
    assert rows["1"]["forward_ms"] >= 4.0 and rows[""]["forward_ms"] >= rows["1"]["forward_ms"]
    assert rows["0"]["backward_ms"] > 0


@requires_cuda
def test_user_loop_on_a_gpu(tmp_path):
    import torch
    from torch import nn

    import yoloprof

    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device="cuda")
    with yoloprof.profile(tmp_path, model=model, warmup=2, steps=6, repeat=3, nvtx=True) as prof:
        while not prof.done:
            with prof.phase("forward"):
                loss = model(x).square().mean()
            with prof.phase("backward"):
                loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step(x)
    p = prof.result
    assert p["config"]["phase_timing"] == "cuda_events" and p["modules"]["timing"] == "cuda_events"
    assert p["metrics"]["device_util_pct"]["value"] is not None
    assert any(r["mem_mb"] is not None for r in p["modules"]["rows"])
    assert any("NVTX ranges were on" in w for w in p["warnings"])
