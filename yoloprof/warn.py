"""The one warning channel: every warning the user sees is one line on stderr,
`yoloprof: warning: <message>`, and a capture also keeps it in the profile's `warnings`.

Python warnings (ours, and library chatter: Pillow on a damaged image, matplotlib on a layout, numpy
on a value) go through the same channel, message only: never the source path and code line that
Python's default printer adds. The CLI turns the channel on for every command (`channel()`); a
capture collects what its run raised (`collecting()`), so the profile and the terminal agree.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections import Counter
from typing import Any, Callable, Iterable, Iterator, TextIO

PREFIX = "yoloprof: warning: "
# Libraries' chatter: recorded in the profile's warnings (with the library's name), never printed.
# (library, pattern of the message). torch.compile warns about global module hooks, which its own
# FlopCounterMode (the FLOPs window) installs: nothing the user did.
CHATTER = (("torch", re.compile(r"Using `torch\.compile\(module\)` when there are global hooks")),)
# torch's C++ log lines on fd 2 (c10 logging, glog's layout): `[W1201 20:13:06.29 CPUAllocator.cpp:245] msg`.
# They bypass Python's warnings (LOG(WARNING), not TORCH_WARN), so they are read off fd 2.
C10_LINE = re.compile(rb"^\[(?P<level>[WI])\d{4} [0-9:.]+ (?:\d+ )?[\w./-]+:\d+\] ?(?P<msg>.*)$")


def one_line(text: Any) -> str:
    """A message on one line: newlines and runs of blanks become single spaces."""
    return " ".join(str(text).split())


def emit(message: Any, stream: TextIO | None = None) -> None:
    """Print one warning line on stderr (or `stream`)."""
    text = one_line(message)
    if text:
        out = stream or sys.stderr
        out.write(PREFIX + text + "\n")
        out.flush()


def showwarning(message: Any, category: type, filename: str, lineno: int, file: TextIO | None = None,
                line: str | None = None) -> None:
    """A `warnings.showwarning` that prints the message alone, as one channel line."""
    emit(message, file)


@contextlib.contextmanager
def channel() -> Iterator[None]:
    """Python warnings raised inside the block print as one-line channel warnings."""
    saved = warnings.showwarning
    warnings.showwarning = showwarning
    try:
        yield
    finally:
        warnings.showwarning = saved


def chatter_of(message: Any) -> str | None:
    """The library whose known chatter `message` is, or None (then it is a warning to show)."""
    text = one_line(message)
    return next((lib for lib, pattern in CHATTER if pattern.search(text)), None)


class Collector:
    """The warnings of one capture, in order and without repeats; each is printed when first seen,
    except libraries' chatter (`library`, CHATTER), which is only kept. `counts` says how often
    each was raised."""

    def __init__(self, echo: bool = True, stream: TextIO | None = None) -> None:
        self.messages: list[str] = []
        self.counts: Counter[str] = Counter()
        self.echo = echo
        self.stream = stream

    def add(self, message: Any) -> None:
        lib = chatter_of(message)
        if lib is not None:
            self.library(lib, message)
            return
        text = one_line(message)
        self.counts[text] += 1
        if text and text not in self.messages:
            self.messages.append(text)
            if self.echo:
                emit(text, self.stream)

    def library(self, lib: str, message: Any) -> None:
        """A library's message: kept in the profile as `lib: message`, not printed."""
        self.keep(f"{lib}: {one_line(message)}")

    def keep(self, text: str) -> None:
        """Kept for the profile, not printed."""
        self.counts[text] += 1
        if text not in self.messages:
            self.messages.append(text)

    def extend(self, messages: Iterable[Any]) -> None:
        for m in messages:
            self.add(m)


@contextlib.contextmanager
def collecting(echo: bool = True, stream: TextIO | None = None) -> Iterator[Collector]:
    """Every Python warning raised in the block goes to the returned collector (printed once as
    a channel line when `echo`), instead of Python's default printer."""
    collector = Collector(echo, stream)
    _ACTIVE.append(collector)
    try:
        with warnings.catch_warnings():  # the filters stay as they are (DeprecationWarnings stay hidden)
            warnings.showwarning = lambda message, *_a, **_k: collector.add(message)
            yield collector
    finally:
        _ACTIVE.remove(collector)


_ACTIVE: list[Collector] = []  # the collectors of the captures running in this process, innermost last


def current() -> Collector | None:
    """The innermost active collector (a capture's), if any."""
    return _ACTIVE[-1] if _ACTIVE else None


class NativeLog:
    """What torch's C++ code wrote on fd 2 during a `native_stderr` block: its log lines, counted."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def notes(self) -> list[str]:
        """`torch: <message>` once each, with how many times it was logged when more than once."""
        return [f"torch: {m}" + (f" (logged {n} times)" if n > 1 else "") for m, n in self.counts.items()]

    def sort(self, data: bytes, drop: Callable[[bytes], bool]) -> bytes:
        """Keep torch's log lines, drop `drop` lines, return the rest (for the terminal)."""
        rest = []
        for line in data.splitlines(keepends=True):
            match = C10_LINE.match(line.rstrip(b"\r\n"))
            if match:
                self.counts[match.group("msg").decode(errors="replace").strip()] += 1
            elif not drop(line):
                rest.append(line)
        return b"".join(rest)


def _writes_fd2(stream: Any) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def native_stderr(drop: Callable[[bytes], bool] = lambda _line: False) -> Iterator[NativeLog]:
    """Read what C++ code writes on fd 2 during the block (torch's `[W ...]` log lines, Kineto's
    chatter) instead of letting it onto the terminal; Python's own stderr (progress bars, warning
    lines) still goes straight to the terminal. At the end torch's lines are counted in the
    returned log, `drop` lines discarded, and every other line passed on, unchanged."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr: nothing to sort
        yield NativeLog()
        return
    import tempfile  # here: only captures read fd 2, and tempfile (shutil, random) costs every reader's start

    log, swapped = NativeLog(), None
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        if _writes_fd2(sys.stderr):
            swapped, sys.stderr = sys.stderr, open(os.dup(saved), "w", buffering=1, errors="replace")
        try:
            yield log
        finally:
            if swapped is not None:
                sys.stderr.close()
                sys.stderr = swapped
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            rest = log.sort(tmp.read(), drop)
            if rest:
                sys.stderr.write(rest.decode(errors="replace"))
                sys.stderr.flush()
