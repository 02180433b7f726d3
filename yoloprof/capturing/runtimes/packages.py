"""The optional packages the runtimes need, with the extra of yoloprof that installs each."""

from __future__ import annotations

import importlib
from typing import Any

from yoloprof.errors import RuntimeNotApplicable

EXTRAS = {"onnxruntime": "onnx", "openvino": "openvino"}  # package -> yoloprof extra (pyproject.toml)


def require(package: str) -> Any:
    """The package imported, or RuntimeNotApplicable naming the extra that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        raise RuntimeNotApplicable(f"runtime {package} needs the package {package!r}, which is not installed: "
                                   f"pip install 'yoloprof[{EXTRAS[package]}]'") from None
