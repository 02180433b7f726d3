"""How much CPU other processes took while a capture ran: a condition of the job, measured and
recorded like its threads (DESIGN.md section 9 "Tune"; docs/analysis.md "Contended jobs").

Definition (Linux, all in clock ticks of `/proc`, USER_HZ):
- the machine's busy time B = user + nice + system + irq + softirq + steal of the `cpu` line of
  `/proc/stat` (guest time is already inside user and nice; steal is time a virtual machine's CPUs
  were taken by others, so it counts as contention too), its total T = B + idle + iowait, and its
  cores N = the `cpuN` lines (the online CPUs);
- this process tree's own time O = utime + stime + cutime + cstime of this process and of every
  live descendant (`/proc/<pid>/task/*/children`, recursively: DataLoader workers, subprocesses;
  a descendant that ended and was waited for is inside its parent's cutime/cstime, so it is
  counted whichever side of the window it ended on);
- over a window, with D(x) = x at its end minus x at its start and the window's length in
  core-ticks W = D(T) / N: other processes used max(0, D(B) - D(O)) / W cores, and the tree
  itself D(O) / W cores.

Each reading is two small reads (`/proc/stat`, `/proc/self/stat`) plus one `children` file per
thread and descendant. Ticks are 10 ms: a window of a tenth of a second is only good to about a
fifth of a core, so a job is judged on its whole capture's window, and trials' own windows are
recorded beside it. Elsewhere (no `/proc/stat`) the section says n/a and why.
"""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

PROC = Path("/proc")
_BUSY = (0, 1, 2, 5, 6, 7)  # user nice system [idle iowait] irq softirq steal (guest: inside user/nice)
_IDLE = (3, 4)
NOT_LINUX = "no /proc/stat on this system (not Linux): other processes' CPU is not measured"


@dataclass(frozen=True)
class Reading:
    """The machine's and this process tree's CPU ticks at one moment."""

    busy: int
    total: int
    own: int
    cores: int


def _machine(proc: Path) -> tuple[int, int, int]:
    """(busy, total, cores) from /proc/stat."""
    busy = total = cores = 0
    with open(proc / "stat", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("cpu "):
                ticks = [int(v) for v in line.split()[1:]]
                ticks += [0] * (8 - len(ticks))
                busy = sum(ticks[i] for i in _BUSY)
                total = busy + sum(ticks[i] for i in _IDLE)
            elif line.startswith("cpu"):
                cores += 1
            elif cores:
                break
    return busy, total, cores


def _process_ticks(proc: Path, pid: int) -> int:
    """utime + stime + cutime + cstime of one process (0 if it is gone)."""
    try:
        text = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0
    fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": state is field 3 of stat
    return sum(int(fields[i]) for i in (11, 12, 13, 14))


def _children(proc: Path, pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(c) for c in (task / "children").read_text(encoding="ascii").split()]
        except (OSError, ValueError):
            continue
    return out


def own_ticks(proc: Path = PROC, pid: int | None = None) -> int:
    """O of the module doc: this process and its live descendants."""
    todo, seen, total = [os.getpid() if pid is None else pid], set(), 0
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _process_ticks(proc, p)
        todo += _children(proc, p)
    return total


def read(proc: Path = PROC, pid: int | None = None) -> Reading | None:
    """Now; None where there is no /proc/stat."""
    try:
        busy, total, cores = _machine(proc)
    except (OSError, ValueError):
        return None
    return Reading(busy=busy, total=total, own=own_ticks(proc, pid), cores=max(1, cores))


def window(start: Reading | None, end: Reading | None) -> dict[str, Any]:
    """One window's figures (module doc): other_cores, own_cores, seconds; n/a with the reason."""
    if start is None or end is None:
        return {"other_cores": None, "own_cores": None, "seconds": None, "why": NOT_LINUX}
    width = (end.total - start.total) / end.cores
    if width <= 0:
        return {"other_cores": None, "own_cores": None, "seconds": 0.0,
                "why": "the window was shorter than one clock tick"}
    own = end.own - start.own
    tick = os.sysconf("SC_CLK_TCK")  # a reading is Linux's (/proc), which has sysconf
    return {"other_cores": round(max(0.0, (end.busy - start.busy - own) / width), 3),
            "own_cores": round(max(0.0, own / width), 3), "seconds": round(width / tick, 3)}


class Sampler:
    """A capture's window and its trials' windows: `Sampler()` at the start, `trial()` around each
    trial (begin/end), `section()` at the end gives the profile's `contention` block."""

    def __init__(self, proc: Path = PROC) -> None:
        self.proc = proc
        self.start = read(proc)
        self.trials: list[dict[str, Any]] = []
        self._trial: Reading | None = None

    def begin_trial(self) -> None:
        self._trial = read(self.proc)

    def end_trial(self) -> None:
        self.trials.append(window(self._trial, read(self.proc)))

    def section(self) -> dict[str, Any]:
        """The profile's `contention` block (profiles/profile.schema.json)."""
        end = read(self.proc)
        return {"cores": end.cores if end is not None else None, **window(self.start, end),
                "trials": [t["other_cores"] for t in self.trials],
                "trial_seconds": [t["seconds"] for t in self.trials]}


_ACTIVE: ContextVar[Sampler | None] = ContextVar("yoloprof_cpu_sampler", default=None)


@contextlib.contextmanager
def sampling(proc: Path = PROC) -> Iterator[Sampler]:
    """A capture's sampler, found by the timing pass's trials (`trial_begin`/`trial_end`) without
    passing it through every runner."""
    sampler = Sampler(proc)
    token = _ACTIVE.set(sampler)
    try:
        yield sampler
    finally:
        _ACTIVE.reset(token)


def trial_begin() -> None:
    sampler = _ACTIVE.get()
    if sampler is not None:
        sampler.begin_trial()


def trial_end() -> None:
    sampler = _ACTIVE.get()
    if sampler is not None:
        sampler.end_trial()
