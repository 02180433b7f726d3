"""Training data: synthetic determinism, the YOLO-format reader, the loader, and every bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from PIL import Image

from yoloprof.errors import UsageError
from yoloprof.workloads.data import build_dataset, collate, make_loader, num_batches, to_device
from yoloprof.workloads.images import PAD_VALUE
from yoloprof.workloads.synthetic import SyntheticDetection
from yoloprof.workloads.yolodata import label_path


def test_synthetic_same_seed_identical_other_seed_different():
    a, b, c = (SyntheticDetection(5, 64, 10, seed) for seed in (1, 1, 2))
    for i in range(5):
        assert torch.equal(a[i][0], b[i][0]) and torch.equal(a[i][1], b[i][1])
    assert any(not torch.equal(a[i][0], c[i][0]) for i in range(5))
    # Order of access does not matter (each index has its own generator).
    assert torch.equal(SyntheticDetection(5, 64, 10, 1)[3][0], a[3][0])


def test_synthetic_images_and_labels_are_valid():
    ds = SyntheticDetection(8, 96, num_classes=3, seed=0)
    for i in range(len(ds)):
        img, lab = ds[i]
        assert img.dtype == torch.uint8 and img.shape == (3, 96, 96)
        assert 1 <= len(lab) <= 6 and lab.shape[1] == 5
        assert torch.all((lab[:, 0] >= 0) & (lab[:, 0] < 3) & (lab[:, 0] == lab[:, 0].round()))
        x1, x2 = lab[:, 1] - lab[:, 3] / 2, lab[:, 1] + lab[:, 3] / 2
        assert torch.all(x1 >= -1e-6) and torch.all(x2 <= 1 + 1e-6)
    with pytest.raises(IndexError):
        ds[8]


def test_synthetic_box_is_painted_where_the_label_says():
    img, lab = SyntheticDetection(1, 128, num_classes=2, seed=5)[0]
    cls, cx, cy, w, h = lab[-1].tolist()  # the last shape drawn is on top of the others
    pixel = img[:, int(cy * 128), int(cx * 128)]
    outside = img[:, int((cy - h / 2) * 128) - 2, int(cx * 128)] if cy - h / 2 > 0.03 else None
    assert pixel.tolist() == img[:, int(cy * 128) + 1, int(cx * 128) + 1].tolist()  # flat fill
    if outside is not None:
        assert outside.tolist() != pixel.tolist()


def test_loader_collates_targets_and_drops_last():
    ds = SyntheticDetection(10, 64, 5, 0)
    loader = make_loader(ds, batch=4, workers=0)
    batches = list(loader)
    assert len(batches) == num_batches(ds, 4) == 2
    images, targets = batches[1]
    assert images.shape == (4, 3, 64, 64) and images.dtype == torch.uint8
    expected = torch.cat([torch.cat((torch.full((len(ds[4 + i][1]), 1), float(i)), ds[4 + i][1]), 1) for i in range(4)])
    assert torch.equal(targets, expected)
    x, t = to_device(images, targets, "cpu")
    assert x.dtype == torch.float32 and x.max() <= 1 and torch.allclose(x * 255, images.float())


def test_shuffled_loaders_with_same_seed_agree():
    ds = SyntheticDetection(12, 32, 3, 0)
    first = [t for _, t in make_loader(ds, 3, shuffle=True, seed=9)]
    again = [t for _, t in make_loader(ds, 3, shuffle=True, seed=9)]
    assert all(torch.equal(a, b) for a, b in zip(first, again))


def test_loader_with_workers_yields_same_batches():
    ds = SyntheticDetection(6, 32, 3, 0)
    single = [b for b in make_loader(ds, 2, workers=0)]
    multi = [b for b in make_loader(ds, 2, workers=2)]
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(single, multi))


def test_collate_of_images_without_boxes():
    images, targets = collate([(torch.zeros(3, 8, 8, dtype=torch.uint8), torch.zeros((0, 5)))] * 2)
    assert images.shape == (2, 3, 8, 8) and targets.shape == (0, 6)


# ---------------------------------------------------------------- YOLO-format datasets

def write_dataset(root: Path) -> dict[str, tuple[int, int]]:
    """A small YOLO dataset: JPEG and PNG, grayscale, RGBA, one image without a label file."""
    (root / "images" / "train").mkdir(parents=True)
    (root / "labels" / "train").mkdir(parents=True)
    specs = {
        "a.jpg": ("RGB", (80, 40), "0 0.5 0.5 0.5 0.5\n1 0.25 0.25 0.1 0.2\n"),
        "b.png": ("L", (40, 40), "2 0.5 0.5 1.0 1.0\n"),
        "c.png": ("RGBA", (30, 60), "\n0 0.1 0.9 0.2 0.2\n\n"),
        "d.jpg": ("RGB", (50, 50), None),
    }
    for name, (mode, size, label) in specs.items():
        colour = {"RGB": (200, 10, 10), "L": 128, "RGBA": (0, 0, 255, 0)}[mode]
        Image.new(mode, size, colour).save(root / "images" / "train" / name)
        if label is not None:
            (root / "labels" / "train" / name).with_suffix(".txt").write_text(label)
    return {name: size for name, (_, size, _) in specs.items()}


def test_label_path_convention(tmp_path):
    assert label_path(tmp_path / "images" / "x" / "y.jpg") == tmp_path / "labels" / "x" / "y.txt"
    assert label_path(tmp_path / "pics" / "y.png") == tmp_path / "pics" / "y.txt"


def test_yolo_dataset_reads_every_format(tmp_path):
    write_dataset(tmp_path / "ds")
    (tmp_path / "ds" / "data.yaml").write_text("path: .\ntrain: images/train\nval: images/train\nnames: [a, b, c]\n")
    ds = build_dataset(str(tmp_path / "ds" / "data.yaml"), imgsz=64, num_classes=3)
    assert len(ds) == 4 and ds.skipped == 0 and ds.names == ["a", "b", "c"]
    by_name = {p.name: i for i, p in enumerate(ds.files)}
    for name, index in by_name.items():
        img, _ = ds[index]
        assert img.shape == (3, 64, 64) and img.dtype == torch.uint8
    # a.jpg is 80x40 -> scale 0.8 -> 64x32, padded by 16 rows on top.
    img, lab = ds[by_name["a.jpg"]]
    ratio, pad_y = 64 / 80, (64 - 32) // 2
    assert lab[0].tolist() == pytest.approx([0, 0.5, (0.5 * 40 * ratio + pad_y) / 64, 0.5, 0.5 * 40 * ratio / 64])
    assert lab[1].tolist() == pytest.approx([1, 0.25, (0.25 * 32 + pad_y) / 64, 0.1, 0.2 * 32 / 64])
    assert img[:, 2, 32].tolist() == [PAD_VALUE] * 3 and abs(int(img[0, 32, 32]) - 200) < 8
    img, lab = ds[by_name["b.png"]]  # grayscale -> three equal channels
    assert torch.equal(img[0], img[1]) and torch.equal(img[1], img[2]) and int(img[0, 32, 32]) == 128
    img, lab = ds[by_name["c.png"]]  # fully transparent RGBA -> composited on the pad grey
    assert img[:, 32, 32].tolist() == [PAD_VALUE] * 3 and len(lab) == 1
    assert len(ds[by_name["d.jpg"]][1]) == 0  # no label file = no boxes


def test_yaml_train_relative_to_yaml_folder_and_list(tmp_path):
    write_dataset(tmp_path / "ds")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "data.yaml").write_text("path: ../ds\ntrain: [images/train]\nnames: {0: a, 1: b, 2: c}\n")
    ds = build_dataset(str(cfg / "data.yaml"), 32, 3)
    assert len(ds) == 4 and ds.names == ["a", "b", "c"]
    (tmp_path / "ds" / "other.yaml").write_text("train: images/train\n")  # no path: the yaml's folder
    assert len(build_dataset(str(tmp_path / "ds" / "other.yaml"), 32, 3)) == 4


def test_dataset_folder_given_directly(tmp_path):
    write_dataset(tmp_path / "ds")
    ds = build_dataset(str(tmp_path / "ds"), 32, 3)
    assert len(ds) == 4 and sum(len(ds[i][1]) for i in range(4)) == 4


def test_synthetic_is_the_default_and_sized_by_the_hint():
    ds = build_dataset("synthetic", 64, 80, n_images_hint=12, seed=3)
    assert isinstance(ds, SyntheticDetection) and len(ds) == 12
    assert torch.equal(ds[0][0], SyntheticDetection(12, 64, 80, 3)[0][0])


# ---------------------------------------------------------------- bad input

def test_unknown_data_name(tmp_path):
    with pytest.raises(UsageError, match="unknown data 'coco8'"):
        build_dataset("coco8", 64, 80)
    with pytest.raises(UsageError, match="no such"):
        build_dataset(str(tmp_path / "missing.yaml"), 64, 80)


def test_yaml_without_train(tmp_path):
    (tmp_path / "data.yaml").write_text("path: .\nval: images\nnames: [a]\n")
    with pytest.raises(UsageError, match="no 'train' entry"):
        build_dataset(str(tmp_path / "data.yaml"), 64, 80)


def test_yaml_train_folder_missing(tmp_path):
    (tmp_path / "data.yaml").write_text("train: nowhere\n")
    with pytest.raises(UsageError, match="'nowhere' not found"):
        build_dataset(str(tmp_path / "data.yaml"), 64, 80)


def test_folder_without_images(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "notes.txt").write_text("no pictures")
    with pytest.raises(UsageError, match="no images found"):
        build_dataset(str(tmp_path), 64, 80)


def test_corrupt_image_is_skipped_with_a_warning(tmp_path):
    write_dataset(tmp_path)
    bad = tmp_path / "images" / "train" / "e.jpg"
    bad.write_bytes(b"\xff\xd8\xff not really a jpeg")
    with pytest.warns(UserWarning, match="e.jpg"):
        ds = build_dataset(str(tmp_path), 32, 3)
    assert len(ds) == 4 and ds.skipped == 1 and "e.jpg" in ds.warnings[0]


def test_all_images_corrupt(tmp_path):
    (tmp_path / "images").mkdir()
    for name in ("a.jpg", "b.png"):
        (tmp_path / "images" / name).write_bytes(b"garbage")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UsageError, match="all 2 image"):
            build_dataset(str(tmp_path), 32, 3)


@pytest.mark.parametrize("line, match", [
    ("0 0.5 0.5 0.5", "expected 5 fields"),
    ("0 0.5 0.5 0.5 0.5 0.1", "expected 5 fields"),
    ("0 1.5 0.5 0.5 0.5", r"normalised to \[0, 1\]"),
    ("0 0.5 -0.2 0.5 0.5", r"normalised to \[0, 1\]"),
    ("0 12 30 100 80", r"normalised to \[0, 1\]"),
    ("x 0.5 0.5 0.5 0.5", "non-numeric"),
    ("7 0.5 0.5 0.5 0.5", "not an integer in"),
])
def test_bad_label_line_names_file_and_line(tmp_path, line, match):
    write_dataset(tmp_path)
    (tmp_path / "labels" / "train" / "a.txt").write_text(f"0 0.5 0.5 0.5 0.5\n{line}\n")
    with pytest.raises(UsageError, match=match) as err:
        build_dataset(str(tmp_path), 32, 3)
    assert "a.txt:2" in str(err.value) and "\n" not in str(err.value)


def test_yolo_dataset_through_a_worker_loader(tmp_path):
    write_dataset(tmp_path)
    ds = build_dataset(str(tmp_path), 64, 3)
    batches = list(make_loader(ds, batch=2, workers=2))
    assert len(batches) == 2
    images = torch.cat([b[0] for b in batches])
    assert torch.equal(images, torch.stack([ds[i][0] for i in range(4)]))
    targets = [b[1] for b in batches]
    assert sum(len(t) for t in targets) == 4  # 2 + 1 + 1 + 0 boxes
    assert all(torch.all((t[:, 2:] >= 0) & (t[:, 2:] <= 1)) for t in targets)


def test_yaml_train_as_an_image_list(tmp_path):
    write_dataset(tmp_path)
    (tmp_path / "train.txt").write_text("images/train/a.jpg\n\nimages/train/b.png\n")
    (tmp_path / "data.yaml").write_text("train: train.txt\nnames: [a, b, c]\n")
    ds = build_dataset(str(tmp_path / "data.yaml"), 32, 3)
    assert [p.name for p in ds.files] == ["a.jpg", "b.png"] and len(ds.labels[0]) == 2


def test_truncated_jpeg_is_caught_up_front_and_trailing_bytes_are_not(tmp_path):
    write_dataset(tmp_path)
    folder = tmp_path / "images" / "train"
    noisy = Image.effect_noise((64, 64), 40).convert("RGB")
    noisy.save(folder / "full.jpg", quality=90)
    data = (folder / "full.jpg").read_bytes()
    (folder / "trailing.jpg").write_bytes(data + b"\x00" * 16)  # valid image, extra bytes after EOI
    (folder / "truncated.jpg").write_bytes(data[: len(data) // 2])
    with pytest.warns(UserWarning, match="truncated.jpg"):
        ds = build_dataset(str(tmp_path), 32, 3)
    names = [p.name for p in ds.files]
    assert "truncated.jpg" not in names and {"full.jpg", "trailing.jpg"} <= set(names)
    assert ds.skipped == 1
    assert all(ds[i][0].shape == (3, 32, 32) for i in range(len(ds)))
