"""capturing/passes/heap.py: each timed trial starts after its predecessors' garbage is collected, the heap
from before the capture is frozen only while it runs, and a caller's own freeze is left alone.
Checked with weak references to hand-built reference cycles (collected or not), not timings."""

from __future__ import annotations

import gc
import weakref

import pytest

from yoloprof.capturing.passes.heap import fresh_heap, frozen_heap

pytestmark = pytest.mark.usefixtures("unfrozen_heap")  # conftest freezes the test process's heap


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def _cycle() -> weakref.ref:
    return weakref.ref(Node())


def test_garbage_made_inside_is_collected_by_each_fresh_heap():
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        for _ in range(3):  # one "trial" after another
            ref = _cycle()
            assert ref() is not None
            fresh_heap()
            assert ref() is None
    assert gc.get_freeze_count() == 0


def test_the_heap_from_before_is_frozen_until_the_block_ends():
    node = Node()
    ref = weakref.ref(node)
    with frozen_heap():
        del node  # garbage now, but frozen with the heap it belonged to
        fresh_heap()
        assert ref() is not None
    gc.collect()
    assert ref() is None


def test_a_callers_own_freeze_is_left_as_it_was():
    gc.collect()
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        ref = _cycle()
        with frozen_heap():
            fresh_heap()
            assert ref() is None  # still a working collection inside
        assert gc.get_freeze_count() == before  # not unfrozen on the caller's behalf
    finally:
        gc.unfreeze()


def test_an_error_inside_still_unfreezes():
    try:
        with frozen_heap():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0


def test_a_capture_times_its_trials_inside_the_freeze_and_undoes_it(monkeypatch, tmp_path):
    """Each trial's fresh_heap ran with the heap frozen, and the caller's heap is unfrozen after."""
    import yoloprof.capturing.passes.timing as timing
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.capture_settings import CaptureSettings

    seen: list[int] = []
    real = timing.fresh_heap
    monkeypatch.setattr(timing, "fresh_heap", lambda: (seen.append(gc.get_freeze_count()), real()))
    settings = CaptureSettings.for_mode("infer", device="cpu", size="n", imgsz=32, batch=1, warmup=1, runs=1,
                                        repeat=2, trace=False, modules=False)
    capture(settings, tmp_path, echo_warnings=False)
    assert len(seen) == 2 and all(n > 0 for n in seen)
    assert gc.get_freeze_count() == 0


def test_a_user_loop_block_is_frozen_and_undone_even_when_it_fails(tmp_path):
    """`yoloprof.profile` freezes the heap for its block, collects before the timed window, and
    unfreezes when the block ends, whether it wrote a profile or the user's code raised."""
    import yoloprof

    seen = []
    with yoloprof.profile(tmp_path, warmup=0, steps=1, trace_steps=0, flops=False, modules=False) as prof:
        while not prof.done:
            seen.append(gc.get_freeze_count())
            prof.step()
    assert seen and all(n > 0 for n in seen) and gc.get_freeze_count() == 0
    with pytest.raises(KeyError):
        with yoloprof.profile(tmp_path / "b", warmup=0, steps=1, trace_steps=0, flops=False, modules=False):
            assert gc.get_freeze_count() > 0
            raise KeyError("the user's error")
    assert gc.get_freeze_count() == 0
