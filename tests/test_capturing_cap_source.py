"""The warm-up cap warning names what set the cap (issue 36, 5d): the setting, or the data's
size, which a sweep's `capture.warmup_max` never mentions."""

from __future__ import annotations

from types import SimpleNamespace

from yoloprof.capturing.passes.steady_steps import cap_warnings
from yoloprof.capturing.passes.timing import cap_by_data, warmup_cap_of, warmup_used
from yoloprof.config import steady_thresholds
from yoloprof.config.steady_thresholds import warmup_cap


def _settings(warmup=1, steps=4, warmup_max=-1):
    return SimpleNamespace(warmup=warmup, measured=steps, warmup_max=warmup_max)


def test_a_cap_the_data_set_is_named_as_the_data():
    s = _settings()
    # 12 batches: 12 - max(4, test width) warm-up steps at most, below the setting's auto cap
    room = 12 - max(4, steady_thresholds.test_width(4))
    assert room < warmup_cap(1, 4, -1)
    assert warmup_cap_of(s, 12) == room
    by = cap_by_data(s, 12)
    assert by == (f"the data's 12 batches leave room for {room} warm-up steps before the measured ones; "
                  "a larger dataset or fewer steps raises it")
    section = warmup_used(s, [SimpleNamespace(warmup={"steps": room, "steady": False})], room, by)
    [w] = cap_warnings(section)
    assert "the data's 12 batches" in w and "warmup-max" not in w


def test_a_cap_the_setting_set_names_the_flag_and_the_sweep_key():
    s = _settings(warmup_max=3)
    assert cap_by_data(s, 1000) is None
    section = warmup_used(s, [SimpleNamespace(warmup={"steps": 3, "steady": False})], 3, None)
    [w] = cap_warnings(section)
    assert "(the cap: --warmup-max (capture.warmup_max in a sweep) 3)" in w
