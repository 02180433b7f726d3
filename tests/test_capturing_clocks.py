"""The step clock against independent timings (CPU: sleeps measured by an outer perf_counter), and
the CUDA branches of the capture run on CPU through a fake CUDA API (tests/helpers/fake_cuda.py):
the CUDA-event phase clock, the allocator peak reset per trial, the GradScaler path and the
`--batch -1` linear fit, on the second fake device (cuda:1), as `--device cuda:1` runs them.
Expected figures come from the durations and sizes the tests state."""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np
import pytest
import torch

from helpers.fake_cuda import MIB, FakeCuda, FakeOutOfMemoryError
from yoloprof.capturing.builtin import autobatch
from yoloprof.capturing.builtin.trial_context import needs_grad_scaler
from yoloprof.capturing.device.torch_device import DeviceInfo, StepClock
from yoloprof.capturing.passes.step_calls import TrainContext, train_step
from yoloprof.capturing.passes.timing import _timed_loop


def fake_device() -> tuple[DeviceInfo, FakeCuda]:
    cuda = FakeCuda()
    return DeviceInfo(torch.device("cuda", 1), "cuda", api=cuda), cuda


def test_cpu_clock_against_an_outer_perf_counter():
    clock = StepClock(DeviceInfo(torch.device("cpu"), "cpu"))
    outer = time.perf_counter()
    clock.start()
    time.sleep(0.03)
    clock.mark("a")
    time.sleep(0.01)
    clock.mark("b")
    total, phases = clock.finish()
    outer_ms = (time.perf_counter() - outer) * 1000.0
    assert phases["a"] >= 30.0 and phases["b"] >= 10.0  # a sleep lasts at least what it asks
    assert 40.0 <= total <= outer_ms  # inside what an independent clock saw around the step


def test_event_clock_times_device_work_not_host_time_and_syncs_once_per_step():
    device, cuda = fake_device()
    clock = StepClock(device)
    cuda.run(50.0, device=0)  # someone else's work on cuda:0 must not show up
    for _ in range(2):  # the event pool is reused step after step
        clock.start()
        cuda.run(3.0, device=1)
        clock.mark("forward")
        cuda.run(1.5, device=1)
        clock.mark("loss")
        cuda.run(5.0, device=1)
        clock.mark("forward")  # a phase seen twice in one step adds up
        total, phases = clock.finish()
        assert phases == {"forward": 8.0, "loss": 1.5}
        assert total == 9.5
    assert cuda.event_syncs == 2 and cuda.device_syncs == []  # only the step's last event waits
    assert {d for e in clock._pool for d in e.records} == {1}  # every event on cuda:1's stream


def _trial(device: DeviceInfo, cuda: FakeCuda, warmup_alloc: int, step_alloc: int) -> dict:
    def step(phase):
        with phase("forward"):
            cuda.run(2.0, alloc=step_alloc if not warming[0] else warmup_alloc, device=1)

    warming = [True]

    def progress(done: int, total: int) -> None:
        warming[0] = done < 2  # the 2 warm-up steps are over after the second call

    return _timed_loop(step, device, warmup=2, measured=3, progress=progress)


def test_allocator_peak_is_reset_after_warmup_and_for_every_trial():
    device, cuda = fake_device()
    cuda.alloc(100 * MIB, device=1)  # weights and optimizer state stay allocated throughout
    first = _trial(device, cuda, warmup_alloc=900 * MIB, step_alloc=50 * MIB)
    second = _trial(device, cuda, warmup_alloc=0, step_alloc=10 * MIB)
    # the warm-up's 900 MiB spike is not the trial's peak; the second trial does not inherit 150
    assert first.memory["peak_mem_mb"] == 150.0
    assert second.memory["peak_mem_mb"] == 110.0
    assert first.step_ms == [2.0, 2.0, 2.0] and first.phase_ms == {"forward": [2.0, 2.0, 2.0]}
    assert cuda.calls.count("reset_peak:1") == 6 and "reset_peak:0" not in cuda.calls  # before each measured step (capturing/passes/steady_steps.py), on cuda:1
    assert cuda.device_syncs == [1, 1]  # the warm-up/measure boundary of each trial, on cuda:1


@pytest.mark.parametrize("amp, device_type, dtype, expected", [
    (True, "cuda", "float16", True),
    (True, "cuda", "bfloat16", False),  # bfloat16 has float32's exponent range
    (False, "cuda", "float16", False),
    (True, "cpu", "float16", False),
])
def test_grad_scaler_only_for_float16_autocast_on_cuda(amp, device_type, dtype, expected):
    assert needs_grad_scaler(amp, DeviceInfo(torch.device("cpu"), device_type), dtype) is expected


def _linear_context(scaler, loss_scale: float = 1.0) -> tuple[TrainContext, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x = torch.randn(4, 3)
    loader = [(x, torch.zeros(4, 6))]
    ctx = TrainContext(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                       forward_loss=lambda m, x, targets: ((m(x) ** 2).mean() * loss_scale, {}), loader=loader,
                       device=torch.device("cpu"), autocast=contextlib.nullcontext, scaler=scaler)
    return ctx, x.numpy().astype(np.float64), model.weight.detach().numpy().astype(np.float64).copy()


def test_grad_scaler_step_equals_the_plain_sgd_step():
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    ctx, x, w = _linear_context(scaler)
    b = float(ctx.model.bias.detach())
    train_step(ctx, lambda name: contextlib.nullcontext())
    # d/dW mean((xW^T + b)^2) = 2/N * sum_i (x_i.W + b) x_i, by hand
    out = x @ w[0] + b
    grad_w = 2.0 / len(x) * (out[:, None] * x).sum(axis=0)
    np.testing.assert_allclose(ctx.model.weight.detach().numpy()[0], w[0] - 0.1 * grad_w, rtol=1e-5)
    assert scaler.get_scale() == 2.0 ** 10  # finite gradients: the scale is kept


def test_grad_scaler_skips_the_step_and_halves_the_scale_on_overflow():
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
    ctx, _, w = _linear_context(scaler, loss_scale=1e35)  # x 2**16 overflows float32
    train_step(ctx, lambda name: contextlib.nullcontext())
    np.testing.assert_array_equal(ctx.model.weight.detach().numpy()[0], w[0].astype(np.float32))
    assert scaler.get_scale() == 2.0 ** 15  # GradScaler's documented backoff factor 0.5


def _measure(batch: int) -> float:  # 500 MiB fixed + 300 MiB per image; 16 does not fit
    if batch > 8:
        raise FakeOutOfMemoryError("out of memory")
    return float((500 + 300 * batch) * MIB)


def test_batch_probe_stops_at_the_first_oom_and_never_chooses_past_it():
    probes = autobatch.probe_peaks(_measure, FakeOutOfMemoryError)
    assert [(p.batch, p.peak) for p in probes] == [(1, 800 * MIB), (2, 1100 * MIB), (4, 1700 * MIB),
                                                   (8, 2900 * MIB), (16, None)]
    budget = 16 * 1024 * MIB
    # the fit alone says (0.7 * 16384 - 500) / 300 = 36.6, past batch 16, which ran out of memory:
    # the choice is the last batch that fitted (Ultralytics' rule too)
    plan = autobatch.choose(probes, budget)
    assert plan.chosen == 8 and "batch 16 ran out of memory" in plan.why
    assert plan.fit == pytest.approx((500 * MIB, 300 * MIB))
    # without the out-of-memory probe, the fit's own answer, solved by hand
    plan = autobatch.choose(probes[:4], budget)
    assert plan.chosen == math.floor((0.7 * 16384 - 500) / 300) == 36
    assert autobatch.choose(probes[:1], budget).chosen == 1
    flat = [autobatch.Probe(1, 5.0 * MIB), autobatch.Probe(2, 5.0 * MIB)]
    assert autobatch.choose(flat, budget).chosen == 2  # flat: largest probe
    with pytest.raises(Exception, match="even a batch of 1"):
        autobatch.choose([autobatch.Probe(1, None)], budget)


def test_autobatch_is_bounded_and_never_below_one():
    tiny = [autobatch.Probe(1, 1.0 * MIB), autobatch.Probe(2, 1.001 * MIB)]  # 1 KiB per image
    plan = autobatch.choose(tiny, 80 * 1024 * MIB)
    assert plan.chosen == autobatch.MAX_BATCH == 1024 and "bounded" in plan.why
    huge = [autobatch.Probe(1, 900 * MIB), autobatch.Probe(2, 1000 * MIB)]
    plan = autobatch.choose(huge, 1000 * MIB)  # 70% of the budget is below batch 1's peak
    assert plan.chosen == 1 and "even batch 1" in plan.why


def test_largest_batch_plans_on_free_plus_reserved_memory_and_confirms_its_choice(monkeypatch):
    device, cuda = fake_device()
    cuda.total_memory = 8 * 1024 * MIB
    cuda.devices[1].other_processes = 2048 * MIB  # another process holds 2 GiB of cuda:1
    asked = []

    def peak(settings, dev, batch):
        asked.append(batch)
        assert dev.torch_device == torch.device("cuda", 1)
        return float((200 + 100 * batch) * MIB)

    monkeypatch.setattr(autobatch, "_peak_of_one_step", peak)
    plan = autobatch.largest_batch(settings=None, device=device)
    # budget = free (8192 - 2048 held by the other process) MiB: (0.7 * 6144 - 200) / 100 = 41.0
    assert plan.budget == 6144 * MIB
    assert plan.chosen == math.floor((0.7 * 6144 - 200) / 100) == 41
    assert asked == [1, 2, 4, 8, 16, 41]  # past every probe: one confirming step at the choice
    assert cuda.calls[-1] == "empty_cache"
    line = plan.line()
    assert "chose 41" in line and "16: 1800 MiB" in line and "6144 MiB" in line


def test_largest_batch_falls_back_when_the_confirming_step_runs_out_of_memory(monkeypatch):
    device, cuda = fake_device()

    def peak(settings, dev, batch):
        if batch > 16:
            raise FakeOutOfMemoryError("out of memory")
        return float((200 + 100 * batch) * MIB)

    monkeypatch.setattr(autobatch, "_peak_of_one_step", peak)
    plan = autobatch.largest_batch(settings=None, device=device)
    assert plan.chosen == 16 and "ran out of memory when confirmed" in plan.why
    assert plan.as_dict()["probes"][-1]["peak_reserved_mb"] is None
