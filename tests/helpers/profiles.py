"""Hand-made profiles for the reader unit tests (tests/test_readers_profiles.py checks that every
one of them is a valid `yoloprof.profile/1` document)."""

from __future__ import annotations

from yoloprof.defs import metrics as registry
from yoloprof.profiles.model import empty_profile, metric


def _metric(name: str, value) -> dict:
    """A metric with the unit and better direction the registry gives it (defs/metrics.py), as the
    capture writes it: a hand-made profile never carries a unit of its own (MiB, not "MB")."""
    return metric(value, registry.unit(name), registry.better(name))

# (name, category, tensorcore, phase, ms_per_step, count_per_step)
GPU_KERNELS = [
    ("sm80_xmma_gemm_f16f16_f16f32_tn_n_tilesize128x128x32", "gemm/conv", True, "forward", 20.0, 50),
    ("ampere_sgemm_128x64_nn", "gemm/conv", False, "backward", 20.0, 50),
    ("vectorized_elementwise_kernel<4, silu>", "elementwise", False, "forward", 9.0, 120),
    ("elementwise_kernel<128, 2, add>", "elementwise", False, "backward", 6.0, 80),
    ("batch_norm_collect_statistics_kernel", "norm/reduction", False, "forward", 5.0, 100),
    ("multi_tensor_apply_kernel<SGD>", "elementwise", False, "optimizer", 0.0, 0),
]
GPU_PHASES = [("forward", 40.0, 34.0, 270, 900), ("backward", 45.0, 26.0, 130, 700),
              ("optimizer", 5.0, 0.0, 0, 60)]
CPU_OPS = [("aten::mkldnn_convolution", "forward", 30.0, 30.0, 60), ("aten::silu_", "forward", 6.0, 6.0, 57),
           ("aten::add", "forward", 2.0, 2.0, 40), ("aten::cat", "forward", 1.0, 1.0, 20),
           ("aten::conv2d", "forward", 1.0, 32.0, 60)]


def _kernel_rows(total_ms: float) -> list[dict]:
    return [{"name": n, "short_name": n.split("<")[0], "category": c, "tensorcore": tc, "phase": ph,
             "ms_per_step": ms, "pct": 100.0 * ms / total_ms, "count_per_step": cnt}
            for n, c, tc, ph, ms, cnt in GPU_KERNELS]


def gpu_train_profile(step_samples=(100.0, 102.0, 98.0), util: float = 60.0) -> dict:
    """A host-bound GPU training profile: 100 ms steps, 60 ms of device work, 500 launches."""
    p = empty_profile("train", {"batch": 16, "imgsz": 640, "device": "0", "mode": "train"},
                      {"torch": "2.13.0", "python": "3.11", "device_name": "Fake A100"})
    mean = sum(step_samples) / len(step_samples)
    p["metrics"] = {
        "step_ms": _metric("step_ms", step_samples),
        "img_per_s": _metric("img_per_s", [16000.0 / s for s in step_samples]),
        "device_util_pct": _metric("device_util_pct", util),
        "tensorcore_pct": _metric("tensorcore_pct", 33.3),
        "peak_mem_mb": _metric("peak_mem_mb", 2048.0),
        "host_overhead_ms": _metric("host_overhead_ms", mean * (1 - util / 100)),
        "launches_per_step": _metric("launches_per_step", 500.0),
        "kernels_per_step": _metric("kernels_per_step", 500.0),
    }
    total = sum(k[4] for k in GPU_KERNELS)
    cats: dict[str, float] = {}
    for k in GPU_KERNELS:
        cats[k[1]] = cats.get(k[1], 0.0) + k[4]
    p["categories"] = [{"category": c, "device_ms_per_step": ms, "pct": 100 * ms / total} for c, ms in cats.items()]
    p["kernels"] = _kernel_rows(total)
    p["phases"] = [{"phase": n, "wall_ms_per_step": w, "device_ms_per_step": d, "kernels_per_step": k,
                    "ops_per_step": o} for n, w, d, k, o in GPU_PHASES]
    p["ops"] = [{"name": n, "phase": ph, "self_ms_per_step": s, "total_ms_per_step": t, "count_per_step": c}
                for n, ph, s, t, c in CPU_OPS]
    p["verdict"] = {"bound": "host", "why": "device utilisation 60% < 80%",
                    "evidence": {"device_util_pct": util, "launches_per_step": 500}}
    p["trace"] = {"file": "profile_trace.json", "steps_analyzed": 3, "window_ms": 300.0}
    return p


def cpu_train_profile(step_ms: float = 50.0) -> dict:
    """A CPU training profile: no kernels, no categories; ops carry the time."""
    p = empty_profile("train", {"batch": 2, "imgsz": 128, "device": "cpu"}, {"torch": "2.13.0"})
    p["metrics"] = {"step_ms": _metric("step_ms", [step_ms]),
                    "img_per_s": _metric("img_per_s", [2000.0 / step_ms]),
                    "peak_mem_mb": _metric("peak_mem_mb", [300.0])}
    p["phases"] = [{"phase": "forward", "wall_ms_per_step": 20.0, "device_ms_per_step": None,
                    "kernels_per_step": None, "ops_per_step": 237.0},
                   {"phase": "backward", "wall_ms_per_step": 25.0, "device_ms_per_step": None,
                    "kernels_per_step": None, "ops_per_step": 300.0}]
    p["ops"] = [{"name": n, "phase": ph, "self_ms_per_step": s, "total_ms_per_step": t, "count_per_step": c}
                for n, ph, s, t, c in CPU_OPS]
    p["verdict"] = {"bound": "compute", "why": "CPU run", "evidence": {}}
    p["trace"] = {"file": None, "steps_analyzed": 2, "window_ms": 100.0}
    return p


def infer_profile() -> dict:
    p = empty_profile("infer", {"batch": 1, "imgsz": 640, "device": "cpu"}, {"torch": "2.13.0"})
    lat = {"p50_ms": 20.0, "p90_ms": 24.0, "p99_ms": 30.0, "mean_ms": 21.0, "min_ms": 18.0, "max_ms": 31.0, "n": 100}
    p["latency"] = lat
    p["stages"] = [{"stage": "preprocess", "ms": 3.0, "share": 3 / 21}, {"stage": "forward", "ms": 15.0, "share": 15 / 21},
                   {"stage": "postprocess", "ms": 3.0, "share": 3 / 21}]
    p["metrics"] = {"step_ms": _metric("step_ms", [21.0]), "img_per_s": _metric("img_per_s", [1000 / 21]),
                    **{k: _metric(k, [v]) for k, v in lat.items() if k.startswith("p")}}
    p["verdict"] = {"bound": "compute", "why": "forward dominates", "evidence": {"forward_share": 15 / 21}}
    return p
