"""`device=auto`, the default (docs/devices.md): the first GPU where there is one, else the CPU,
decided once; an explicit device stays strict and its hint is spelled as the context types it.
The GPU branch runs here through a fake `gpu_count` (the `gpus` fixture, tests/helpers/
fixtures_capture.py; and torch.cuda's counts), as tests/gpu.py's machines have no GPU."""

from __future__ import annotations

import pytest

from yoloprof.config import device_spec
from yoloprof.config.device_spec import AUTO, DeviceSpec, check_device, is_auto, parse_device, spelled
from yoloprof.errors import UsageError


@pytest.mark.parametrize("count, expected", [(0, DeviceSpec("cpu")), (1, DeviceSpec("cuda", 0)),
                                             (4, DeviceSpec("cuda", 0))])
def test_auto_is_the_first_gpu_else_the_cpu(gpus, count, expected):
    gpus(count)
    for spelling in ("auto", "AUTO", " Auto "):
        assert parse_device(spelling) == expected
    assert str(parse_device("auto")) == ("cpu" if count == 0 else "cuda:0")


def test_auto_is_decided_once_per_process(gpus, monkeypatch):
    gpus(1)
    calls = []
    monkeypatch.setattr(device_spec, "gpu_count", lambda: calls.append(1) or 1)
    device_spec.auto_device.cache_clear()
    assert [parse_device("auto") for _ in range(3)] == [DeviceSpec("cuda", 0)] * 3 and calls == [1]


def test_the_grammar_check_asks_no_torch(monkeypatch):
    """argparse and `validate()` check the spelling only: no GPU probe (no torch import there)."""
    monkeypatch.setattr(device_spec, "gpu_count", lambda: pytest.fail("probed"))
    device_spec.auto_device.cache_clear()
    check_device("auto")
    assert is_auto(" AUTO ") and not is_auto("cpu") and not is_auto(0)
    with pytest.raises(UsageError, match="invalid device 'autoo'; valid: auto, cpu"):
        check_device("autoo")
    device_spec.auto_device.cache_clear()


def test_the_real_probe_matches_torch():
    import torch

    device_spec.auto_device.cache_clear()
    expected = "cuda:0" if torch.cuda.is_available() and torch.cuda.device_count() else "cpu"
    assert str(parse_device("auto")) == expected


def test_hints_are_spelled_as_the_context_types_them():
    assert spelled("--device", "cpu") == "--device cpu" and spelled("device", "cpu") == "device=cpu"


@pytest.mark.parametrize("flag, hint", [("--device", "use --device cpu"), ("device", "use device=cpu")])
def test_an_explicit_gpu_without_one_is_refused_in_the_context_spelling(monkeypatch, flag, hint):
    import torch

    from yoloprof.capturing.device.torch_device import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError, match="asks for CUDA device 0, but this machine has no CUDA device; " + hint):
        resolve_device("0", flag=flag)


def test_auto_resolves_to_a_torch_device_either_way(gpus, monkeypatch):
    import torch

    from yoloprof.capturing.device.torch_device import resolve_device

    gpus(0)
    assert resolve_device("auto").type == "cpu"
    gpus(2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    info = resolve_device("auto")
    assert info.is_cuda and str(info.torch_device) == "cuda:0"


def test_the_default_is_auto_on_the_command_line_and_in_a_sweep():
    from yoloprof.cli import build_parser
    from yoloprof.config.cli_args import settings_from_args
    from yoloprof.config.compose import compose_job
    from yoloprof.config.translate import settings_from_cfg

    for command, mode in (("run", "train"), ("infer", "infer")):
        assert settings_from_args(build_parser().parse_args([command]), mode).device == AUTO
    assert settings_from_cfg(compose_job([])).device == AUTO


@pytest.mark.parametrize("count, device", [(0, "cpu"), (1, "cuda:0")])
def test_resolved_settings_and_rows_name_the_device_that_ran(gpus, count, device):
    from yoloprof.capturing.builtin.store_record import settings_columns
    from yoloprof.config.capture_settings import CaptureSettings

    gpus(count)
    s = CaptureSettings.for_mode("infer", threads=1)
    assert s.resolved().device == device and settings_columns(s)["device"] == device
    assert s.resolved().precision == ("float16" if count else "float32")  # precision=auto follows it


def test_a_cluster_job_must_name_its_device():
    """On a login node `auto` would mean its CPU while the job runs on a GPU node: refused."""
    from yoloprof.config.resources import gpus_per_job

    with pytest.raises(UsageError, match="device=auto: a cluster job's device must be named.*device=0"):
        gpus_per_job("auto")


def test_sweep_job_devices_resolve_auto_and_refuse_it_on_a_cluster(gpus):
    from omegaconf import OmegaConf

    from yoloprof.sweep.plan import auto_note, job_devices

    cfg = OmegaConf.create({"device": "auto"})
    jobs = [["batch=1"], ["batch=2", "device=cpu"]]
    gpus(1)
    assert job_devices(cfg, jobs) == ["cuda:0", "cpu"]
    assert auto_note(cfg, jobs) == "device=auto runs on cuda:0 (the first GPU; name another with device=...)"
    gpus(0)
    assert job_devices(cfg, jobs) == ["cpu", "cpu"] and "no GPU on this machine" in str(auto_note(cfg, jobs))
    assert auto_note(cfg, [["device=cpu"]]) is None
    with pytest.raises(UsageError, match="device=auto: a cluster job"):
        job_devices(cfg, jobs, cluster=True)
    assert job_devices(cfg, [["device=0"]], cluster=True) == ["cuda:0"]


def test_a_recorded_auto_names_no_device_kind():
    from yoloprof.metrics.verdict import _device_kind

    assert _device_kind("auto") is None and _device_kind("cuda:0") == "gpu" and _device_kind("cpu") == "cpu"


def test_the_user_loop_auto_is_the_models_device(tmp_path):
    """`yoloprof.profile(device="auto")` (its default) times where the user's model is: it never moves it."""
    import torch

    from yoloprof.capturing.userloop.loop_support import device_of

    model = torch.nn.Linear(2, 2)
    assert device_of(model, None).type == "cpu"
    from yoloprof.capturing.userloop.loop import Profile

    prof = Profile(tmp_path, model=model, steps=1, warmup=0, trace_steps=0)
    assert prof._device_arg is None and not prof._find_device


@pytest.mark.parametrize("config, shown", [({"device": "cpu", "device_asked": "auto"}, "device=cpu (auto)"),
                                           ({"device": "cuda:1"}, "device=cuda:1")])
def test_the_summary_header_shows_the_device_that_ran_and_that_auto_chose_it(config, shown):
    import io

    from yoloprof.readers.summary import _workload
    from yoloprof.render._out import Out
    from yoloprof.render.terminal import render_summary

    buf = io.StringIO()
    render_summary({"kind": "infer", "workload": _workload({"config": {"mode": "infer", **config}})}, "p.json",
                   Out(buf, rich=False))
    header = buf.getvalue().splitlines()[0]
    assert header.endswith(f"(mode=infer, {shown})"), header
