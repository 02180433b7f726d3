"""Capture refuses bad flags before any work: classes, image size against memory, output folder;
inference over a data.yaml reads its val images."""

from __future__ import annotations

import io
import os
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from yoloprof.capturing.device.torch_device import resolve_device
from yoloprof.capturing.builtin.preflight import INPUT_BYTES_PER_PIXEL, check_output_dir, estimate_bytes
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.cli import main
from yoloprof.errors import UsageError


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("yoloprof: error: "), err
    return lines[0]


def test_num_classes_zero_is_a_usage_error(tmp_path):
    code, _, err = cli("run", "--device", "cpu", "--num-classes", "0", "--project", str(tmp_path))
    assert code == 2 and "--num-classes must be >= 1" in one_error_line(err)
    assert not any(tmp_path.rglob("*.json"))


def test_huge_imgsz_is_refused_with_the_estimate_in_seconds(tmp_path):
    t0 = time.perf_counter()
    code, _, err = cli("infer", "--device", "cpu", "--imgsz", "100000", "--project", str(tmp_path))
    line = one_error_line(err)
    assert code == 2 and "--imgsz 100000" in line and "GiB" in line, line
    assert time.perf_counter() - t0 < 30
    # Hand-worked lower bound: the float32 input alone is 3 x 1e10 x 4 bytes = 111.8 GiB.
    need = float(line.split("needs at least ")[1].split(" GiB")[0].replace(",", ""))
    assert need >= 3 * 4 * 100000**2 / 2**30


def test_user_model_estimate_is_the_input_alone():
    s = CaptureSettings.for_mode("infer", model="pkg.Net", batch=2, imgsz=256)
    assert estimate_bytes(s, amp=False) == 2 * 256 * 256 * INPUT_BYTES_PER_PIXEL == 2 * 256 * 256 * (12 + 3)


@pytest.mark.parametrize("size", ["n", "s"])
def test_train_estimate_errs_low_against_autograd_saved_tensors(size):
    """Independent reference: the bytes autograd really keeps for the backward of one step
    (saved_tensors_hooks on a real CPU forward). The estimate must not exceed what is needed, and
    must still count most of it (it is a useful bound, not a token one)."""
    import torch

    from yoloprof.workloads.yolo import build_yolo

    imgsz, batch = 128, 1
    model = build_yolo(size, 80, 0).train()
    seen: dict[int, int] = {}

    def pack(t):
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.rand(batch, 3, imgsz, imgsz))
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = sum(n for ptr, n in seen.items() if ptr not in params)
    s = CaptureSettings.for_mode("train", batch=batch, imgsz=imgsz, size=size)
    activations = estimate_bytes(s, amp=False) - batch * imgsz**2 * INPUT_BYTES_PER_PIXEL
    assert 0.3 * saved < activations <= saved * 1.05, (activations, saved)


def test_output_folder_that_is_a_file_fails_first(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    t0 = time.perf_counter()
    code, _, err = cli("run", "--device", "cpu", "--imgsz", "64", "--project", str(blocker))
    line = one_error_line(err)
    assert code == 2 and str(blocker) in line and "not a folder" in line
    assert time.perf_counter() - t0 < 30
    with pytest.raises(UsageError, match="is a file"):
        check_output_dir(blocker / "deeper" / "train")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_folder_fails_first(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code, _, err = cli("infer", "--device", "cpu", "--imgsz", "64", "--project", str(ro))
        line = one_error_line(err)
        assert code == 2 and str(ro) in line and "not writable" in line
    finally:
        ro.chmod(0o755)


def test_output_folder_probe_leaves_nothing(tmp_path):
    out = check_output_dir(tmp_path / "a" / "b")
    assert out.is_dir() and list(out.iterdir()) == []


def _dataset(root: Path, splits: dict[str, int]) -> Path:
    from PIL import Image

    for split, n in splits.items():
        (root / "images" / split).mkdir(parents=True)
        for i in range(n):
            Image.new("RGB", (40, 30), (i * 20, 100, 50)).save(root / "images" / split / f"{split}{i}.jpg")
    lines = ["path: ."] + [f"{s}: images/{s}" for s in splits] + ["names: [a]"]
    (root / "data.yaml").write_text("\n".join(lines) + "\n")
    return root / "data.yaml"


def test_inference_over_a_data_yaml_reads_val_then_train(tmp_path):
    from yoloprof.workloads.pipeline import load_sources

    both = _dataset(tmp_path / "both", {"train": 3, "val": 2})
    assert [p.name for p in load_sources(str(both))] == ["val0.jpg", "val1.jpg"]
    assert [p.name for p in load_sources(str(both.parent))] == ["val0.jpg", "val1.jpg"]
    only_train = _dataset(tmp_path / "train_only", {"train": 3})
    assert [p.name for p in load_sources(str(only_train))] == ["train0.jpg", "train1.jpg", "train2.jpg"]


def test_infer_cli_over_a_data_yaml(tmp_path):
    data = _dataset(tmp_path / "ds", {"train": 1, "val": 2})
    code, _, err = cli("infer", str(data), "--device", "cpu", "--imgsz", "64", "--runs", "2", "--warmup", "1",
                       "--no-trace", "--project", str(tmp_path / "out"), "--json")
    assert code == 0, err
    assert (tmp_path / "out" / "infer" / "profile.json").is_file()


def test_memory_check_passes_ordinary_captures():
    from yoloprof.capturing.builtin.preflight import check_memory

    for mode, size, batch, imgsz in (("train", "n", 16, 640), ("infer", "l", 1, 1280)):
        s = CaptureSettings.for_mode(mode, size=size, batch=batch, imgsz=imgsz)
        check_memory(s, resolve_device("cpu"), amp=False)


@pytest.mark.parametrize("flag,value,word", [("--weights", "missing.pt", "missing.pt"),
                                             ("--model", "no_such_module_xyz.Net", "no_such_module_xyz")])
def test_model_flags_are_checked_before_the_data(tmp_path, flag, value, word):
    """A folder of 'images' that would fail verification: the flag error must come first."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jpg").write_bytes(b"not an image")
    code, _, err = cli("run", str(data), "--device", "cpu", "--imgsz", "64", flag, value,
                       "--project", str(tmp_path / "out"))
    line = one_error_line(err)
    assert code == 2 and word in line and "corrupt" not in line, line


@pytest.mark.parametrize("images,needed,batch,want,never", [
    (5, 4, 2, "a smaller --batch (at most 1)", "even --batch 1"),   # 5 images fill 4 steps of 1
    (3, 4, 2, "even --batch 1 needs 4 images", "at most"),          # no batch size helps
    (0, 4, 16, "at least 64 images at --batch 16", "at most 0"),
])
def test_data_too_small_names_only_real_ways_out(images, needed, batch, want, never):
    from yoloprof.capturing.builtin.trial_context import _ways_out

    text = _ways_out(images, needed, batch)
    assert want in text and never not in text and "larger dataset" in text and "fewer --steps" in text
