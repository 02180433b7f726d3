"""Fixtures of the analysis tests: synthetic sweep folders whose truth is known, and the sweep
run with the fake capture (registered by tests/conftest.py through `pytest_plugins`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import yoloprof.capturing.builtin.capture_entry as capture_api
from helpers.fake_sweep import fake_capture
from helpers.sweeps import (
    BASE_CONFIG,
    batch_truth,
    group_hash,
    lognormal,
    make_sweep,
    write_job,
)
from helpers.verdicts.scenarios import write_inputs
from yoloprof.analysis.collect import collect
from yoloprof.analysis.run import analyze_collected
from yoloprof.render.report import write_outputs
from yoloprof.sweep.app import main as sweep_main

# --- the fixtures of tests/test_analysis_axes.py

@pytest.fixture(scope="session")
def modes_sweep(tmp_path_factory) -> Path:
    """`mode=train,infer batch=4,8 trial=range(3)`: train has steps, infer has runs (derived)."""
    sweep = tmp_path_factory.mktemp("modes") / "sweeps" / "m" / "20240101-000000-mode"
    job = 0
    for t in range(3):
        for mode in ("train", "infer"):
            for batch in (4, 8):
                cfg = {**BASE_CONFIG, "mode": mode, "batch": batch, "steps": 5 if mode == "train" else None,
                       "runs": None if mode == "train" else 20, "data": "synthetic" if mode == "train" else None}
                m = batch_truth(cfg, __import__("numpy").random.default_rng(job))
                if mode == "infer":
                    m["step_ms"] = [x / 3 for x in m["step_ms"]]  # an inference call is much shorter
                write_job(sweep, job, cfg, m, trial=t, profile=False,
                          overrides=[f"mode={mode}", f"batch={batch}"])
                job += 1
    return sweep


@pytest.fixture(scope="session")
def models_sweep(tmp_path_factory) -> Path:
    """`model._target_=pkg.nets.NetA,pkg.nets.NetB +model.width=16,32`, 3 trials each."""
    import numpy as np

    sweep = tmp_path_factory.mktemp("models") / "sweeps" / "u" / "20240101-000000-modl"
    job = 0
    rng = np.random.default_rng(0)
    for t in range(3):
        for target in ("pkg.nets.NetA", "pkg.nets.NetB"):
            for width in (16, 32):
                step = (10.0 if target.endswith("A") else 20.0) * width / 16
                cfg = {**BASE_CONFIG, "model": target, "size": None}
                group = {**cfg, "width": width}  # the kwargs are part of the config hash
                vals = list(rng.lognormal(np.log(step), 0.01, 1))
                write_job(sweep, job, cfg, {"step_ms": vals}, trial=t, profile=False,
                          overrides=[f"model._target_={target}", f"+model.width={width}"])
                # write_job hashes `cfg`; give each width its own configuration
                path = sweep / str(job) / "row.parquet"
                table = pq.read_table(path)
                gh = group_hash(group)
                table = table.set_column(table.schema.get_field_index("group_hash"), "group_hash",
                                         __import__("pyarrow").array([gh]))
                pq.write_table(table, path)
                job += 1
    return sweep


# --- the fixtures of tests/test_analysis_cli.py

@pytest.fixture(scope="session")
def sweep(tmp_path_factory) -> Path:
    return make_sweep(tmp_path_factory.mktemp("cli"), [{"batch": 4}, {"batch": 8}, {"batch": 16}],
                      batch_truth, trials=4)


# --- the fixtures of tests/test_analysis_records.py

@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Path:
    """The shipped demo sweep (vary: batch) run with the fake capture; its end-of-sweep analysis."""
    root = tmp_path_factory.mktemp("demo")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setattr(capture_api, "capture", fake_capture)
    for var in ("YOLOPROF_SWEEP_ID", "FAKE_FAIL_BATCH", "FAKE_OOM_BATCH", "FAKE_SLEEP"):
        mp.delenv(var, raising=False)
    try:
        # (trial=range(0,3): the demo's trial=auto pinned to 3 trials per point, as it once ran)
        assert sweep_main(["+sweep=demo", "device=cpu", "analysis.html=false", "trial=range(0,3)",
                           "launch.isolation=inprocess"]) == 0  # about the records, not the isolation
    finally:
        mp.undo()
    [sweep] = sorted((root / "runs" / "profile" / "sweeps" / "demo").iterdir())
    return sweep


# --- the fixtures of tests/test_analysis_report.py

@pytest.fixture(scope="session")
def report(tmp_path_factory) -> tuple[Path, object]:
    cfgs = [{"batch": b, "imgsz": i} for b in (4, 8, 16) for i in (320, 640)]
    sweep = make_sweep(tmp_path_factory.mktemp("rep"), cfgs, lambda c, r: batch_truth(c, r, n=5),
                       trials=5, repeat_samples=True)
    res = analyze_collected(collect(sweep))
    write_outputs(res, html=True)
    return sweep / "analysis" / "report.html", res


# --- the fixtures of tests/test_analysis_stages.py

def workers_truth(c: dict, rng: np.random.Generator) -> dict[str, list[float]]:
    """workers=2 is 10% faster than workers=0 (2% noise); workers=4 is identical to workers=0."""
    step = {0: 50.0, 2: 50.0 / 1.10, 4: 50.0}[c["workers"]]
    s = lognormal(rng, step, 0.02, 1)
    return {"step_ms": s, "img_per_s": [c["batch"] * 1000 / x for x in s], "peak_mem_mb": [500.0]}


@pytest.fixture(scope="session")
def workers_sweep(tmp_path_factory) -> Path:
    return make_sweep(tmp_path_factory.mktemp("w"), [{"workers": w} for w in (0, 2, 4)], workers_truth, trials=8)


@pytest.fixture(scope="session")
def grid_sweep(tmp_path_factory) -> Path:
    cfgs = [{"batch": b, "imgsz": i} for b in (4, 8, 16) for i in (320, 640)]
    return make_sweep(tmp_path_factory.mktemp("g"), cfgs, lambda c, r: batch_truth(c, r, n=4),
                      trials=4, repeat_samples=True)


# --- the fixtures of tests/test_metrics_verdict_scenarios.py

@pytest.fixture(scope="session")
def scenario_inputs(tmp_path_factory) -> dict[str, Path]:
    return write_inputs(tmp_path_factory.mktemp("verdict-inputs"))
