"""The CUDA branches of the user-loop clock and the module recorder: on a GPU for real (skipped
here), and their logic on the second device of the CPU fake of torch.cuda (tests/helpers/fake_cuda.py:
events tied to a device's stream, unreadable before they complete, allocator figures per device)."""

from __future__ import annotations

import pytest
import torch

from gpu import requires_cuda
from helpers.fake_cuda import MIB
from yoloprof.capturing.device.torch_device import DeviceInfo

CUDA1 = torch.device("cuda", 1)


def test_loop_clock_records_on_the_chosen_devices_stream_and_syncs_it(fake):
    from yoloprof.capturing.userloop.loop_clock import LoopClock

    clock = LoopClock(DeviceInfo(CUDA1, "cuda"))
    for _ in range(2):
        clock.start()
        for _ in range(40):  # more marks than the pool: it grows
            begin = clock.now()
            fake.run(0.5, device=1)
            clock.add("work", begin, clock.now())
        total, phases = clock.finish()
        assert phases == {"work": pytest.approx(20.0)}
    assert fake.device_syncs == [1, 1]


def test_module_recorder_times_and_measures_the_chosen_device(fake):
    from torch import nn

    from yoloprof.capturing.extras.module_recorder import ModuleRecorder

    class Grow(nn.Module):
        def forward(self, x):
            fake.alloc(3 * MIB, device=1)  # the call leaves 3 MiB allocated on cuda:1
            fake.run(4.0, device=1)
            return x * 2

    model = nn.Sequential(nn.Linear(4, 4), Grow())
    rec = ModuleRecorder(model, DeviceInfo(CUDA1, "cuda")).attach()
    for _ in range(2):
        rec.begin_step()
        model(torch.randn(2, 4, requires_grad=True)).sum().backward()
        fake.synchronize(1)
        rec.end_step()
    rec.detach()
    rows = {r["module"]: r for r in rec.section()["rows"]}
    assert rows["1"]["mem_mb"] == pytest.approx(3.0) and rows[""]["mem_mb"] == pytest.approx(3.0)
    assert rows["1"]["forward_ms"] == pytest.approx(4.0) and rows[""]["forward_ms"] == pytest.approx(4.0)


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
