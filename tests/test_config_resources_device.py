"""What a SLURM job asks for follows the one device parser: `device=CPU` (any case, spaces) asks
for no GPU; every CUDA spelling asks for one; an invalid device is refused naming the key."""

from __future__ import annotations

import pytest

from yoloprof.config.resources import gpus_per_job
from yoloprof.errors import UsageError


@pytest.mark.parametrize("device", ["cpu", "CPU", " Cpu "])
def test_cpu_in_any_spelling_asks_for_no_gpu(device):
    assert gpus_per_job(device) is None


@pytest.mark.parametrize("device", ["cuda", "CUDA:1", "0", 1, "cuda:0"])
def test_cuda_asks_for_one_gpu(device):
    assert gpus_per_job(device) == 1


def test_invalid_device_is_refused_naming_the_key():
    with pytest.raises(UsageError, match="device 'gpu0'"):
        gpus_per_job("gpu0")
