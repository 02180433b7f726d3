"""Fixtures of the reader tests: profiles and traces written for them, folders of rank traces,
the property suite's mutation bases (registered by tests/conftest.py through `pytest_plugins`)."""

from __future__ import annotations

import copy
import gzip
import json
from importlib import resources
from pathlib import Path

import msgspec
import pytest

from helpers.kineto_synth import step_trace
from helpers.libreyolo_made import gpu_profile, inference_profile, repeat_profile, train_profile
from helpers.paths import TRACES, run_main, trace_path
from helpers.profiles import cpu_train_profile, gpu_train_profile, infer_profile
from yoloprof.metrics.categories import classify
from yoloprof.profiles.io import write_profile
from yoloprof.readers import cache, large
from yoloprof.readers.load import load_any
from yoloprof.readers.ranks import read_ranks
from yoloprof.traces.to_profile import profile_from_trace_bytes

# --- the fixtures of tests/test_metrics_categories.py

class _Ev(msgspec.Struct):
    cat: str = ""
    name: str = ""


class _Doc(msgspec.Struct):
    traceEvents: list[_Ev]


def fixture_names() -> set[str]:
    if not TRACES.is_dir():
        pytest.skip("fixture traces are not available")
    names: set[str] = set()
    for path in sorted(TRACES.glob("*.json.gz")):
        # msgspec (not the engine's parser) only to keep this fast on the 54 MB fixture.
        doc = msgspec.json.decode(gzip.decompress(path.read_bytes()), type=_Doc)
        names.update(e.name for e in doc.traceEvents if e.cat in ("kernel", "gpu_memcpy", "gpu_memset"))
    return names


@pytest.fixture(scope="session")
def names() -> set[str]:
    return fixture_names()


# --- the fixtures of tests/test_cli_errors.py

@pytest.fixture
def good(tmp_path):
    from yoloprof.profiles.io import write_profile
    from yoloprof.profiles.model import empty_profile, metric

    p = empty_profile("train", config={"batch": 2}, env={})
    p["metrics"] = {"step_ms": metric([10.0, 11.0], "ms", "lower")}
    path = tmp_path / "good.json"
    write_profile(path, p)
    return str(path)


# --- the fixtures of tests/test_cli_readers.py

@pytest.fixture(scope="module")
def one_parse_per_fixture_trace():
    """Each shared fixture trace is parsed once per worker, by the first reader that asks; the
    other readers get a copy of that profile. These tests are about the readers and the command
    line on real traces (the parse has its own tests, and the subprocess runs here parse as a user
    does); five readers times two outputs used to parse each trace ten times."""

    from yoloprof.readers import load

    real, parsed = load.load_any, {}

    def load_any(path, select=None):
        if Path(path).parent != TRACES or select:
            return real(path, select)
        if path not in parsed:
            parsed[path] = real(path)
        return copy.deepcopy(parsed[path])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(load, "load_any", load_any)
        yield


@pytest.fixture(scope="session")
def profiles(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("profiles")
    out = {}
    for name, build in (("gpu", gpu_train_profile), ("cpu", cpu_train_profile), ("infer", infer_profile)):
        out[name] = write_profile(d / f"{name}.json", build())
    return out


# --- the fixtures of tests/test_readers_properties.py

SMALL_TRACES = ("triton_example.json.gz", "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                "benchmark_result_2869224_1695835535_trace.json.gz")

TRUNCATE_FROM = "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


@pytest.fixture(scope="session")
def bases(tmp_path_factory, traces_dir) -> dict[str, object]:
    TRACES = traces_dir
    root = tmp_path_factory.mktemp("property_bases")
    docs = {name: json.loads(gzip.decompress((TRACES / name).read_bytes()))
            for name in SMALL_TRACES if (TRACES / name).is_file()}
    if not docs:
        pytest.skip("no small fixture trace available")
    truncated = None
    if (TRACES / TRUNCATE_FROM).is_file():
        raw = gzip.decompress((TRACES / TRUNCATE_FROM).read_bytes())
        truncated = raw[: len(raw) // 7]
    from yoloprof.profiles.io import dumps_profile

    trace_file = root / "base_trace.json"
    first = next(iter(docs))
    trace_file.write_text(json.dumps(docs[first]))
    profiles = {"from_trace": load_any(trace_file)}
    profiles["capture"] = _tiny_capture(root)
    base_profile = root / "base_profile.json"
    base_profile.write_bytes(dumps_profile(profiles["capture"]))
    return {"docs": docs, "truncated": truncated, "profiles": profiles, "root": root,
            "base_trace": str(trace_file), "base_profile": str(base_profile)}


def _tiny_capture(root: Path) -> dict:
    """A real profile: a tiny CPU inference capture with its trace pass (about a second)."""
    proc = run_main("infer", "--device", "cpu", "--imgsz", "64", "--runs", "2", "--warmup", "1",
                    "--project", str(root / "cap"), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "cap" / "infer" / "profile.json").read_text())


# --- the fixtures of tests/test_readers_ranks.py

STRETCH, SLOW_RANK = 1.5, 2  # rank 2 is the straggler: its compute kernels take 1.5x as long


def _write_ranks(folder, doc, names, stretch_rank=None):
    folder.mkdir()
    for rank, name in enumerate(names):
        events = []
        for ev in doc["traceEvents"]:
            ev = dict(ev)
            if isinstance(ev.get("ts"), (int, float)):
                ev["ts"] = ev["ts"] + 1000.0 * rank  # ranks start at different times
            if rank == stretch_rank and ev.get("cat") == "kernel" and classify(ev["name"]) != "communication":
                ev["dur"] = ev["dur"] * STRETCH
            events.append(ev)
        out = {**doc, "traceEvents": events,
               "distributedInfo": {**doc.get("distributedInfo", {}), "rank": rank, "world_size": len(names)}}
        data = msgspec.json.encode(out)
        (folder / name).write_bytes(gzip.compress(data, 1) if name.endswith(".gz") else data)
    return folder


@pytest.fixture(scope="session")
def source_doc():
    return json.loads(gzip.decompress(trace_path("nccl_data.json.gz").read_bytes()))


@pytest.fixture(scope="session")
def rank_dirs(tmp_path_factory, source_doc):
    base = tmp_path_factory.mktemp("ranks")
    names = ["rank0.json", "rank1.json.gz", "host.123.pt.trace.json"]
    even = _write_ranks(base / "even", source_doc, names)
    slow = _write_ranks(base / "slow", source_doc, names, stretch_rank=SLOW_RANK)
    (slow / "notes.txt").write_text("not a trace")
    return even, slow


@pytest.fixture(scope="session")
def views(rank_dirs):
    even, slow = rank_dirs
    return read_ranks(even, jobs=2), read_ranks(slow, jobs=2)


# --- the fixtures of tests/test_readers_cache.py

def uniform_step_trace(kernel_us: float, steps: int = 4) -> bytes:
    return step_trace([kernel_us] * steps)


@pytest.fixture
def big(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(large.STREAM_MIN_ENV, "0")
    monkeypatch.delenv(cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    path = tmp_path / "trace.json"
    path.write_bytes(uniform_step_trace(100.0))
    return path


# --- the fixtures of tests/test_readers_engine.py

@pytest.fixture(scope="session")
def rank_apr():
    t = trace_path("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    return profile_from_trace_bytes(gzip.decompress(t.read_bytes()), t.name)


# --- the fixtures of tests/test_readers_profiles.py

@pytest.fixture(scope="session")
def schema() -> dict:
    return json.loads(resources.files("yoloprof.profiles").joinpath("profile.schema.json").read_text())


# --- the fixtures of tests/test_readers_select.py

KERNEL_US = [100.0, 200.0, 400.0, 800.0, 1600.0]  # steps 1..5


@pytest.fixture(params=["whole", "stream"])
def trace(request, tmp_path, monkeypatch):
    monkeypatch.setenv(large.STREAM_MIN_ENV, "0" if request.param == "stream" else "100000")
    monkeypatch.setenv("YOLOPROF_CACHE", "off")
    path = tmp_path / "trace.json"
    path.write_bytes(step_trace(KERNEL_US))
    return path


# libreyolo's own files, made by its code (tests/test_readers_libreyolo.py; skipped without libreyolo)
@pytest.fixture(scope="session")
def infer_made(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("lry_infer")
    return out / "profile.json", inference_profile(out)


@pytest.fixture(scope="session")
def gpu_made(tmp_path_factory) -> Path:
    return gpu_profile(tmp_path_factory.mktemp("lry_gpu"))


@pytest.fixture(scope="session")
def repeat_made(tmp_path_factory) -> Path:
    """`libreyolo profile infer --repeat 3 --project ly/rep` run in a folder: its infer_repeat.json."""
    return repeat_profile(tmp_path_factory.mktemp("lry_repeat"))


@pytest.fixture(scope="session")
def train_made(tmp_path_factory) -> Path:
    """libreyolo's training profiler around a tiny CPU loop: its profile.json (and trace)."""
    return train_profile(tmp_path_factory.mktemp("lry_train"))
