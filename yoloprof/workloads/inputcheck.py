"""The inputs of a capture checked before any work: the data exists and holds images (and, for
training, labels, and enough images for warm-up + measured steps at the batch), and a model
factory accepts the keyword arguments it will be called with.

Why here and not in the job: a sweep otherwise finds a missing path, an empty or too small
dataset or a misspelt `+model.widht=8` once per job, after seconds of set-up each, and every job of
the grid fails alike. The sweep's pre-flight calls `check_inputs` for every configuration before the
first job (sweep/plan.py), naming the Hydra keys; `yoloprof run`/`infer` call it naming the flags.
Nothing is decoded: images are counted by name (a corrupt one is still skipped, with a warning, when
the capture reads the data), so a large dataset costs one directory walk, once per path.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yoloprof.config.capture_settings import CaptureSettings, flag_of, spec_of
from yoloprof.errors import DataTooSmallError, UsageError


@dataclass(frozen=True)
class Names:
    """How a message names a setting: the command line's flags, or the Hydra config's keys."""

    hydra: bool

    def key(self, name: str) -> str:
        if name == "data":
            return "data.path" if self.hydra else "the data argument"
        if not self.hydra:
            return flag_of(name)
        where = spec_of(name).hydra
        return name if where in ("top", None) else f"capture.{name}" if where == "capture" else where

    def show(self, name: str, value: Any) -> str:
        """`capture.steps=20` or `--steps 20`."""
        return f"{self.key(name)}={value}" if self.hydra else f"{self.key(name)} {value}"

    def kwarg(self, name: str) -> str:
        return f"model.{name}" if self.hydra else f"--model-arg {name}"


CLI, HYDRA = Names(hydra=False), Names(hydra=True)


def _stamp(data: str) -> tuple[int, ...]:
    """Modification times of the data path and its images/labels folders: a dataset changed since
    (images added in a notebook, say) is listed again, not answered from the cache."""
    path = Path(data).expanduser()
    return tuple(p.stat().st_mtime_ns for p in (path, path / "images", path / "labels") if p.exists())


def _listing(data: str, split: str) -> tuple[tuple[Path, ...], str]:
    return _cached_listing(data, split, _stamp(data))


@functools.lru_cache(maxsize=64)  # a grid of many configurations on one dataset lists it once
def _cached_listing(data: str, split: str, _stamp: tuple[int, ...]) -> tuple[tuple[Path, ...], str]:
    """(image paths, where they were looked for) of a data.yaml or dataset folder, by name only."""
    from yoloprof.workloads.images import list_images
    from yoloprof.workloads.yolodata import YAML_SUFFIXES, dataset_yaml, yaml_split_images

    path = Path(data).expanduser()
    own = dataset_yaml(path) if path.is_dir() else None
    if own is not None or (path.is_file() and path.suffix.lower() in YAML_SUFFIXES):
        yaml_path = own or path
        images, _ = yaml_split_images(yaml_path, split)
        return tuple(p for p in images if p.is_file()), f"{yaml_path} ({split})"
    if path.is_file():
        return (path,), str(path)
    folder = path / "images" if (path / "images").is_dir() else path
    return tuple(list_images(folder)), str(folder)


def _has_labels(images: tuple[Path, ...]) -> bool:
    from yoloprof.workloads.yolodata import label_path

    return any(label_path(p).is_file() for p in images)


def check_data(settings: CaptureSettings, names: Names) -> None:
    """The data of a capture exists and can fill it; one line naming the key or flag otherwise."""
    data, train = settings.data, settings.mode == "train"
    if data is None or data == "synthetic":
        return
    where = names.show("data", repr(data)) if names.hydra else f"data {data!r}"
    if not Path(data).expanduser().exists():
        raise UsageError(f"{where} does not exist (expected a data.yaml, a dataset folder"
                         f"{', synthetic' if train else ' or an image'})")
    split = "train"
    if not train:
        from yoloprof.workloads.yolodata import dataset_yaml, inference_split

        path = Path(data).expanduser()
        yaml_path = dataset_yaml(path) if path.is_dir() else path if path.suffix in (".yaml", ".yml") else None
        split = inference_split(yaml_path) if yaml_path else "train"
    images, looked = _listing(str(data), split)
    if not images:
        raise UsageError(f"{where}: no images in {looked}")
    if not train:
        return
    check_fills(len(images), settings, names, where)
    if not _has_labels(images):
        raise UsageError(f"{where}: {len(images)} images in {looked} but not one label file "
                         "(YOLO layout: labels/<name>.txt beside images/<name>.jpg)")


def check_fills(images: int, settings: CaptureSettings, names: Names, where: str) -> None:
    """Exit 3 (DataTooSmallError) when `images` cannot fill warm-up + measured full batches."""
    needed = settings.warmup + settings.measured
    batch = settings.batch
    if batch < 1 or images // batch >= needed:
        return
    fits = images // needed if needed else 0
    larger = f"a larger dataset (at least {needed * batch} images at {names.show('batch', batch)})"
    fewer = f"fewer {names.key('steps')}/{names.key('warmup')}"
    ways = (f"{larger}, {fewer}, or a smaller {names.key('batch')} (at most {fits})" if 1 <= fits < batch
            else f"{larger} or {fewer} (even batch 1 needs {needed} images)")
    raise DataTooSmallError(
        f"{where} has {images} images = {images // batch} full batches of {names.show('batch', batch)}, but "
        f"{names.show('warmup', settings.warmup)} + {names.show('steps', settings.measured)} need {needed}; "
        f"ways out: {ways}")


def check_model_kwargs(settings: CaptureSettings, names: Names) -> None:
    """Every keyword argument is one the factory takes (its signature), with a "did you mean"."""
    from yoloprof.config.model_families import BUILTIN, FACTORY, family_of

    kwargs = dict(settings.model_kwargs or {})
    if not kwargs or not isinstance(settings.model, str) or family_of(settings.model) not in (BUILTIN, FACTORY):
        return  # a family's builder checks its own keywords
    from yoloprof.workloads.models import import_target, is_builtin  # torch: only for a model with kwargs

    if is_builtin(settings.model):
        raise UsageError(f"{names.kwarg(sorted(kwargs)[0])}: the built-in detector takes no keyword arguments "
                         "(its settings are size, num_classes, seed and weights)")
    factory = import_target(settings.model)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check against
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in sorted(set(kwargs) - set(accepted)):
        close = difflib.get_close_matches(key, accepted, n=1, cutoff=0.6)
        hint = f" (did you mean {names.kwarg(close[0])!r}?)" if close else ""
        raise UsageError(f"{names.kwarg(key)}: {settings.model} takes no keyword {key!r}{hint}; it takes "
                         f"{', '.join(accepted) or 'none'}")


def check_inputs(settings: CaptureSettings, names: Names) -> None:
    """Model keywords, then data: the cheap checks a whole capture or sweep depends on."""
    check_model_kwargs(settings, names)
    check_data(settings, names)
