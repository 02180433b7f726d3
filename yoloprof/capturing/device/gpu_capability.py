"""What the chosen GPU can do for the precision asked, said in one line each before measuring:
bfloat16 needs compute capability 8.0 (Ampere) for native math (V100 and T4 emulate it, slowly, or
fail inside autocast), float16 Tensor Cores need 7.0 (Volta), TF32 needs 8.0; a float32 capture on
an Ampere or newer part runs its convolutions in TF32 by torch's default
(`torch.backends.cudnn.allow_tf32=True`), which the profile records and MFU counts.
"""

from __future__ import annotations

from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo

BF16_NATIVE = (8, 0)
TENSOR_CORES = (7, 0)
TF32 = (8, 0)


def device_caps(device: DeviceInfo) -> dict[str, Any]:
    """{name, capability (major, minor), sm_count} of a CUDA device; {} on CPU."""
    if not device.is_cuda:
        return {}
    props = device.cuda.get_device_properties(device.torch_device)
    return {"name": str(props.name), "capability": (int(props.major), int(props.minor)),
            "sm_count": getattr(props, "multi_processor_count", None)}


def _cc(cap: tuple[int, int]) -> str:
    return f"{cap[0]}.{cap[1]}"


def capability_warnings(precision: str, device: DeviceInfo, tf32: dict[str, bool]) -> list[str]:
    """One line per thing the device cannot do natively at `precision` (nothing on CPU)."""
    caps = device_caps(device)
    if not caps:
        return []
    name, cap = caps["name"], caps["capability"]
    where = f"{name} (compute capability {_cc(cap)})"
    if precision == "bfloat16" and cap < BF16_NATIVE:
        return [f"--precision bfloat16 on {where}: no native bfloat16 (needs {_cc(BF16_NATIVE)}+); "
                "autocast runs it emulated and slow, or fails: use --precision float16"]
    if precision == "float16" and cap < TENSOR_CORES:
        return [f"--precision float16 on {where}: no Tensor Cores (need {_cc(TENSOR_CORES)}+); "
                "float16 runs on the CUDA cores"]
    if precision == "float32" and cap >= TF32 and (tf32.get("cudnn_allow_tf32") or tf32.get("matmul_allow_tf32")):
        conv = "TF32" if tf32.get("cudnn_allow_tf32") else "float32"
        mm = "TF32" if tf32.get("matmul_allow_tf32") else "float32"
        return [f"float32 on {where}: convolutions run {conv} (torch.backends.cudnn.allow_tf32="
                f"{bool(tf32.get('cudnn_allow_tf32'))}) and matmuls {mm} (torch.backends.cuda.matmul.allow_tf32="
                f"{bool(tf32.get('matmul_allow_tf32'))}); MFU counts each at that peak"]
    return []


def mix_warnings(dtypes: set[str], device: DeviceInfo) -> list[str]:
    """The user loop's check, from the dtypes its FLOPs ran in (it has no --precision)."""
    caps = device_caps(device)
    if caps and "bfloat16" in dtypes and caps["capability"] < BF16_NATIVE:
        return [f"bfloat16 ran on {caps['name']} (compute capability {_cc(caps['capability'])}): no native "
                f"bfloat16 (needs {_cc(BF16_NATIVE)}+); it ran emulated, step times are not representative"]
    return []
