"""A live progress display on stderr while measuring (stdout stays clean for --json)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator


class CaptureProgress:
    """One bar per pass ("trial 2/3", "trace"); a no-op when disabled."""

    def __init__(self, enabled: bool) -> None:
        # Only on a terminal: piped or logged, rich would still print an empty line when the bar
        # ends, and an error after it would then start with a blank line.
        self.enabled = enabled and sys.stderr.isatty()
        self._progress: Any = None

    @contextlib.contextmanager
    def running(self) -> Iterator["CaptureProgress"]:
        if not self.enabled:
            yield self
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=True) as progress:
            self._progress = progress
            try:
                yield self
            finally:
                self._progress = None

    def task(self, description: str, total: int) -> Callable[[int, int], None] | None:
        """A callback (done, total) for one pass, or None when disabled (the loop skips it)."""
        if self._progress is None:
            return None
        task_id = self._progress.add_task(description, total=total)
        progress = self._progress

        def update(done: int, total_: int) -> None:
            progress.update(task_id, completed=done, total=total_)  # a warm-up may extend the total

        return update
