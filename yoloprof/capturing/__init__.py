"""The capture layer: measuring a model (the built-in capture behind `yoloprof run|infer` and
sweep jobs) or the user's own loop, and writing profile.json. The public entry points are
`yoloprof.capture(...)`, `yoloprof.profile(...)`, `yoloprof.timeit` and `yoloprof.profileit`
(yoloprof/__init__.py); docs/CONTRACTS.md "Capture" lists the subpackages, each of which
imports only the ones below it (.importlinter):

    userloop  yoloprof.profile() around the user's loop, @timeit, @profileit
    builtin   the capture of `yoloprof run|infer`: settings -> trials -> profile.json
    passes    what both run: the timing pass, the trace pass, the step calls, steady state
    extras    sections recorded outside the timed steps: modules, hotspots, facts, NVTX, TB
    device    torch devices and clocks, GPU abilities, peak memory, FLOPs, the environment
"""
