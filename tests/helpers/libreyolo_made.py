"""Real libreyolo profile.json files, made by libreyolo's own profilers and writer functions (no
weights, no network): an inference profile of a tiny seeded CPU model through
`libreyolo.profiling.inference.InferenceProfiler`, and a GPU-shaped one from a synthetic Kineto
trace through `libreyolo.training.profiler.analyze_trace` (what libreyolo writes as profile.json)."""

from __future__ import annotations

import json
from pathlib import Path

T0 = 1_700_000_000_000_000
STEP_US = 1000
# Per step: step/forward launches conv (60 us) and relu (20 us); step/backward launches a
# wgrad (80 us); launches 100 us apart, so kernels never overlap. Three steps.
PHASE_KERNELS = (("forward", "aten::conv2d", "implicit_convolve_sgemm", 60),
                 ("forward", "aten::relu", "vectorized_elementwise_kernel", 20),
                 ("backward", "aten::convolution_backward", "wgrad_alg0_engine", 80))
STEPS = 3


def _tiny():
    """A stand-in for a loaded LibreYOLO model (the stage methods InferenceProfiler calls; its
    docstring: "duck-typed so tests can pass a stub"): a seeded two-conv model at 64 px."""
    import numpy as np
    import torch

    torch.manual_seed(0)

    class Tiny:
        device = "cpu"

        def __init__(self, *args, **kwargs) -> None:
            self.model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                             torch.nn.Conv2d(8, 4, 1))

        def _get_input_size(self) -> int:
            return 64

        def _preprocess(self, im, color_format, input_size):
            if isinstance(im, (str, Path)):  # `libreyolo profile infer` passes image paths
                im = np.load(im)
            return torch.as_tensor(im).float().permute(2, 0, 1)[None] / 255, im, (64, 64), 1.0

        def _forward(self, x):
            return self.model(x)

        def _postprocess(self, out, conf, iou, size, max_det=300, ratio=1.0, classes=None, input_size=None):
            return out.sigmoid().flatten(1).topk(10)

    return Tiny


def _image():
    import numpy as np

    return np.random.RandomState(0).randint(0, 255, (64, 64, 3), dtype=np.uint8)


def inference_profile(out: Path) -> dict:
    """libreyolo's InferenceProfiler on a two-conv model at 64 px on CPU, with its trace."""
    from libreyolo.profiling.inference import InferenceProfiler

    InferenceProfiler(_tiny()(), warmup=2, runs=6, save_dir=out, meta={"model": "tiny"}).run([_image()])
    return json.loads((out / "profile.json").read_text())


def repeat_profile(base: Path, project: str = "ly/rep", repeat: int = 3) -> Path:
    """`libreyolo profile infer --repeat N --project ly/rep` run in the folder `base` (its own
    command function, in-process) with the tiny model in place of LibreYOLO(weights): it writes
    `ly/rep/infer_repeat.json` beside `ly/rep/infer_<i>/`, each file naming its trace by the
    relative path libreyolo was given (`"trace": "ly/rep/infer_0/profile_trace.json"`)."""
    import os

    import numpy as np
    import libreyolo
    import libreyolo.cli.commands.profile as cmd

    base.mkdir(parents=True, exist_ok=True)
    img = base / "img.npy"  # an image source the stand-in reads (`_tiny`)
    np.save(img, _image())
    was, exts, cwd = libreyolo.LibreYOLO, cmd._IMG_EXTS, os.getcwd()
    libreyolo.LibreYOLO, cmd._IMG_EXTS = _tiny(), exts | {".npy"}
    os.chdir(base)
    try:
        cmd.infer_cmd(source=str(img), weights="tiny", size="t", batch=2, imgsz=64, half=False,
                      amp_dtype="float16", warmup=1, runs=4, repeat=repeat, conf=0.25, iou=0.45, max_det=300,
                      device="cpu", trace=True, project=project, json_output=True)
    finally:
        os.chdir(cwd)
        libreyolo.LibreYOLO, cmd._IMG_EXTS = was, exts
    return base / project / "infer_repeat.json"


def train_profile(base: Path, save_dir: str = "runs/prof", steps: int = 6) -> Path:
    """libreyolo's TrainStepProfiler (what `model.train(profile=True)` runs) around a tiny CPU
    training loop with its four phases, run in the folder `base` with a relative save_dir as a
    `--project runs` run has: profile.json (naming `runs/prof/profile_trace.json`), its trace and
    profile_summary.json."""
    import os

    cwd = os.getcwd()
    base.mkdir(parents=True, exist_ok=True)
    os.chdir(base)
    try:
        _train(Path(save_dir), steps)
    finally:
        os.chdir(cwd)
    return base / save_dir / "profile.json"


def _train(out: Path, steps: int) -> None:
    import torch
    from libreyolo.training.profiler import TrainStepProfiler

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = TrainStepProfiler(device=torch.device("cpu"), warmup=2, active=steps, open_report=False,
                             save_dir=out, meta={"model": "tiny", "batch": 2, "imgsz": 32, "device": "cpu"},
                             logger=_Quiet())
    data = [torch.rand(2, 3, 32, 32) for _ in range(steps + 4)]
    for x in prof.wrap_loader(data):
        with prof.phase("to_device"):
            x = x.to("cpu")
        with prof.phase("forward"):
            loss = model(x).square().mean()
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        prof.step()
        if prof.finished:
            break


class _Quiet:
    def info(self, line: str) -> None:
        pass


def gpu_trace() -> dict:
    """A Kineto trace with libreyolo's `step/<phase>` annotations around each phase's launches."""
    ev: list[dict] = []
    corr = 0
    for s in range(STEPS):
        t0 = T0 + s * STEP_US
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                   "ts": t0, "dur": 900})
        at = t0 + 10
        for phase in ("forward", "backward"):
            rows = [r for r in PHASE_KERNELS if r[0] == phase]
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"step/{phase}", "pid": 1, "tid": 1,
                       "ts": at, "dur": 100 * len(rows)})
            for _, op, kernel, k_us in rows:
                corr += 1
                ev += [{"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": at + 5, "dur": 50},
                       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                        "ts": at + 10, "dur": 5, "args": {"correlation": corr}},
                       {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": at + 20,
                        "dur": k_us, "args": {"correlation": corr, "device": 0, "stream": 7}}]
                at += 100
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "V100"}], "traceEvents": ev}


def gpu_profile(out: Path) -> Path:
    """profile_trace.json + libreyolo's analysis of it written as profile.json (its own writer)."""
    from libreyolo.training.profiler import analyze_trace

    out.mkdir(parents=True, exist_ok=True)
    trace = out / "profile_trace.json"
    trace.write_text(json.dumps(gpu_trace()))
    (out / "profile.json").write_text(json.dumps(analyze_trace(trace)))
    return out / "profile.json"
