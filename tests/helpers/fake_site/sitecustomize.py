"""Loaded by every Python process whose PYTHONPATH starts with this folder (fake_sweep.fake_jobs_env):
with YOLOPROF_TEST_FAKE_CAPTURE=1, `yoloprof.capturing.builtin.capture_entry.capture` becomes the fake capture of
tests/helpers/fake_sweep.py as soon as that module is imported.

Why: submitit runs each sweep job in a process it starts itself (through the fake SLURM commands,
or submitit_local's own subprocess), out of reach of a test's monkeypatch. The tests of the
scheduler's path (preemption, requeue, kill, resume, one process per job) then run the same job
code without a real capture (a torch._dynamo import and a model build per job). sweep/job.py looks
`api.capture` up when it calls it, so replacing the module attribute is enough.

The hook waits for the import instead of importing yoloprof here: the fake SLURM commands and any
other process that never captures start as fast as without it.
"""

from __future__ import annotations

import os
import sys

_TARGET = "yoloprof.capturing.builtin.capture_entry"


def _install() -> None:
    import importlib.abc
    from pathlib import Path

    tests = str(Path(__file__).resolve().parents[2])

    class _PatchCapture(importlib.abc.MetaPathFinder):
        """Finds yoloprof.capturing.builtin.capture_entry with the other finders, then patches the module once loaded."""

        def find_spec(self, name, path, target=None):  # noqa: ANN001 - importlib's protocol
            if name != _TARGET:
                return None
            sys.meta_path.remove(self)  # one module, once
            spec = next((s for f in sys.meta_path if hasattr(f, "find_spec")
                         for s in [f.find_spec(name, path, target)] if s is not None), None)
            if spec is None or spec.loader is None:
                return spec
            load = spec.loader.exec_module

            def exec_module(module) -> None:  # noqa: ANN001
                load(module)
                if tests not in sys.path:  # `helpers`, as tests/conftest.py puts it
                    sys.path.insert(0, tests)
                from helpers.fake_sweep import fake_capture

                module.capture = fake_capture

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _PatchCapture())


if os.environ.get("YOLOPROF_TEST_FAKE_CAPTURE") == "1":
    _install()
