"""The environment a capture ran in: enough to tell later whether two profiles are comparable."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.defs.metrics import BYTES_PER_MIB


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(cwd: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _git_sha(cwd: str) -> str | None:
    """The user's working tree revision (not yoloprof's): which code was profiled."""
    out = _git(cwd, "rev-parse", "--short=12", "HEAD")
    return out.strip() or None if out is not None else None


def git_state(cwd: str) -> tuple[str | None, bool | None]:
    """(full commit of the user's working tree, whether tracked files differ from it); (None, None)
    outside a git work tree. Untracked files do not make it dirty: only what the commit names."""
    sha = _git(cwd, "rev-parse", "HEAD")
    if not sha or not sha.strip():
        return None, None
    status = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    return sha.strip(), None if status is None else bool(status.strip())


def torch_version() -> str | None:
    """torch's version; without importing torch where nothing loaded it yet (about a second of a
    sweep job that only records the string beside a fake or failed capture): then the line of
    torch/version.py that `torch.__version__` comes from (`2.14.1+cu130`: the registry's default
    build carries its CUDA tag there but not in its distribution metadata, `2.14.1`), else the
    distribution's version. None when torch is absent."""
    loaded = sys.modules.get("torch")
    if loaded is not None and hasattr(loaded, "__version__"):
        return str(loaded.__version__)
    written = _version_file_string()
    if written is not None:
        return written
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _version_file_string() -> str | None:
    """`__version__ = '...'` of torch/version.py, read as text (no import of torch)."""
    import ast
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            tree = ast.parse((Path(folder) / "version.py").read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and target.id == "__version__" and isinstance(value, ast.Constant) \
                    and isinstance(value.value, str):
                return value.value
    return None


def launcher_name() -> str:
    """Set by the sweep for its jobs; a plain command-line capture is 'cli'."""
    return os.environ.get("YOLOPROF_LAUNCHER", "cli")


def driver_version(device: DeviceInfo) -> str | None:
    """The NVIDIA driver of a CUDA capture (see defs/envfields.py); None on CPU or where unknown."""
    if not device.is_cuda:
        return None
    try:
        with open("/proc/driver/nvidia/version", encoding="ascii", errors="replace") as fh:
            match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d[\w.]*)", fh.read())
            if match:
                return match.group(1)
    except OSError:
        pass
    try:
        import torch

        # e.g. 12040; a binding of CUDA builds that torch's stubs leave out (CPU builds: AttributeError)
        api = int(torch._C._cuda_getDriverVersion())  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None
    return f"CUDA driver API {api // 1000}.{api % 1000 // 10}" if api > 0 else None


def runtime_env(device: DeviceInfo, environ: Any = None) -> dict[str, Any]:
    """The runtime settings of defs/envfields.py as they are now (CPU captures too: the flags are
    torch's process-wide state)."""
    import torch

    from yoloprof.capturing.device.torch_compat import tf32_flags

    environ = os.environ if environ is None else environ
    return {"cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic), **tf32_flags(),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_launch_blocking": environ.get("CUDA_LAUNCH_BLOCKING"),
            "pytorch_cuda_alloc_conf": environ.get("PYTORCH_CUDA_ALLOC_CONF", environ.get("PYTORCH_ALLOC_CONF")),
            "driver_version": driver_version(device)}


def runtime_warnings(env: dict[str, Any]) -> list[str]:
    """A CUDA capture under CUDA_LAUNCH_BLOCKING measures a synchronous run: say so."""
    blocking = str(env.get("cuda_launch_blocking") or "").strip()
    if env.get("device_type") == "cuda" and blocking not in ("", "0"):
        return [f"CUDA_LAUNCH_BLOCKING={blocking}: every kernel launch waits for the kernel, so step "
                "times measure a synchronous run, not the asynchronous one training sees"]
    return []


def collect_env(device: DeviceInfo) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch_version(),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device_type": device.type,
        "device_name": "cpu",
        "device_count": 0,
        "device_memory_mb": None,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "launcher": launcher_name(),
        "git_sha": _git_sha(os.getcwd()),
        "argv": sys.argv[1:],
    }
    env.update(runtime_env(device))
    if device.is_cuda:
        cuda = device.cuda
        props = cuda.get_device_properties(device.torch_device)
        env.update(device_name=props.name, device_count=cuda.device_count(), device_index=device.index,
                   device_memory_mb=round(props.total_memory / BYTES_PER_MIB),
                   compute_capability=f"{props.major}.{props.minor}",
                   sm_count=getattr(props, "multi_processor_count", None))
    else:
        env["device_name"] = env["cpu_model"]
    return env
