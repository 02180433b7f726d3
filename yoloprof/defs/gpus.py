"""Peak dense throughput of GPUs, for MFU: the one table, looked up by exact name pattern and
compute capability (never by substring: "NVIDIA L40S" is not an L4, "RTX A1000" not an A100,
"T400" not a T4, and an A100 MIG slice is not the whole A100).

Figures are TFLOP/s of *dense* math (no 2:4 sparsity) per compute dtype:
- `float16`, `bfloat16`: Tensor Core math with FP32 accumulate (what autocast's matmuls and
  convolutions do; GeForce cards run FP32 accumulate at half their FP16-accumulate rate);
- `tf32`: Tensor Core TF32 (float32 convolutions when `torch.backends.cudnn.allow_tf32`, the
  default; float32 matmuls when `torch.backends.cuda.matmul.allow_tf32`);
- `float32`: plain FP32 on the CUDA cores (no TF32).
A dtype the part has no figure for is absent: MFU is then n/a, never a guess.

Sources (dense figures; where a datasheet gives only the with-sparsity figure, marked *, it is
halved, as the datasheets' own footnotes say):
- NVIDIA H100 Tensor Core GPU datasheet (SXM, PCIe, NVL): FP32 67/51/60; TF32 989*/756*/835*;
  BF16 and FP16 1,979*/1,513*/1,671*.
- NVIDIA H200 Tensor Core GPU datasheet (SXM, NVL): FP32 67/60; TF32 989*/835*; BF16/FP16 1,979*/1,671*.
- NVIDIA A100 Tensor Core GPU datasheet (SXM4 and PCIe, 40 and 80 GB alike): FP32 19.5; TF32 156;
  BF16/FP16 312. MIG slices: the NVIDIA Multi-Instance GPU User Guide (an A100 compute slice is
  14 of the 108 SMs).
- NVIDIA L4 datasheet: FP32 30.3; TF32 120*; BF16/FP16 242*.
- NVIDIA L40S datasheet: FP32 91.6; TF32 183; BF16/FP16 362.05. NVIDIA L40 datasheet: FP32 90.5;
  TF32 90.5; BF16/FP16 181.05.
- NVIDIA A10 datasheet: FP32 31.2; TF32 62.5; BF16/FP16 125. (A10G, AWS's part: no NVIDIA
  datasheet; listed without figures so it never takes the A10's.)
- NVIDIA T4 datasheet: FP32 8.1; mixed precision FP16/FP32 65 (no TF32, no BF16).
- NVIDIA V100 datasheet: SXM2 FP32 15.7, Tensor 125; PCIe FP32 14, Tensor 112; V100S PCIe
  FP32 16.4, Tensor 130.
- NVIDIA Ada GPU architecture whitepaper, RTX 4090: FP32 82.6; TF32 82.6; FP16/BF16 with FP32
  accumulate 165.2. NVIDIA Ampere GA102 whitepaper: RTX 3090 FP32 35.6, TF32 35.6, FP16/BF16 (FP32
  accumulate) 71; RTX A6000 FP32 38.7, TF32 77.4, FP16/BF16 154.8.
- NVIDIA T400 datasheet: FP32 1.09 (Turing without Tensor Cores). RTX A1000: listed without figures.
- AMD Instinct MI300X / MI250X / MI250 datasheets: FP16/BF16 1,307.4 / 383 / 362.1; FP32 (matrix
  for the MI300X) 163.4 / 47.9 / 45.3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

DTYPES = ("float16", "bfloat16", "tf32", "float32")


@dataclass(frozen=True)
class GpuPeak:
    key: str  # the table's name for the part
    pattern: str  # full match, case-insensitive, on the name without vendor/brand words
    capability: tuple[int, int] | None  # CUDA compute capability (None: not a CUDA part)
    sms: int | None  # SMs of the whole part (MIG slices scale by their own SM count)
    tflops: Mapping[str, float]
    mig_sms_per_slice: int | None = None  # SMs of one MIG compute slice, where the guide says


def _fig(fp32: float, tf32: float | None, half: float | None, bf16: bool = True) -> dict[str, float]:
    out = {"float32": fp32}
    if tf32 is not None:
        out["tf32"] = tf32
    if half is not None:
        out["float16"] = half
        if bf16:
            out["bfloat16"] = half
    return out


PEAKS: tuple[GpuPeak, ...] = (
    GpuPeak("H100 SXM", r"H100(?: SXM5?)?(?: \d+GB)?(?: HBM3)?", (9, 0), 132, _fig(67.0, 989 / 2, 1979 / 2)),
    GpuPeak("H100 PCIe", r"H100 PCIe(?: \d+GB)?", (9, 0), 114, _fig(51.0, 756 / 2, 1513 / 2)),
    GpuPeak("H100 NVL", r"H100 NVL(?: \d+GB)?", (9, 0), 132, _fig(60.0, 835 / 2, 1671 / 2)),
    GpuPeak("H200 SXM", r"H200(?: SXM)?(?: \d+GB)?(?: HBM3e)?", (9, 0), 132, _fig(67.0, 989 / 2, 1979 / 2)),
    GpuPeak("H200 NVL", r"H200 NVL(?: \d+GB)?", (9, 0), 132, _fig(60.0, 835 / 2, 1671 / 2)),
    GpuPeak("A100 SXM4", r"A100[- ]SXM4[- ](?:40|80)GB", (8, 0), 108, _fig(19.5, 156.0, 312.0), 14),
    GpuPeak("A100 PCIe", r"A100[- ]PCIE[- ](?:40|80)GB|A100 (?:40|80)GB PCIe|A100 PCIe", (8, 0), 108,
            _fig(19.5, 156.0, 312.0), 14),
    GpuPeak("L4", r"L4", (8, 9), 58, _fig(30.3, 120 / 2, 242 / 2)),
    GpuPeak("L40S", r"L40S", (8, 9), 142, _fig(91.6, 183.0, 362.05)),
    GpuPeak("L40", r"L40", (8, 9), 142, _fig(90.5, 90.5, 181.05)),
    GpuPeak("A10", r"A10", (8, 6), 72, _fig(31.2, 62.5, 125.0)),
    GpuPeak("A10G", r"A10G", (8, 6), 80, {}),
    GpuPeak("T4", r"T4", (7, 5), 40, _fig(8.1, None, 65.0, bf16=False)),
    GpuPeak("V100 SXM2", r"V100-SXM2-(?:16|32)GB(?:-LS)?", (7, 0), 80, _fig(15.7, None, 125.0, bf16=False)),
    GpuPeak("V100 PCIe", r"V100-PCIE-(?:16|32)GB", (7, 0), 80, _fig(14.0, None, 112.0, bf16=False)),
    GpuPeak("V100S PCIe", r"V100S-PCIE-32GB", (7, 0), 80, _fig(16.4, None, 130.0, bf16=False)),
    GpuPeak("RTX 4090", r"RTX 4090", (8, 9), 128, _fig(82.6, 82.6, 165.2)),
    GpuPeak("RTX 3090", r"RTX 3090", (8, 6), 82, _fig(35.6, 35.6, 71.0)),
    GpuPeak("RTX A6000", r"RTX A6000", (8, 6), 84, _fig(38.7, 77.4, 154.8)),
    GpuPeak("RTX A1000", r"RTX A1000(?: \d+GB)?(?: Laptop GPU)?", (8, 6), None, {}),
    GpuPeak("T400", r"T400(?: \d+GB)?", (7, 5), 6, {"float32": 1.09}),
    GpuPeak("MI300X", r"MI300X", None, None, _fig(163.4, None, 1307.4)),
    GpuPeak("MI250X", r"MI250X", None, None, _fig(47.9, None, 383.0)),
    GpuPeak("MI250", r"MI250", None, None, _fig(45.3, None, 362.1)),
)

_BRAND = re.compile(r"^(?:(?:NVIDIA|AMD)\s+)?(?:(?:Tesla|GeForce|Quadro|Instinct)\s+)?", re.I)
_MIG = re.compile(r"(?P<base>.+?)\s+MIG\s+(?P<slices>\d+)g\.(?P<mem>\d+)gb", re.I)


@dataclass(frozen=True)
class Match:
    """A part found in the table; `scale` < 1 for a MIG slice (its share of the SMs)."""

    entry: GpuPeak
    scale: float = 1.0
    mig: str | None = None  # "1g.5gb" for a MIG slice

    def tflops(self, dtype: str) -> float | None:
        figure = self.entry.tflops.get(dtype)
        return None if figure is None else figure * self.scale


def find_gpu(name: str, capability: tuple[int, int] | None = None, sm_count: int | None = None
             ) -> Match | None:
    """The table entry of a device name (as `torch.cuda.get_device_name` gives it); None when the
    name matches no entry exactly or the compute capability contradicts the entry's."""
    text = _BRAND.sub("", " ".join(str(name or "").split()))
    mig = _MIG.fullmatch(text)
    base = mig.group("base") if mig else text
    for entry in PEAKS:
        if not re.fullmatch(entry.pattern, base, re.I):
            continue
        if capability is not None and entry.capability is not None and tuple(capability) != entry.capability:
            return None
        if not mig:
            return Match(entry)
        return _mig_match(entry, int(mig.group("slices")), f"{mig.group('slices')}g.{mig.group('mem')}gb",
                          sm_count)
    return None


def _mig_match(entry: GpuPeak, slices: int, label: str, sm_count: int | None) -> Match | None:
    """A MIG slice's share of the part: its own SM count (what CUDA reports for the instance) over
    the part's, else the MIG guide's SMs per compute slice; unknown -> None."""
    if entry.sms is None:
        return None
    if sm_count is not None and 0 < sm_count < entry.sms:
        return Match(entry, sm_count / entry.sms, label)
    if entry.mig_sms_per_slice is not None:
        return Match(entry, slices * entry.mig_sms_per_slice / entry.sms, label)
    return None


def peak_tflops(name: str, dtype: str, capability: tuple[int, int] | None = None,
                sm_count: int | None = None) -> float | None:
    """Dense peak TFLOP/s of `name` for `dtype` (one of DTYPES); None when unknown."""
    match = find_gpu(name, capability, sm_count)
    return match.tflops(dtype) if match is not None else None
