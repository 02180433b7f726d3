"""MFU: the peak table looked up by exact name and compute capability against the datasheet
figures written here (dense; the with-sparsity figures halved), the FLOPs split by the dtype that
ran (counted by hand for a conv and a linear layer), and the effective peak of a mixed step."""

from __future__ import annotations

import pytest
import torch

from helpers.fake_cuda import FakeCuda
from yoloprof.defs.gpus import find_gpu, peak_tflops

# (device name as torch reports it, compute capability, SMs reported, dtype, datasheet TFLOP/s)
DATASHEET = [
    ("NVIDIA H100 80GB HBM3", (9, 0), 132, "bfloat16", 1979 / 2),  # H100 SXM: 1,979 with sparsity
    ("NVIDIA H100 80GB HBM3", (9, 0), 132, "tf32", 989 / 2),
    ("NVIDIA H100 80GB HBM3", (9, 0), 132, "float32", 67.0),
    ("NVIDIA H100 PCIe", (9, 0), 114, "float16", 1513 / 2),
    ("NVIDIA H100 NVL", (9, 0), 132, "float16", 1671 / 2),
    ("NVIDIA H200", (9, 0), 132, "float16", 1979 / 2),
    ("NVIDIA H200 NVL", (9, 0), 132, "tf32", 835 / 2),
    ("NVIDIA A100-SXM4-40GB", (8, 0), 108, "float16", 312.0),
    ("NVIDIA A100-SXM4-80GB", (8, 0), 108, "tf32", 156.0),
    ("NVIDIA A100-PCIE-40GB", (8, 0), 108, "float32", 19.5),
    ("NVIDIA A100 80GB PCIe", (8, 0), 108, "bfloat16", 312.0),
    ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", (8, 0), 14, "float16", 312.0 * 14 / 108),  # 1 of 7 slices
    ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", (8, 0), None, "float16", 312.0 * 14 / 108),  # guide's 14 SMs
    ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", (8, 0), 42, "bfloat16", 312.0 * 42 / 108),
    ("NVIDIA L4", (8, 9), 58, "float16", 242 / 2),
    ("NVIDIA L40S", (8, 9), 142, "float16", 362.05),  # not the L4's 121
    ("NVIDIA L40S", (8, 9), 142, "tf32", 183.0),
    ("NVIDIA L40", (8, 9), 142, "bfloat16", 181.05),
    ("NVIDIA A10", (8, 6), 72, "float16", 125.0),
    ("NVIDIA A10G", (8, 6), 80, "float16", None),  # no NVIDIA datasheet: n/a, never the A10's
    ("Tesla T4", (7, 5), 40, "float16", 65.0),
    ("Tesla T4", (7, 5), 40, "bfloat16", None),
    ("Tesla V100-SXM2-16GB", (7, 0), 80, "float16", 125.0),
    ("Tesla V100-PCIE-32GB", (7, 0), 80, "float16", 112.0),
    ("Tesla V100-SXM2-32GB", (7, 0), 80, "float32", 15.7),
    ("NVIDIA GeForce RTX 4090", (8, 9), 128, "float16", 165.2),
    ("NVIDIA GeForce RTX 3090", (8, 6), 82, "bfloat16", 71.0),
    ("NVIDIA RTX A6000", (8, 6), 84, "float16", 154.8),
    ("NVIDIA RTX A1000", (8, 6), 18, "float16", None),  # not the A100's 312
    ("NVIDIA T400", (7, 5), 6, "float16", None),  # not the T4's 65
    ("NVIDIA T400 4GB", (7, 5), 6, "float32", 1.09),
    ("NVIDIA A100-SXM4-40GB", (9, 0), 132, "float16", None),  # capability contradicts the name
    ("NVIDIA B200", (10, 0), 148, "float16", None),  # not in the table
]


@pytest.mark.parametrize("name, cap, sms, dtype, expected", DATASHEET)
def test_peak_lookup_gives_the_datasheet_figure(name, cap, sms, dtype, expected):
    got = peak_tflops(name, dtype, cap, sms)
    assert got == (None if expected is None else pytest.approx(expected))


def test_conv_and_linear_flops_by_the_dtype_that_ran():
    from yoloprof.capturing.device.flop_count import count_flop_mix

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
    x = torch.randn(2, 3, 8, 8)
    conv = 2 * 2 * 8 * 6 * 6 * 3 * 3 * 3  # 2 x batch x out channels x output pixels x (in x k x k)
    linear = 2 * 2 * 288 * 4  # 2 x batch x in x out
    assert count_flop_mix(lambda: net(x)).by == {("conv", "float32"): conv, ("matmul", "float32"): linear}

    def amp():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return net(x)

    assert count_flop_mix(amp).by == {("conv", "bfloat16"): conv, ("matmul", "bfloat16"): linear}


def test_effective_peak_of_a_float32_step_counts_tf32_convolutions_and_fp32_matmuls():
    from yoloprof.capturing.device.flop_count import FlopMix, effective_peak

    a100 = find_gpu("NVIDIA A100-SXM4-40GB", (8, 0))
    mix = FlopMix(4e12, {("conv", "float32"): 3e12, ("matmul", "float32"): 1e12})
    peak, parts, why = effective_peak(mix, a100, {"cudnn_allow_tf32": True, "matmul_allow_tf32": False})
    assert why is None and [p["runs_as"] for p in parts] == ["tf32", "float32"]
    assert peak == pytest.approx(4e12 / (3e12 / 156e12 + 1e12 / 19.5e12) / 1e12)  # by hand
    peak, _, _ = effective_peak(mix, a100, {"cudnn_allow_tf32": False, "matmul_allow_tf32": False})
    assert peak == pytest.approx(19.5)
    v100 = find_gpu("Tesla V100-SXM2-16GB", (7, 0))  # no TF32 before Ampere: the flag does nothing
    assert effective_peak(mix, v100, {"cudnn_allow_tf32": True})[0] == pytest.approx(15.7)
    t4 = find_gpu("Tesla T4", (7, 5))
    peak, _, why = effective_peak(FlopMix(1.0, {("conv", "bfloat16"): 1.0}), t4, {})
    assert peak is None and "bfloat16" in why


def test_user_loop_mfu_uses_the_dtype_its_flops_ran_in(monkeypatch, tmp_path):
    import yoloprof

    fake = FakeCuda().install(monkeypatch)
    lin = torch.nn.Linear(64, 64)
    x = torch.randn(16, 64)
    with yoloprof.profile(tmp_path, device="cuda:1", warmup=1, steps=2, trace_steps=0, flops=True) as prof:
        while not prof.done:
            with prof.phase("forward"), torch.autocast("cpu", dtype=torch.bfloat16):
                lin(x)
            fake.run(1.0, device=1)
            prof.step()
    p = prof.result
    flops = 2 * 16 * 64 * 64
    assert p["config"]["mfu_basis"]["parts"] == [{"kind": "matmul", "dtype": "bfloat16", "runs_as": "bfloat16",
                                                  "gflops": flops / 1e9, "peak_tflops": 312.0}]
    # the step's achieved rate over the A100's bfloat16 peak (not the float32 one, 16x lower)
    (step_ms,) = p["metrics"]["step_ms"]["samples"]
    assert p["metrics"]["mfu_pct"]["value"] == pytest.approx(100 * flops / (step_ms / 1e3) / 1e12 / 312.0)
