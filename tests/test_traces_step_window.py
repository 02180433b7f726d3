"""A window of steps on a GPU that lags the CPU, and the default steps of a read trace (issue 36).

The reference is a plain-Python recomputation from the raw JSON: a kernel belongs to the step its
launch is in (DESIGN.md section 5); the device time of a window of steps is the union of the
device intervals launched in them, and its wall runs from the first of those intervals to the
last (the device's own span for those steps). On rank-0.Apr the GPU runs about 90 ms behind
the CPU, so step N's kernels run during step N+1's CPU span.
"""

from __future__ import annotations

import gzip
import json

import pytest

from helpers.paths import trace_path
from yoloprof.metrics.steady import leading_warmup
from yoloprof.readers.select import load_selected
from yoloprof.traces.step_selection import StepSelection
from yoloprof.traces.to_profile import profile_from_trace_bytes

APR = "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _apr_path():
    path = trace_path(APR)
    if not path.is_file():
        pytest.skip("fixture traces absent")
    return path


def _plain_window(lo_step: int, hi_step: int) -> tuple[float, float, float]:
    """(utilisation %, mean wall ms per step, the CPU start of step lo) of ProfilerStep#lo..hi,
    from the raw JSON; the wall from the first device interval launched in them to the last."""
    events = json.loads(gzip.decompress(_apr_path().read_bytes()))["traceEvents"]
    steps = {int(e["name"].split("#")[1]): (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
             for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and str(e.get("name", "")).startswith("ProfilerStep#")}
    lo, hi = steps[lo_step][0], steps[hi_step][1]
    launch = {e["args"]["correlation"]: float(e["ts"]) for e in events
              if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("cat") in DEVICE_CATS and lo <= launch.get(e["args"].get("correlation"), -1.0) < hi)
    busy, cur_s, cur_e = 0.0, None, None
    for s, t in spans:
        if cur_e is None or s > cur_e:
            busy += 0.0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, t
        else:
            cur_e = max(cur_e, t)
    busy += cur_e - cur_s
    wall = max(t for _, t in spans) - min(s for s, _ in spans)
    return 100.0 * busy / wall, wall / 1000.0 / (hi_step - lo_step + 1), min(s for s, _ in spans) - lo


def test_a_window_of_steps_on_a_lagging_gpu_counts_the_devices_own_span():
    want, wall_ms, _ = _plain_window(103, 105)
    assert want == pytest.approx(98.8, abs=0.05) and wall_ms == pytest.approx(95.5, abs=0.1)
    profile = load_selected(_apr_path(), StepSelection(steps=(103, 105)))
    util = profile["metrics"]["device_util_pct"]["value"]
    assert util == pytest.approx(want, abs=1.0)  # was 75.3: the step before's tail counted as idle
    assert profile["verdict"]["bound"] != "host"
    assert profile["trace"]["device_window_ms"] / 3 == pytest.approx(wall_ms, rel=0.01)


def test_every_step_reads_as_before():
    """From the trace's first step on, nothing was launched before it: the window opens at the
    step's CPU start (the device idles 3.5 ms while the host prepares the first kernel), and
    reads as it did before the change (97.71%)."""
    dev_util, wall_ms, idle_ms = _plain_window(101, 105)
    with_idle = dev_util * wall_ms * 5 / (wall_ms * 5 + idle_ms / 1000.0)
    profile = load_selected(_apr_path(), StepSelection(steps=(101, 105)))
    assert profile["metrics"]["device_util_pct"]["value"] == pytest.approx(with_idle, abs=0.01)
    assert with_idle == pytest.approx(97.71, abs=0.01)


def test_a_read_trace_leaves_its_warm_up_steps_out_and_says_which():
    profile = profile_from_trace_bytes(gzip.decompress(_apr_path().read_bytes()), APR)
    assert profile["trace"]["step_ids"] == [103, 104, 105]
    note = next(w for w in profile["warnings"] if "warm-up" in w)
    assert "101, 102" in note and "--steps 101-105" in note
    assert profile["metrics"]["step_ms"]["value"] == pytest.approx((95.697341 + 95.551087 + 95.699037) / 3)
    assert profile["metrics"]["device_util_pct"]["value"] == pytest.approx(98.8, abs=1.0)
    assert not any("exceeds the step's wall time" in w for w in profile["warnings"])


@pytest.mark.parametrize("times,want", [
    ([35.1, 72.1, 95.7, 95.6, 95.7], 2),  # rank-0.Apr: fast first steps (the GPU queue filling)
    ([300.0, 100.0, 101.0, 99.0, 100.0], 1),  # one slow first step
    ([159.4, 149.0, 148.7, 151.7, 153.2, 155.7], 0),  # the plugin's resnet50: noise, no warm-up
    ([345.8, 365.3, 346.1, 344.3, 336.3], 0),  # df_index_resolver
    ([209.7, 216.5, 216.1, 215.5, 216.2], 1),  # rank0.json: 3% off a series flat to 0.5%
    ([10.0, 10.0, 10.0, 100.0, 100.0, 100.0], 3),  # at most half the steps go
    ([35.0, 95.0, 95.0], None),  # too few to tell
])
def test_leading_warmup_on_hand_made_series(times, want):
    assert leading_warmup(times) == want


def _synthetic(tmp_path, kernel_us: list[float], lo: int, hi: int) -> float:
    from helpers.kineto_synth import step_trace

    path = tmp_path / "t.json"
    path.write_bytes(step_trace(kernel_us))
    return load_selected(path, StepSelection(steps=(lo, hi)))["metrics"]["device_util_pct"]["value"]


def test_a_device_done_before_the_window_opens_it_at_the_first_steps_start(tmp_path):
    """Hand-worked: steps start every 1000 us and last 900; each launches one 100 us kernel 30 us
    in. Steps 2-3: the step before's kernel ended at 130 us, before step 2's start at 1000, so
    the window is 1000..2900 us (the last step's end) and the device busy 200 us of it."""
    assert _synthetic(tmp_path, [100.0] * 4, 2, 3) == pytest.approx(100.0 * 200 / 1900)


def test_work_overlapping_the_step_befores_tail_stays_inside_the_window(tmp_path):
    """Hand-worked: step 1's 1500 us kernel runs to 1530 us; step 2's 100 us kernel starts at
    1030 us beside it (another stream, as it were). Step 2's window opens at its own first
    kernel (1030 us), not at 1530 us, which would leave that kernel outside: 100 us of 870."""
    assert _synthetic(tmp_path, [1500.0, 100.0, 100.0, 100.0], 2, 2) == pytest.approx(100.0 * 100 / 870)
