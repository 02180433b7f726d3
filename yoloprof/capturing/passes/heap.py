"""The heap a timed trial starts from: the capture's one home for garbage collection.

Every timed trial (and every timed window of `yoloprof.profile`) starts after a full collection,
so that no trial pays for the cyclic garbage of the one before it. The collector stays enabled
while timing: the user's own loop runs with it too (timeit's habit of disabling it flatters).

A full collection walks every tracked object of the process: 0.2 s with torch, pandas and Hydra
imported (370k objects), more in a larger process, once per trial. So a capture collects once,
then freezes (`gc.freeze`) what existed before it started - the tool's own modules and the
caller's objects - for its duration: each trial's collection then walks only what the capture
made since (the previous trial's model, optimizer, loader and their garbage: microseconds), and
the automatic collections during the timed steps walk the step's objects, not the profiler's
(Hydra's, pandas') heap, which a training script does not have. Frozen objects are still freed by
reference counting; only cycles among them wait for the end of the capture, when everything is
unfrozen.

A caller that froze its own heap already (a capture inside a capture, a pre-fork server) is left as
it is: nothing is frozen or unfrozen on top of it.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once and freeze the heap as it is for the block; unfreeze afterwards."""
    if gc.get_freeze_count():  # the caller's own freeze (or an outer capture's): theirs to undo
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def fresh_heap() -> None:
    """Collect the garbage of what ran before a timed trial or window (inside `frozen_heap`, only
    what the capture made is walked)."""
    gc.collect()
