"""A callable side for the API's A/B (tests/test_sweep_ab.py), in a module of its own: each fresh
worker imports it by name, and this module imports nothing (a test module would bring pytest and
scipy into every one of those processes, about a second each)."""


def tiny_work() -> None:
    sum(i * i for i in range(2000))
