"""The trace pass: a short `torch.profiler` window over the same step, exported as a Chrome trace.

Kept apart from the timing pass because the profiler slows every op down; its job is to say
*where* the time goes (kernels, ops, phases, categories), not how long a step takes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager

from yoloprof.capturing.passes import interrupt
from yoloprof.capturing.device.torch_device import DeviceInfo, synchronize
from yoloprof.capturing.passes.step_calls import profiler_phases
from yoloprof.config.capture_settings import CaptureSettings, default_of


@dataclass(frozen=True)
class TraceSchedule:
    """`torch.profiler.schedule(wait, warmup, active, repeat=1)`; `active` steps are analysed; plus
    what the profiler records. The defaults are the settings schema's (`trace_*` fields), typed once."""

    wait: int = default_of("trace_wait", "train")
    warmup: int = default_of("trace_warmup", "train")
    active: int = default_of("trace_active", "train")
    record_shapes: bool = default_of("record_shapes", "train")
    profile_memory: bool = default_of("profile_memory", "train")

    @classmethod
    def of(cls, settings: CaptureSettings) -> "TraceSchedule":
        """The schedule a capture's settings ask for (`--trace-wait/--trace-warmup/--trace-active`)."""
        return cls(settings.trace_wait, settings.trace_warmup, settings.trace_active,
                   settings.record_shapes, settings.profile_memory)

    @property
    def total(self) -> int:
        return self.wait + self.warmup + self.active


# Kineto writes these progress lines straight to file descriptor 2 at every profiler start and
# stop, whatever KINETO_LOG_LEVEL says; in a sweep they interleave with the live display.
_KINETO_CHATTER = (b"USDT:", b"STAGE:")
# Lines Kineto may log on a machine without a usable GPU (seen with the CPU build, in a process
# where CUDA was queried before): nothing the user can act on. A GPU capture that really lost its
# device tracer is reported by the engine instead ("no kernels in the trace").
_KINETO_NOISE = (b"gpuGetDeviceCount failed",)


def _is_chatter(line: bytes) -> bool:
    return line.startswith(_KINETO_CHATTER) or any(token in line for token in _KINETO_NOISE)


def _kineto_chatter_filtered() -> ContextManager[Any]:
    """fd 2 sorted for a block: Kineto's chatter dropped, torch's C++ log lines counted, every
    other line passed on (warn.native_stderr; TraceSession holds one from start to stop)."""
    from yoloprof import warn

    return warn.native_stderr(drop=_is_chatter)


CUPTI_TEARDOWN_ENV = "TEARDOWN_CUPTI"
CUPTI_ATTACHED_NOTE = ("{env}={value}: CUPTI stays attached after the trace window, so later work in this "
                       "process (the following windows, your own training) can run 10-20% slower")


def cupti_teardown(device: DeviceInfo, environ: Any = None) -> str | None:
    """Have Kineto detach CUPTI when the trace window stops. Kineto tears CUPTI down at the end
    of a trace only when TEARDOWN_CUPTI is set: "1" in current libkineto (CuptiActivityApi.cpp,
    `cuptiTearDown_()`), any value in older builds (`getenv(...) != nullptr`); unset, CUPTI stays
    attached for the rest of the process. "1" means teardown in both, so on a CUDA trace we set it,
    unless it is set already: the user's choice, or torch's own "0" (torch.profiler and
    torch.compile set that around CUDA graphs, whose CUPTI re-init after a teardown crashes).
    Returns the warning for a kept other value (also raised as a Python warning)."""
    if not device.is_cuda:
        return None
    environ = os.environ if environ is None else environ
    value = environ.setdefault(CUPTI_TEARDOWN_ENV, "1")
    if value == "1":
        return None
    import warnings

    text = CUPTI_ATTACHED_NOTE.format(env=CUPTI_TEARDOWN_ENV, value=value)
    warnings.warn(text, RuntimeWarning, stacklevel=3)
    return text


def activities(device: DeviceInfo) -> list[Any]:
    import torch

    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.is_cuda:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    elif hasattr(torch, "xpu") and torch.xpu.is_available():  # pragma: no cover - no XPU here
        acts.append(torch.profiler.ProfilerActivity.XPU)
    return acts


class TraceSession:
    """A torch.profiler window driven from outside: `start()`, `step()` at every step boundary,
    then `export(out_path)`. The capture's trace pass and `yoloprof.profile` around a user's own
    loop both drive this one class, so both write the same trace."""

    def __init__(self, device: DeviceInfo, schedule: TraceSchedule = TraceSchedule()) -> None:
        import torch

        self.device = device
        self.schedule = schedule
        self.steps_done = 0
        self._stopped = False
        self._window = contextlib.ExitStack()  # fd 2 read from start() to stop() (torch's C++ log)
        self.native_notes: list[str] = []  # torch's C++ log lines of the window, for the profile
        self._prof = torch.profiler.profile(
            activities=activities(device),
            schedule=torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup,
                                             active=schedule.active, repeat=1),
            record_shapes=schedule.record_shapes,  # input shapes per op: `ops --shapes`
            profile_memory=schedule.profile_memory,  # [memory] events: CPU allocator peak, per-op memory
            with_stack=False,
        )

    @property
    def complete(self) -> bool:
        return self.steps_done >= self.schedule.total

    def start(self) -> None:
        """Start profiling. From here to stop(), what C++ writes on fd 2 is sorted (warn.native_stderr):
        the allocator's "Memory block of unknown size" lines (logged while memory is profiled, when
        a block allocated before the window is freed) go to the profile's warnings, not the terminal;
        Kineto's chatter is dropped; anything else reaches the terminal when the window closes."""
        cupti_teardown(self.device)
        from yoloprof import warn

        self._log = self._window.enter_context(warn.native_stderr(drop=_is_chatter))
        try:
            self._prof.start()
        except BaseException:
            self._window.close()
            raise

    def step(self) -> None:
        """One step boundary: the device is synchronised first, so the step's GPU work lands
        inside its own ProfilerStep span."""
        synchronize(self.device)
        self._prof.step()
        self.steps_done += 1

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            try:
                self._prof.stop()
            finally:
                self._window.close()
                self._record_native()

    def _record_native(self) -> None:
        from yoloprof import warn

        log = getattr(self, "_log", None)
        self.native_notes = log.notes() if log is not None else []
        collector = warn.current()
        if collector is not None:
            for note in self.native_notes:
                collector.keep(note)

    def export(self, out_path: Path, gzip: bool = False) -> Path:
        """Stop (if still running) and write the active window to `out_path` atomically."""
        self.stop()
        out_path = Path(out_path)
        if gzip and not out_path.name.endswith(".gz"):
            out_path = out_path.with_name(out_path.name + ".gz")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        # torch names the format by the suffix (".gz" = gzipped); keep it on the temp file.
        fd, tmp = tempfile.mkstemp(prefix=".trace.", suffix=".json.gz" if gzip else ".json",
                                   dir=out_path.parent)
        os.close(fd)
        try:
            interrupt.stage("export")
            self._prof.export_chrome_trace(tmp)
            os.replace(tmp, out_path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return out_path


def run_trace_pass(step: Callable[[Callable[[str], Any]], Any], device: DeviceInfo, out_path: Path,
                   schedule: TraceSchedule = TraceSchedule(), gzip: bool = False) -> Path:
    """Profile `schedule.total` steps and export the active window to `out_path` atomically."""
    phase = profiler_phases()
    session = TraceSession(device, schedule)
    session.start()
    try:
        for i in range(schedule.total):
            step(phase)
            session.step()
            if i == 0:
                interrupt.stage("trace")
    finally:
        session.stop()
    return session.export(out_path, gzip=gzip)
