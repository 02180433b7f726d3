"""The one warning channel: every warning the user sees is one line on stderr,
`yoloprof: warning: <message>`, and a capture also keeps it in the profile's `warnings`.

Python warnings (ours, and library chatter: Pillow on a damaged image, matplotlib on a layout, numpy
on a value) go through the same channel, message only: never the source path and code line that
Python's default printer adds. The CLI turns the channel on for every command (`channel()`); a
capture collects what its run raised (`collecting()`), so the profile and the terminal agree.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Any, Iterable, Iterator, TextIO

PREFIX = "yoloprof: warning: "


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


class Collector:
    """The warnings of one capture, in order and without repeats; each is printed when first seen."""

    def __init__(self, echo: bool = True, stream: TextIO | None = None) -> None:
        self.messages: list[str] = []
        self.echo = echo
        self.stream = stream

    def add(self, message: Any) -> None:
        text = one_line(message)
        if text and text not in self.messages:
            self.messages.append(text)
            if self.echo:
                emit(text, self.stream)

    def extend(self, messages: Iterable[Any]) -> None:
        for m in messages:
            self.add(m)


@contextlib.contextmanager
def collecting(echo: bool = True, stream: TextIO | None = None) -> Iterator[Collector]:
    """Every Python warning raised in the block goes to the returned collector (printed once as
    a channel line when `echo`), instead of Python's default printer."""
    collector = Collector(echo, stream)
    with warnings.catch_warnings():  # the filters stay as they are (DeprecationWarnings stay hidden)
        warnings.showwarning = lambda message, *_a, **_k: collector.add(message)
        yield collector
