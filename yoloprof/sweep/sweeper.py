"""Validate the whole grid with yoloprof's rules inside Hydra's own pre-launch check.

Why here: Hydra's BasicSweeper composes every job once (`validate_batch_is_legal`) before its
launcher composes each again to run it, and composing is the dominant per-job overhead of a sweep.
Running yoloprof's checks (capture value rules, model `_target_` imports) on those same configs
costs no extra composition and still fails before the first capture. Hydra only instantiates
sweepers from the `hydra_plugins` namespace, so instead of a sweeper subclass the check wraps the
basic sweeper's method for the duration of one `yoloprof sweep` call (restored afterwards).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence


def _validating(original: Any) -> Any:
    def validate_batch_is_legal(self: Any, batch: Sequence[Sequence[str]]) -> None:
        from yoloprof.sweep import progress
        from yoloprof.sweep.plan import validate_job_configs

        loader = self.hydra_context.config_loader
        jobs = [list(job) for job in batch]
        validate_job_configs(jobs, lambda job: loader.load_sweep_config(self.config, job))
        if self.max_batch_size is None:
            progress.set_total(len(jobs))

    validate_batch_is_legal.__wrapped__ = original  # type: ignore[attr-defined]
    return validate_batch_is_legal


@contextlib.contextmanager
def validating_basic_sweeper() -> Iterator[None]:
    """While active, the basic sweeper's pre-launch composition also runs yoloprof's validation."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    original = BasicSweeper.validate_batch_is_legal
    BasicSweeper.validate_batch_is_legal = _validating(original)  # type: ignore[method-assign]
    try:
        yield
    finally:
        BasicSweeper.validate_batch_is_legal = original  # type: ignore[method-assign]
