"""The optional packages the runtimes need, with the extra of yoloprof that installs them."""

from __future__ import annotations

import importlib
from typing import Any

from yoloprof.errors import RuntimeNotApplicable

# runtime level -> the yoloprof extra (pyproject.toml) with its packages: the runtime's own and
# onnx, which torch.onnx's exporter needs
EXTRAS = {"onnxruntime": "onnx", "openvino": "openvino"}


def require(package: str, level: str) -> Any:
    """The package imported, or RuntimeNotApplicable naming the extra of `level` that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        raise RuntimeNotApplicable(f"runtime {level} needs the package {package!r}, which is not installed: "
                                   f"pip install 'yoloprof[{EXTRAS[level]}]'") from None
