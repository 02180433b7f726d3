"""The runtime settings that change a GPU step's speed without changing its code, recorded in
every profile's `env` and every sweep row, and compared by `compare` and `analyze` (one home: the
capture writes these keys, profiles/rows.py makes them columns, metrics/sides.py compares them).

- cudnn_benchmark: `torch.backends.cudnn.benchmark` (autotuned convolution algorithms);
- cudnn_deterministic: `torch.backends.cudnn.deterministic` (deterministic algorithms only);
- cudnn_allow_tf32 / matmul_allow_tf32: `torch.backends.cudnn.allow_tf32` (default True) and
  `torch.backends.cuda.matmul.allow_tf32` (default False): float32 math in TF32 on Ampere+;
- float32_matmul_precision: `torch.get_float32_matmul_precision()` ("highest", "high", "medium");
- cuda_launch_blocking: the CUDA_LAUNCH_BLOCKING variable ("1" makes every launch synchronous);
- pytorch_cuda_alloc_conf: PYTORCH_CUDA_ALLOC_CONF (or torch 2.9's PYTORCH_ALLOC_CONF): the caching
  allocator's settings (expandable segments, split sizes), which change memory and speed;
- driver_version: the NVIDIA driver (Linux: /proc/driver/nvidia/version; else the CUDA driver
  API version torch reports); None on a CPU capture.
"""

from __future__ import annotations

# (env key, label in comparisons, row column type: "bool" or "str")
RUNTIME_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("cudnn_benchmark", "cudnn.benchmark", "bool"),
    ("cudnn_deterministic", "cudnn.deterministic", "bool"),
    ("cudnn_allow_tf32", "cudnn.allow_tf32", "bool"),
    ("matmul_allow_tf32", "cuda.matmul.allow_tf32", "bool"),
    ("float32_matmul_precision", "float32 matmul precision", "str"),
    ("cuda_launch_blocking", "CUDA_LAUNCH_BLOCKING", "str"),
    ("pytorch_cuda_alloc_conf", "PYTORCH_CUDA_ALLOC_CONF", "str"),
    ("driver_version", "driver version", "str"),
)
RUNTIME_KEYS = tuple(key for key, _, _ in RUNTIME_FIELDS)
