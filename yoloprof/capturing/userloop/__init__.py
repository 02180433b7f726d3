"""Measuring the user's own code: `yoloprof.profile(...)` around a loop (its clock, device and
checks) and the `@yoloprof.timeit` / `@yoloprof.profileit` decorators (docs/userloop.md).
"""
