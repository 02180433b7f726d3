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


def inference_profile(out: Path) -> dict:
    """libreyolo's InferenceProfiler on a two-conv model at 64 px on CPU, with its trace."""
    import numpy as np
    import torch
    from libreyolo.profiling.inference import InferenceProfiler

    torch.manual_seed(0)

    class Tiny:
        device = "cpu"

        def __init__(self) -> None:
            self.model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                             torch.nn.Conv2d(8, 4, 1))

        def _get_input_size(self) -> int:
            return 64

        def _preprocess(self, im, color_format, input_size):
            return torch.as_tensor(im).float().permute(2, 0, 1)[None] / 255, im, (64, 64), 1.0

        def _forward(self, x):
            return self.model(x)

        def _postprocess(self, out, conf, iou, size, max_det=300, ratio=1.0, classes=None, input_size=None):
            return out.sigmoid().flatten(1).topk(10)

    img = np.random.RandomState(0).randint(0, 255, (64, 64, 3), dtype=np.uint8)
    InferenceProfiler(Tiny(), warmup=2, runs=6, save_dir=out, meta={"model": "tiny"}).run([img])
    return json.loads((out / "profile.json").read_text())


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
