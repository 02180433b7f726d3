"""Property suite: mutants of real traces and real profiles through every reader end in a documented
outcome. For each mutant and reader: the exit code is a documented one (0, 1 or 2 for readers), a
failure is exactly one line `yoloprof: error: ...` that is never an internal error, a success
prints only `yoloprof: warning: ...` (or `get`'s `yoloprof: note: ...`) lines on stderr (no numpy RuntimeWarning among them) and valid
JSON without NaN or Infinity on stdout.

Bases: the small fixture traces (skipped when the shared fixtures are absent), a truncated copy of a
large one, the profile a trace becomes, and the profile of a real (tiny, CPU) capture. The CLI runs
in-process (`main(argv)`); hypothesis is derandomised with a fixed budget so the suite is the same
on every run and stays within seconds.
"""

from __future__ import annotations

import copy
import gzip
import importlib.util
import io
import json
import math
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from hypothesis import HealthCheck, given, settings, strategies as st

from helpers.fixtures_readers import TRUNCATE_FROM
from yoloprof.cli import main

EXAMPLES = 15
SETTINGS = settings(max_examples=EXAMPLES, deadline=5000, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])
READER_CODES = {0, 1, 2}
# Each reader as the argv after the file; compare takes the mutant on either side.
READERS = {
    "summary": ["summary", "{f}", "--json"],
    "get": ["get", "{f}", "step_ms"],
    "get-list": ["get", "{f}", "--json"],
    "phases": ["phases", "{f}", "--json"],
    "kernels": ["kernels", "{f}", "--json"],
    "ops": ["ops", "{f}", "--json"],
    "what-if-category": ["what-if", "{f}", "--remove-category", "gemm", "--json"],
    "what-if-launches": ["what-if", "{f}", "--remove-launches", "10", "--json"],
    "compare-before": ["compare", "{f}", "{base}", "--json"],
    "compare-after": ["compare", "{base}", "{f}", "--json"],
}
_SUCCESS_LINES = ("yoloprof: warning: ", "yoloprof: note: ")  # `get` notes an n/a field on stderr
_NUMPY_CHATTER = re.compile(r"encountered in|RuntimeWarning|Traceback")
# Typed validation of profile.json on load (yoloprof/profiles/validate.py) is being landed by another
# change; until it is on this branch, the profile properties are expected to find internal errors.
_VALIDATION = importlib.util.find_spec("yoloprof.profiles.validate") is not None
pending_validation = pytest.mark.xfail(not _VALIDATION, strict=False,
                                       reason="typed profile validation not landed yet")


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in JSON output")


def run_reader(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_documented(argv: list[str]) -> int:
    code, out, err = run_reader(argv)
    where = f"{' '.join(argv)} -> {code}\n{err}"
    assert code in READER_CODES, where
    lines = err.splitlines()
    if code:
        assert len(lines) == 1 and lines[0].startswith("yoloprof: error: "), where
        assert "internal error" not in lines[0], where
    else:
        assert all(ln.startswith(_SUCCESS_LINES) for ln in lines), where
        assert not _NUMPY_CHATTER.search(err), where
        if "--json" in argv:
            json.loads(out, parse_constant=_reject_constant)
    return code


# --------------------------------------------------------------------------------------------
# bases (built once per session)


# --------------------------------------------------------------------------------------------
# mutations

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([0.0, -1.0, 1e308, -1e308, 1e-308, 2**63, -2**63, 2**64, 1e19, 5e15]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(["", "0x1", "nan", "Infinity", "1e308", "kernel", "cpu_op", "X", "i", "[memory]"]),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3),
                    st.dictionaries(st.text(max_size=5), _SCALARS, max_size=3))
_EVENT_KEYS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "s", "bp")
_TOP_KEYS = ("traceEvents", "deviceProperties", "schemaVersion", "distributedInfo", "displayTimeUnit",
             "baseTimeNanoseconds", "traceName")


@st.composite
def trace_mutation(draw, docs: dict) -> bytes:
    doc = copy.deepcopy(docs[draw(st.sampled_from(sorted(docs)))])
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["set", "delete-key", "delete-event", "top", "duplicate"]))
        if kind == "top":
            key = draw(st.sampled_from(_TOP_KEYS))
            if draw(st.booleans()):
                doc[key] = draw(_VALUES)
            else:
                doc.pop(key, None)
            events = doc.get("traceEvents") if isinstance(doc.get("traceEvents"), list) else []
            continue
        if not events:
            continue
        i = draw(st.integers(0, len(events) - 1))
        ev = events[i]
        if kind == "delete-event":
            del events[i]
        elif kind == "duplicate":
            events.insert(i, copy.deepcopy(ev))
        elif not isinstance(ev, dict):
            events[i] = draw(_VALUES)
        elif kind == "delete-key":
            ev.pop(draw(st.sampled_from(_EVENT_KEYS)), None)
        else:
            ev[draw(st.sampled_from(_EVENT_KEYS))] = draw(_VALUES)
    data = json.dumps(doc).encode()
    return _byte_mutation(draw, data)


def _byte_mutation(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["none", "none", "truncate", "flip", "gzip", "gzip-truncate"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "flip":
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        return data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]
    if kind == "gzip":
        return gzip.compress(data, 1)
    if kind == "gzip-truncate":
        packed = gzip.compress(data, 1)
        return packed[: draw(st.integers(0, len(packed)))]
    return data


def _paths(obj, prefix=()):
    """Every (path, value) inside a JSON document, containers included."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:5]):
            yield from _paths(v, prefix + (i,))


@st.composite
def profile_mutation(draw, profiles: dict) -> bytes:
    doc = copy.deepcopy(profiles[draw(st.sampled_from(sorted(profiles)))])
    for _ in range(draw(st.integers(1, 3))):
        depth = draw(st.integers(1, 4))  # shallow paths as often as deep ones: whole sections too
        paths = [p for p, _ in _paths(doc) if 0 < len(p) <= depth]
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and draw(st.booleans()) and path[-1] != "schema":
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = draw(_VALUES)
    if draw(st.booleans()):  # key order must not matter (jq -S)
        doc = dict(sorted(doc.items()))
    return _byte_mutation(draw, json.dumps(doc).encode())


def _argv(reader: str, path: Path, base: str) -> list[str]:
    return [a.format(f=path, base=base) for a in READERS[reader]]


# --------------------------------------------------------------------------------------------
# properties


@pytest.mark.parametrize("reader", sorted(READERS))
def test_trace_mutants_end_in_a_documented_outcome(bases, tmp_path, reader):
    @SETTINGS
    @given(data=trace_mutation(bases["docs"]))
    def check(data: bytes) -> None:
        path = tmp_path / "mutant.json"
        path.write_bytes(data)
        assert_documented(_argv(reader, path, bases["base_trace"]))

    check()


@pending_validation
@pytest.mark.parametrize("reader", sorted(READERS))
def test_profile_mutants_end_in_a_documented_outcome(bases, tmp_path, reader):
    @SETTINGS
    @given(data=profile_mutation(bases["profiles"]))
    def check(data: bytes) -> None:
        path = tmp_path / "mutant_profile.json"
        path.write_bytes(data)
        assert_documented(_argv(reader, path, bases["base_profile"]))

    check()


def test_truncated_real_trace_is_exit_1(bases, tmp_path):
    if bases["truncated"] is None:
        pytest.skip(f"{TRUNCATE_FROM} is not available")
    path = tmp_path / "truncated.json"
    path.write_bytes(bases["truncated"])
    assert assert_documented(["summary", str(path)]) == 1


@pytest.mark.parametrize("content,code", [
    (b"", 1), (b"   \n", 1), (b"not json", 1), (b"[]", 1), (b"{}", 1), (b"null", 1), (b"\x1f\x8b\x08junk", 1),
    (b'{"schema": "yoloprof.profile/99", "kind": "train"}', 1),
    pytest.param(b'{"schema": "yoloprof.profile/1", "metrics": "x"}', 1, marks=pending_validation),
    pytest.param(b'{"schema": "yoloprof.profile/1", "phases": 5}', 1, marks=pending_validation),
    (b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": NaN, "name": "a", "cat": "cpu_op"}]}', 1),
])
def test_documented_input_classes(tmp_path, content, code):
    path = tmp_path / "input.json"
    path.write_bytes(content)
    for reader in ("summary", "get-list", "phases", "kernels", "ops", "what-if-launches"):
        assert assert_documented(_argv(reader, path, str(path))) == code


def test_missing_file_and_folder_are_exit_2(tmp_path):
    assert assert_documented(["summary", str(tmp_path / "nope.json")]) == 2
    assert assert_documented(["phases", str(tmp_path)]) == 2


def test_suite_budget_is_fixed():
    assert SETTINGS.max_examples == EXAMPLES and math.isfinite(SETTINGS.deadline.total_seconds())
