"""The one skip helper for GPU-only tests: CI and the development machine have no GPU."""

from __future__ import annotations

import pytest


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


requires_cuda = pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA device (none on this machine)")
