"""Shared fixtures (helpers that are not fixtures live in tests/helpers/)."""

from __future__ import annotations

import gc
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import helpers` from any test module

from helpers.paths import CONF, TRACES  # noqa: E402

# Every fixture lives here or in a fixture plugin of tests/helpers/ registered here (test modules
# define none: tests/test_layers.py checks it), grouped by the tests that take them. A fixture that
# builds data (a sweep folder, a capture, a parsed trace) is session-scoped even when one module
# uses it: a module-scoped one is built again whenever xdist hands its worker that module's tests
# after another module's; module scope is kept for those that patch or extend the process
# (sys.path, a monkeypatched reader).
pytest_plugins = ["helpers.fixtures_analysis", "helpers.fixtures_capture", "helpers.fixtures_readers",
                  "helpers.fixtures_runtimes"]


@pytest.fixture
def contention_rule(monkeypatch) -> None:
    """The contended-job rule at its own threshold (pytest_configure turns it off for the suite)."""
    monkeypatch.delenv("YOLOPROF_CONTENDED_CORES", raising=False)


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    if not TRACES.is_dir():
        pytest.skip("shared/fixtures/traces is not beside this checkout")
    return TRACES


def pytest_configure(config) -> None:
    """A run started in the background (`cmd &`, nohup) inherits SIGINT ignored, and so would every
    capture it starts: the Ctrl-C tests need Python's own handler, as in a terminal.

    Under xdist, each worker's torch gets its share of the cores (at least one intra-op thread).
    torch's default is every core in every worker: on 2 cores, two workers each spinning two
    OpenMP threads made a plain 20-step training test take 43 s instead of 5. Captures still set
    their own recorded thread count (settings.threads); this is only the default in between."""
    # hermetic noise floors: no test reads (or writes) the user's stored run-to-run noise floors
    os.environ["YOLOPROF_NOISE_FILE"] = os.path.join(tempfile.gettempdir(), f"yoloprof-test-noise-{os.getpid()}.json")
    # the suite's workers share the machine (xdist -n auto on 2 cores): every real capture runs
    # beside another test, so all would be "contended" and their verdicts withheld. Tests of that
    # rule (test_sweep_contention.py, test_capturing_contention.py, the identical-work sweep of
    # test_sweep_adaptive.py) put the default back (the `contention_rule` fixture).
    os.environ["YOLOPROF_CONTENDED_CORES"] = "inf"
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))
    # The xdist controller: hand tests out two at a time (its default first gives each worker a
    # quarter of its share in one consecutive block), so the long tests ordered first below spread
    # over the workers and no worker is left with a long tail while the others idle.
    if getattr(config.option, "maxschedchunk", "absent") is None:
        config.option.maxschedchunk = 2


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked `slow` first (stable order otherwise): long tests started last are what leaves
    a core idle at the end of an xdist run. Every worker sorts the same way, as xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session) -> None:
    """Freeze the test process's heap once collection has built it (gc.freeze): torch, pandas,
    Hydra, hypothesis and every test module are a million objects that each full collection would
    walk again, 0.3-0.8 s a time; a worker ran about 120 full collections, 60 s of a run's CPU
    between the two workers (a capture collects before each trial, and parsing a fixture trace into
    Python objects triggers several). Frozen objects are still freed by reference counting; only
    cycles among them wait for the end of the process. A capture inside a test sees the freeze and
    leaves it as it is (capturing/passes/heap.py); the tests of that freeze use `unfrozen_heap`."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)  # after the test's fixtures are torn down
def pytest_runtest_teardown(item, nextitem) -> None:
    """After each test, what it left alive (modules imported lazily: torch._dynamo, scipy, plotly;
    caches) joins the frozen heap; the collection first walks only what the test made."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def hydra_compose():
    """DESIGN.md's compose fixture: initialize_config_dir + compose over the repository's conf/,
    with yoloprof's structured schema registered; returns `compose(overrides)`."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from yoloprof.config.schema import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield lambda overrides=(): compose(config_name="config", overrides=list(overrides))
    GlobalHydra.instance().clear()


@pytest.fixture
def unfrozen_heap():
    """The heap as in a process that froze nothing (this test process freezes its own, above)."""
    gc.unfreeze()
    yield
    gc.freeze()


@pytest.fixture(autouse=True)
def _optuna_logs_to_the_current_stderr():
    """Optuna creates its log handler once per process, bound to the sys.stderr of that moment. In an
    xdist worker that can be the capsys stream of whichever test first ran a search sweep, closed
    when that test ends: a later search in the worker then prints a logging traceback. Each test
    rebinds the handler (when optuna is loaded) to the stderr it starts with."""
    handler = getattr(sys.modules.get("optuna.logging"), "_default_handler", None)
    if handler is not None:
        handler.stream = sys.stderr  # not setStream: that flushes the old stream, maybe closed
    yield


@pytest.fixture(autouse=True, scope="session")
def _private_machine_registry(tmp_path_factory):
    """Sweep jobs take a machine-wide lock (yoloprof/sweep/machine.py); each test session gets its
    own, so test runs started side by side do not wait for each other's jobs."""
    os.environ["YOLOPROF_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("yoloprof-runtime"))
    # Ultralytics writes its settings file where this says on its first import (else the home folder)
    os.environ.setdefault("YOLO_CONFIG_DIR", str(tmp_path_factory.mktemp("ultralytics-config")))
    yield


@pytest.fixture
def slow_start():
    """tests/assets/slow_start.py, importable by its dotted name (`--model slow_start.SlowStart`),
    with its per-process call history emptied: the model is slow again on its next 6 calls."""
    assets = str(Path(__file__).resolve().parent / "assets")
    sys.path.insert(0, assets)
    try:
        import slow_start as mod

        mod.reset()
        yield mod
    finally:
        sys.path.remove(assets)


@pytest.fixture
def sweep_env(tmp_path, monkeypatch):
    """Run sweeps in tmp_path with the fake capture; returns a function giving the sweep dirs."""
    import yoloprof.capturing.builtin.capture_entry as capture_api
    from helpers.fake_sweep import fake_capture

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(capture_api, "capture", fake_capture)
    for var in ("YOLOPROF_SWEEP_ID", "YOLOPROF_LAUNCHER", "YOLOPROF_RERUN", "FAKE_FAIL_BATCH", "FAKE_OOM_BATCH",
                "FAKE_SLEEP"):
        monkeypatch.delenv(var, raising=False)
    for name in [m for m in sys.modules if m == "mymodels" or m.startswith("mymodels.")]:
        monkeypatch.delitem(sys.modules, name)  # each test writes its own mymodels.py in its tmp_path

    def sweep_dirs(name: str = "adhoc") -> list[Path]:
        return sorted((tmp_path / "runs" / "profile" / "sweeps" / name).iterdir())
    return sweep_dirs


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """Fake SLURM commands on PATH, sweeps written under tmp_path; returns the fake's state reader."""
    import fakeslurm
    from yoloprof.sweep import sweeper

    env = fakeslurm.install(tmp_path / "bin", tmp_path / "slurm")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("FAKE_SLURM_PREEMPT", raising=False)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    # ask sacct every second, not every few minutes (each call is a Python process, ~0.03 s of
    # CPU; submitit asks while any job has no result yet; a finished job is seen by its result file)
    from submitit.slurm.slurm import SlurmJob
    monkeypatch.setattr(SlurmJob.watcher, "_delay_s", 1.0)
    # the fake never requeues a PREEMPTED task (it shows REQUEUED instead): no need to wait long
    monkeypatch.setattr(sweeper, "PREEMPTED_GRACE_S", 0.5)
    return fakeslurm


@pytest.fixture
def fake_jobs(monkeypatch):
    """The sweep's job processes run the fake capture (they are about the scheduler's path, not
    the capture). Returns the check that a sweep's ok rows hold the fake's numbers, recomputed:
    those jobs did run the fake, in their own processes."""
    from helpers.fake_sweep import fake_jobs_env, fake_step_ms

    for key, value in fake_jobs_env().items():
        monkeypatch.setenv(key, value)
    for var in ("FAKE_SLEEP", "FAKE_HOLD_TASK", "FAKE_FAIL_BATCH", "FAKE_OOM_BATCH", "FAKE_PEAK_MEM_PER_IMAGE"):
        monkeypatch.delenv(var, raising=False)

    def check(df) -> None:  # a pandas DataFrame of rows
        for row in df.itertuples():
            steps = [fake_step_ms(row.batch, row.imgsz, row.trial, r) for r in range(row.repeat)]
            assert row.device_name == "fake-cpu" and list(row.step_ms_samples) == pytest.approx(steps)
    return check
