"""`yoloprof.profile`: the capture's passes around a user's own loop.

    with yoloprof.profile("runs/mine", model=model, warmup=5, steps=20) as prof:
        for x, y in loader:
            with prof.phase("forward"):
                loss = loss_fn(model(x), y)
            ...
            prof.step(x)
            if prof.done:
                break

The loop's iterations go through windows, one after the other, each as long as asked:
warm-up (untouched) -> timed steps (no profiler, one synchronise per step boundary, CUDA events
for phases; the first ones become warm-up too while the step times are not yet steady, at most
`warmup_max` warm-up steps in all: docs/steady-state.md) -> trace (torch.profiler,
`record_function` per phase) -> FLOPs (one step under FlopCounterMode) -> modules (hooks) ->
Python hotspots (cProfile, if asked). Iterations after the last window run untouched; `prof.done`
says the loop may stop. The iterations needed are computed once (loop_plan.py) and announced in
one line when the block is entered. profile.json (and the trace) are written, atomically, into
`out_dir` when the block exits, and the capture's row into the results store inside `out_dir`
(or `project=`'s: loop_output.py), with one line saying where; a block that ends with an
exception writes nothing and the exception goes on.

The block's exit never raises into the user's loop (DESIGN.md: a profiler's callbacks never
raise into the user's code). A loop that ends early: the profile is still written from what was
measured, with a warning (also a Python `RuntimeWarning`) that names how many iterations it lacked
and which windows are incomplete, and `config.iterations_lacking` says the same; a loop that did
not reach a single timed step writes nothing, with a warning naming the iterations needed; a
failure of the profiler itself is a warning too, and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator

from typing_extensions import Unpack  # typing has it from 3.11

from yoloprof.config.device_spec import AUTO, is_auto
from yoloprof.capturing.device.torch_device import synchronize
from yoloprof.capturing.passes.heap import fresh_heap, frozen_heap
from yoloprof.capturing.userloop.loop_device import LoopDevice, planned_warmup
from yoloprof.capturing.userloop.loop_write import LoopWrite
from yoloprof.capturing.userloop.loop_support import (DEFAULT_OUT, blocks, check_counts, check_phase, checked, current_job,
                                           device_of, dist_rank, job_output, output_names, traced_phase, untouched)
from yoloprof.capturing.userloop.loop_clock import LoopClock
from yoloprof.capturing.userloop.loop_output import ProjectArg, check_project, say
from yoloprof.capturing.userloop.loop_plan import LoopPlan, plan_windows
from yoloprof.capturing.passes.steady_steps import SteadySteps, peak_of
from yoloprof.capturing.device.cpu_contention import Sampler
from yoloprof.capturing.passes.timing import TrialResult
from yoloprof.capturing.passes.tracing import TraceSchedule
from yoloprof.errors import UsageError

if TYPE_CHECKING:
    from yoloprof.capturing.userloop.public_types import LoopOptions

__all__ = ["DEFAULT_OUT", "Profile", "dist_rank", "job_output", "output_names", "profile"]


class Profile(LoopDevice, LoopWrite):
    """The context manager behind `yoloprof.profile(...)` (see the module docstring)."""

    announce = True  # print the iterations needed on entry and where the profile went on exit
    plan_note = ""  # what a driver adds to the entry line (profile_trainer: the training's length)

    _w: int  # the current window (set by __enter__)
    _left: int  # its iterations still to run

    def __init__(self, out_dir: str | os.PathLike = DEFAULT_OUT, *, model: Any = None, warmup: int = 5,
                 warmup_max: int = -1, steps: int = 20, trace_steps: int = 3, repeat: int = 1, modules: bool = True,
                 module_steps: int = 2, python_hotspots: bool = False, hotspot_steps: int = 3,
                 flops: bool = True, nvtx: bool = False, device: Any = AUTO, kind: str = "train",
                 batch_size: int | None = None, threads: int | None = None, project: ProjectArg = None) -> None:
        check_counts(warmup=warmup, steps=steps, trace_steps=trace_steps, repeat=repeat,
                      module_steps=module_steps, hotspot_steps=hotspot_steps)
        if kind not in ("train", "infer"):
            raise UsageError(f"yoloprof.profile: kind must be 'train' or 'infer' (got {kind!r})")
        if warmup_max != -1 and (not isinstance(warmup_max, int) or warmup_max < warmup):
            raise UsageError(f"yoloprof.profile: warmup_max must be -1 (auto) or an integer >= warmup "
                             f"{warmup} (got {warmup_max!r})")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 0):
            raise UsageError(f"yoloprof.profile: threads must be None (leave torch's), 0 (auto: half the usable "
                             f"CPUs) or a positive integer (got {threads!r})")
        if repeat > steps:
            raise UsageError(f"yoloprof.profile: repeat={repeat} blocks need steps >= {repeat} (got {steps})")
        check_project(project, "yoloprof.profile")
        self.project = project
        job = current_job()
        self.out_dir = job["out_dir"] if job else Path(out_dir)
        self._job = job
        self.model, self.kind, self.batch_size = model, kind, batch_size
        from yoloprof.config.steady_thresholds import warmup_cap

        self._cap = warmup_cap(warmup, steps, warmup_max)
        self.options = {"warmup": warmup, "warmup_max": warmup_max, "steps": steps, "trace_steps": trace_steps,
                        "repeat": repeat,
                        "modules": bool(modules and model is not None), "module_steps": module_steps,
                        "python_hotspots": bool(python_hotspots), "hotspot_steps": hotspot_steps,
                        "flops": bool(flops), "nvtx": bool(nvtx)}
        # `auto` (or None) in a user's loop is the device their code runs on: the model's, else the
        # batch's (the loop never moves their model, so "the first GPU" would time an idle device)
        device = None if device is None or is_auto(device) else device
        self._device_arg = device
        self._threads_arg = threads
        self._notes: list[str] = []
        if modules and model is None:
            self._notes.append("modules: no model= given, so no per-module breakdown")
        schedule = TraceSchedule(active=trace_steps) if trace_steps else None
        self._schedule = schedule
        # Without model= or device=, the device is the batch's (prof.step(x)), seen at the end of
        # the first iteration: that iteration must be untimed.
        self._find_device = model is None and device is None
        self.plan: LoopPlan = plan_windows(
            warmup=planned_warmup(model, device, warmup, self._notes), steps=steps,
            trace=schedule.total if schedule else 0, flops=bool(flops), modules=self.options["modules"],
            module_steps=module_steps, hotspots=bool(python_hotspots), hotspot_steps=hotspot_steps,
            settle=self._cap - warmup)
        self.iterations = 0
        self.result: dict[str, Any] | None = None
        self.path: Path | None = None

    # ---- the user's side ---------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once every window is measured: the loop may stop (or go on, untouched)."""
        return self._w >= len(self.plan.windows)

    def phase(self, name: str) -> ContextManager[Any]:
        """`with prof.phase("forward"):` times this part of the iteration (repeatable per step)."""
        return self._phase(name)

    def step(self, batch: Any = None) -> None:
        """Call once per iteration, at its end. `batch` (optional, first call used): the input
        batch, for bytes per batch and the batch size behind img_per_s."""
        if batch is not None and self._batch_bytes is None:
            self._note_batch(batch)
        self.iterations += 1
        if self._w >= len(self.plan.windows):
            return
        self._end_iteration()
        self._left = self._timed.tracker.left if self.plan.windows[self._w][0] == "timed" else self._left - 1
        if self._left == 0:
            self._end_window()
            self._w += 1
            self._begin_window()
        else:
            self._begin_iteration()

    def __enter__(self) -> "Profile":
        self.device = device_of(self.model, self._device_arg)
        self._rank, self._world = dist_rank()
        self._clock = LoopClock(self.device)
        self._steady: SteadySteps | None = None
        self._trials: list[TrialResult] = []
        self._block_sizes = blocks(self.options["steps"], self.options["repeat"])
        self._phase_order: list[str] = []
        self._batch_bytes: int | None = None
        self._sections: dict[str, Any] = {}
        self._trace_path: Path | None = None
        self._session: Any = None
        self._recorder: Any = None
        self._hotspots: Any = None
        self._flop_counter: Any = None
        self._flops: float | None = None
        self._nvtx_modules: Any = None
        self._phase: Callable[[str], ContextManager[Any]] = untouched
        self._module_warm = False
        self._mix: Any = None
        self._scope = contextlib.ExitStack()  # the measured device is the current one in the block
        self._w, self._left = 0, 0
        self._cpu = Sampler()  # other processes' CPU from here to the profile (capturing/device/cpu_contention.py)
        with contextlib.ExitStack() as stack:
            stack.callback(self._scope.close)  # left when the block ends (or if entering fails)
            self._scope.enter_context(self.device.scope())
            self._threads = self._set_threads()
            self._setup_nvtx()
            stack.enter_context(frozen_heap())  # the loop's heap as it is now: frozen until the block ends
            self._begin_window()
            self._heap = stack.pop_all()  # kept frozen past __enter__; a failure above unfreezes
        if self.announce:
            say("; ".join(part for part in (self.plan.line(), self.plan_note) if part))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close the open window and write the profile; never raises (an interrupt raised while
        it writes goes on: KeyboardInterrupt is no Exception)."""
        completed = self.done
        window = self.plan.windows[self._w][0] if not completed else None
        try:
            with contextlib.ExitStack() as stack:  # each step runs, whatever the one before did
                stack.callback(self._heap.close)
                if self._nvtx_modules is not None:
                    stack.callback(self._nvtx_modules.detach)
                self._abort_window(window)
        except Exception as error:  # noqa: BLE001 - a profiler never raises into the user's loop
            if exc_type is None:
                self.give_up(f"closing the {window} window failed: {type(error).__name__}: {error}")
            return
        if exc_type is not None:
            return  # the user's error goes on; nothing is written
        try:
            self.result = self._write(completed, window)
        except Exception as error:  # noqa: BLE001 - as above
            self.result = self.path = None
            self.give_up(f"{type(error).__name__}: {error}")

    # ---- what a driver (profile_trainer) adds to the profile ------------------------------------
    def note(self, text: str) -> None:
        """A line for the profile's warnings."""
        self._notes.append(text)

    def add_section(self, key: str, section: dict[str, Any]) -> None:
        """A section of the profile, written as `profile[key]`."""
        self._sections[key] = section

    def measured_phase(self, name: str) -> tuple[list[tuple[int, float]], int]:
        """(the loop iteration, 1-based, and ms of phase `name` in each measured timed step that
        ran it; the number of measured timed steps)."""
        if self._steady is None:
            return [], 0
        first = self.plan.count("warmup") + 1  # the timed window's first iteration
        kept = self._steady.tracker.measured_slice()
        rows = list(enumerate(self._steady.records))[kept]
        return [(first + i, phases[name]) for i, (_, phases, _) in rows if name in phases], len(rows)

    @property
    def window(self) -> str | None:
        """The window the loop is in now; None once done."""
        return None if self.done else self.plan.windows[self._w][0]

    def _set_threads(self) -> int:
        """torch's intra-op thread count for the block: `threads=` as the CLI's `--threads` sets it
        (0 = auto, `config.capture_settings.effective_threads`), restored when the block ends;
        None leaves the count as found. The count in force is `config.threads`."""
        import torch

        if self._threads_arg is not None:
            from yoloprof.config.capture_settings import effective_threads

            self._scope.callback(torch.set_num_threads, torch.get_num_threads())
            torch.set_num_threads(effective_threads(self._threads_arg))
        return int(torch.get_num_threads())

    # ---- windows -------------------------------------------------------------------------------
    @property
    def _timed(self) -> SteadySteps:
        """The timed window's steady-state tracker, which only that window (begun first) reads."""
        if self._steady is None:
            raise RuntimeError("yoloprof.profile: the timed window has not begun")
        return self._steady

    def _begin_window(self) -> None:
        if self._w >= len(self.plan.windows):
            self._phase = self._nvtx_wrap(untouched)
            return
        name, count = self.plan.windows[self._w]
        self._left = count
        getattr(self, f"_begin_{name}")()

    def _end_window(self) -> None:
        getattr(self, f"_end_{self.plan.windows[self._w][0]}")()

    def _begin_iteration(self) -> None:
        name = self.plan.windows[self._w][0]
        if name == "timed":
            self._timed.begin()
            self._clock.start()
        elif name == "modules":
            self._recorder.begin_step()

    def _end_iteration(self) -> None:
        name = self.plan.windows[self._w][0]
        if name == "timed":
            self._timed.end(*self._clock.finish())
        elif name == "trace":
            self._session.step()
        elif name == "modules":
            synchronize(self.device)
            if self._module_warm:
                self._module_warm = False  # the warm-up iteration: nothing recorded
            else:
                self._recorder.end_step()

    def _begin_warmup(self) -> None:
        self._phase = self._nvtx_wrap(checked)  # a bad phase name fails at the first iteration

    def _end_warmup(self) -> None:
        self._note_cuda_unseen()

    def _begin_timed(self) -> None:
        fresh_heap()  # every timed window starts from the same heap state, as in the capture
        synchronize(self.device)
        # the user's warm-up is untouched; the timed steps' first ones extend it until steady
        self._steady = SteadySteps(self.device, 0, self.options["steps"], self._cap - self.options["warmup"])
        self._phase = self._nvtx_wrap(self._timed_phase)
        self._cpu.begin_trial()  # the timed window (its blocks are consecutive parts of it)
        self._steady.begin()
        self._clock.start()

    def _end_timed(self) -> None:
        """The measured steps (after the extended warm-up) into `repeat` consecutive blocks, each
        one sample; a loop cut short keeps its partial last block."""
        self._cpu.end_trial()
        kept, first = self._timed.measured(), 0
        for size in self._block_sizes:
            part, first = kept[first:first + size], first + size
            if not part:
                break
            block = TrialResult()
            for total, phases, _ in part:
                block.add(total, phases)
            block.memory = peak_of([reading for _, _, reading in part])
            self._trials.append(block)

    @contextlib.contextmanager
    def _timed_phase(self, name: str) -> Iterator[None]:
        check_phase(name)
        if name not in self._phase_order:
            self._phase_order.append(name)
        begin = self._clock.now()
        try:
            yield
        finally:
            self._clock.add(name, begin, self._clock.now())

    def _begin_trace(self) -> None:
        from yoloprof.capturing.passes.tracing import TraceSession

        if self._schedule is None:  # the trace window is planned only with trace_steps (its schedule)
            raise RuntimeError("yoloprof.profile: a trace window without a trace schedule")
        self._session = TraceSession(self.device, self._schedule)
        self._session.start()
        self._phase = self._nvtx_wrap(traced_phase)

    def _end_trace(self) -> None:
        _, trace_name = output_names(self._rank)
        self._trace_path = self._session.export(self.out_dir / trace_name)
        self._notes.extend(self._session.native_notes)  # torch's C++ log lines: kept, not printed
        self._session = None

    def _begin_flops(self) -> None:
        from yoloprof.capturing.device.flop_count import FlopCounter

        self._phase = self._nvtx_wrap(untouched)
        self._flop_counter = FlopCounter()
        self._flop_counter.__enter__()

    def _end_flops(self) -> None:
        counter, self._flop_counter = self._flop_counter, None
        counter.__exit__(None, None, None)
        self._mix = counter.mix  # the FLOPs by the dtype that ran: MFU's peak (capturing/device/flop_count.py)
        self._flops = self._mix.total or None

    def _begin_modules(self) -> None:
        from yoloprof.capturing.extras.module_recorder import ModuleRecorder

        self._phase = self._nvtx_wrap(untouched)
        synchronize(self.device)
        self._recorder = ModuleRecorder(self.model, self.device).attach()
        self._module_warm = True  # begin_step at the second iteration (_begin_iteration)

    def _end_modules(self) -> None:
        self._recorder.detach()
        self._sections["modules"] = self._recorder.section()

    def _begin_hotspots(self) -> None:
        from yoloprof.capturing.extras.hotspot_recorder import HotspotRecorder

        self._phase = self._nvtx_wrap(untouched)
        self._hotspots = HotspotRecorder()
        self._hotspots.start()

    def _end_hotspots(self) -> None:
        self._sections["hotspots"] = self._hotspots.section(self.options["hotspot_steps"])

    def _abort_window(self, window: str | None) -> None:
        """Close whatever window the loop stopped in, keeping what it measured completely."""
        if window == "timed" and self._steady is not None:
            self._end_timed()
        elif window == "trace" and self._session is not None:
            self._session.stop()  # an incomplete trace window is not analysed
            self._notes.extend(self._session.native_notes)
        elif window == "flops" and self._flop_counter is not None:
            self._flop_counter.__exit__(None, None, None)
        elif window == "modules" and self._recorder is not None:
            self._recorder.detach()
            self._sections["modules"] = self._recorder.section()
        elif window == "hotspots" and self._hotspots is not None:
            done = self.options["hotspot_steps"] - self._left
            self._sections["hotspots"] = self._hotspots.section(done)

    # ---- NVTX ----------------------------------------------------------------------------------
    def _setup_nvtx(self) -> None:
        if not self.options["nvtx"]:
            return
        from yoloprof.capturing.extras.nvtx import NvtxModules, nvtx_note, nvtx_usable

        self._notes.append(nvtx_note(self.device))
        self._nvtx_ok = nvtx_usable(self.device)
        if self._nvtx_ok and self.model is not None:
            self._nvtx_modules = NvtxModules(self.model).attach()

    def _nvtx_wrap(self, phase: Callable[[str], ContextManager[Any]]) -> Callable[[str], ContextManager[Any]]:
        if not self.options["nvtx"] or not getattr(self, "_nvtx_ok", False):
            return phase
        from yoloprof.capturing.extras.nvtx import nvtx_range

        @contextlib.contextmanager
        def both(name: str) -> Iterator[None]:
            with nvtx_range(name), phase(name):
                yield

        return both

    # ---- the profile ---------------------------------------------------------------------------
    def _note_batch(self, batch: Any) -> None:
        from yoloprof.capturing.extras.model_facts import batch_bytes
        from yoloprof.capturing.extras.module_recorder import _tensors

        self._batch_bytes = batch_bytes(batch)
        if self._find_device and not self.device.is_cuda:
            self._device_from_batch(_tensors(batch))
        if self.batch_size is None:
            shaped = [t for t in _tensors(batch) if t.dim() > 0]
            self.batch_size = int(shaped[0].shape[0]) if shaped else None


def profile(out_dir: str | os.PathLike[str] = DEFAULT_OUT, **options: Unpack[LoopOptions]) -> Profile:
    """`with yoloprof.profile(out_dir, model=..., warmup=5, steps=20, trace_steps=3) as prof:`.

    The loop needs warmup + steps + trace_steps + 2 (trace) + 1 (FLOPs) + module_steps + 1
    (modules, with model=) + hotspot_steps (python_hotspots=True) iterations: 34 at the defaults
    with model=, and up to warmup_max - warmup more while the step times settle; the block prints
    the count when entered (`prof.plan`). A shorter loop writes a partial profile (or none, before
    the first timed step) with a warning naming what is missing; the block's exit never raises.
    Writes profile.json and the trace into `out_dir`, and the capture's row into the results store
    `<out_dir>/results` (`project=` another folder: `<project>/results`; False: no row), and prints
    one line saying where."""
    return Profile(out_dir, **options)
