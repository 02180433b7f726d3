"""The passes every capture runs, the built-in one and the user's loop alike: the timing pass,
the trace pass, the step calls they time, steady-state warm-up, the heap each trial starts
from, Ctrl-C handling, and the RunResult they hand to profile assembly.
"""
