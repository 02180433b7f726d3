"""`capture(settings, out_dir)`: the one entry point behind `yoloprof run`, `yoloprof infer` and
every sweep job. Timing pass (N trials) -> trace pass -> trace analysis -> profile.json.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any, Iterator

from yoloprof.capturing.device import cpu_contention
from yoloprof.capturing.passes import interrupt
from yoloprof.capturing.device.torch_device import DeviceInfo, resolve_device
from yoloprof.capturing.passes.heap import frozen_heap
from yoloprof.capturing.builtin.preflight import (check_memory, check_model_inputs, check_output_dir, folders_to_make,
                                                 removed_if_left_empty)
from yoloprof.workloads.inputcheck import CLI, check_inputs
from yoloprof.capturing.builtin.capture_progress import CaptureProgress
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.config.device_spec import is_auto
from yoloprof import warn
from yoloprof.defs import files
from yoloprof.errors import UsageError
from yoloprof.profiles.io import write_profile
from yoloprof.profiles.model import empty_profile

PROFILE_NAME = files.PROFILE
TRACE_NAME = files.TRACE
_STAGED = ".partial."  # the trace is written under this prefix and renamed when the profile is


def precision_warnings(settings: CaptureSettings, device: DeviceInfo) -> list[str]:
    """Say when a reduced precision on CPU is likely to measure slow kernels, not a speed-up."""
    if settings.autocast and not device.is_cuda and settings.mode == "infer":
        return [f"--precision {settings.precision} on CPU runs autocast({settings.precision}); CPU "
                "kernels for reduced precision are often slower than float32"]
    return []


@contextlib.contextmanager
def intra_op_threads(threads: int) -> Iterator[None]:
    """Run the capture with exactly `threads` intra-op threads (resolved: never 0), then restore the
    caller's count: a deliberate, recorded choice instead of whatever torch picked."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _resolve_batch(settings: CaptureSettings, device: DeviceInfo) -> tuple[CaptureSettings, Any]:
    """The settings with `--batch -1` resolved, and the autobatch Plan (None for a given batch)."""
    if settings.batch != -1:
        return settings, None
    if not device.is_cuda:
        raise UsageError("--batch -1 (largest batch that fits) needs a CUDA device; give a batch size "
                         "on CPU, e.g. --batch 16")
    from yoloprof.capturing.builtin.autobatch import largest_batch

    plan = largest_batch(settings, device)
    return dataclasses.replace(settings, batch=plan.chosen), plan


def input_size_notes(settings: CaptureSettings) -> list[str]:
    """What the model makes of `imgsz` where it is not what was asked (rounded up to its stride,
    or ignored), from its family's adapter (workloads/families.py)."""
    from yoloprof.workloads.families import input_size

    size = input_size(settings)
    if size.note:
        return [size.note]
    if size.imgsz is None:
        return [f"--imgsz {settings.imgsz}: the model ignores it (it resizes its inputs itself)"]
    if size.imgsz != settings.imgsz:
        return [f"--imgsz {settings.imgsz}: the model runs at {size.imgsz}"]
    return []


def device_warnings(settings: CaptureSettings, device: DeviceInfo) -> list[str]:
    """What the device cannot do natively at this precision (capturing/device/gpu_capability.py)."""
    from yoloprof.capturing.device.gpu_capability import capability_warnings
    from yoloprof.capturing.device.torch_compat import tf32_flags

    return capability_warnings(settings.precision, device, tf32_flags())


def capture(settings: CaptureSettings, out_dir: str | Path, *, progress: bool = False,
            echo_warnings: bool = True) -> dict[str, Any]:
    """Run the capture and write `out_dir/profile.json` (+ `profile_trace.json`); return the profile.

    Every flag and the output folder are checked before any work. Nothing is written until the
    end, and then atomically: an interrupted capture (Ctrl-C at any moment: KeyboardInterrupt)
    leaves any earlier profile.json and trace byte-identical. Warnings (ours and the libraries')
    are printed once each as `yoloprof: warning: ...` (unless `echo_warnings` is false) and kept
    in the profile's `warnings`.
    """
    interrupt.held_import("torch")  # a Ctrl-C inside torch's C++ initialisation would abort the process
    settings = settings.validate()
    asked = settings.device
    post_from = postprocess_origins(settings)  # before None becomes the family's value
    settings = settings.resolved()  # canonical device (`auto` decided here), effective precision and threads, NMS values
    from yoloprof.metrics.contention import threshold

    threshold()  # a bad YOLOPROF_CONTENDED_CORES fails before any work, not after it
    device = resolve_device(settings.device)
    check_model_inputs(settings)
    from yoloprof.capturing.builtin.knob_apply import check_knobs

    check_knobs(settings, device.is_cuda)  # a knob level this machine cannot run: one line, exit 2
    check_inputs(settings, CLI)  # data exists, has images and labels, fills the steps; model keywords
    amp = settings.autocast
    warnings = precision_warnings(settings, device) + device_warnings(settings, device) + input_size_notes(settings)
    check_memory(settings, device, amp)  # --batch -1: estimated at batch 1, the least it can be
    made = folders_to_make(out_dir)
    out_dir = check_output_dir(out_dir)  # after the flags: a refused flag leaves no new folder
    # the chosen GPU is the current device for the whole capture (capturing/device/torch_device.py)
    from yoloprof.workloads.models import offloaded

    with removed_if_left_empty(made), device.scope(), offloaded(settings.model if device.is_cuda else None) as moved, \
            intra_op_threads(settings.threads), frozen_heap():
        if moved:
            warnings.append(moved)
        settings, plan = _resolve_batch(settings, device)  # --batch -1 runs trial steps: after every check
        if plan is not None:
            warnings.append(plan.line())
        return _capture(settings, device, amp, warnings, out_dir, progress, echo_warnings, plan,
                        {**post_from, **({"device_asked": asked.strip().lower()} if is_auto(asked) else {})})


def postprocess_origins(settings: CaptureSettings) -> dict[str, Any]:
    """The config's `postprocess_from` (inference): for conf, iou and max_det, `family` (the model
    family's own, config/postprocess_defaults.py) or `user` (given)."""
    from yoloprof.config.postprocess_defaults import KEYS, origins

    if settings.mode != "infer":
        return {}
    return {"postprocess_from": origins({k: getattr(settings, k) for k in KEYS})}


def _capture(settings: CaptureSettings, device: DeviceInfo, amp: bool, warnings: list[str], out_dir: Path,
             progress: bool, echo_warnings: bool, plan: Any = None,
             config_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    from yoloprof.capturing.builtin import infer as infer_mod
    from yoloprof.capturing.builtin import train as train_mod

    runner = train_mod if settings.mode == "train" else infer_mod
    with interrupt.guard(), warn.collecting(echo=echo_warnings) as notes, cpu_contention.sampling() as cpu:
        interrupt.stage("prepare")
        inputs, input_notes = runner.prepare(settings)  # dataset or images, built once, checked first
        target = out_dir / f"{_STAGED}{TRACE_NAME}"
        try:
            with CaptureProgress(progress).running() as bar:
                run = runner.measure(settings, device, amp, bar, inputs)
                _check_outputs(settings, device, amp, inputs, run, bar)
                staged = runner.trace(settings, device, amp, target, bar, inputs) if settings.trace else None
                from yoloprof.capturing.builtin.extra_sections import measure_extras

                bar.task("model facts, modules, hotspots", 1)
                run.sections.update(measure_extras(settings, device, amp, inputs))
            if settings.nvtx:
                from yoloprof.capturing.extras.nvtx import nvtx_note

                warnings.append(nvtx_note(device))
            interrupt.checkpoint()
            run.contention = cpu.section()  # the whole capture's window: prepare to trace analysis
            profile = assemble(settings, device, amp, run, staged, warnings + input_notes)
            if plan is not None:
                profile["config"]["autobatch"] = plan.as_dict()
            profile["config"].update(config_extra or {})
            notes.extend(profile["warnings"])  # one channel: each printed once, all kept
            profile["warnings"] = list(notes.messages)
            interrupt.stage("write")
            if settings.tensorboard and staged is not None:
                profile["trace"]["tensorboard"] = str(_to_tensorboard(settings.tensorboard, out_dir, staged))
            _commit(out_dir, profile, staged)
        finally:  # after an interrupt or a failure, no staged trace stays behind
            for leftover in (target, target.with_name(target.name + ".gz")):
                leftover.unlink(missing_ok=True)
    return profile


def _check_outputs(settings: CaptureSettings, device: DeviceInfo, amp: bool, inputs: Any, run: Any,
                   bar: CaptureProgress) -> None:
    """Knobs or precision away from eager float32: the outputs against an eager float32 copy
    (capturing/builtin/output_check.py), after the timed trials; the section and its metrics join the run."""
    from yoloprof.capturing.builtin.output_check import check_outputs

    bar.task("outputs check", 1)
    section, figures = check_outputs(settings, device, amp, inputs)
    run.sections["outputs"] = section
    run.samples.update(figures)


def _commit(out_dir: Path, profile: dict[str, Any], staged: Path | None) -> None:
    """Put the trace and the profile in place together: an interrupt before this leaves both old
    files untouched, one during it is held back until both new ones are in place."""
    interrupt.checkpoint()
    with interrupt.deferred():
        if staged is not None:
            os.replace(staged, out_dir / _final_trace_name(staged))
        write_profile(out_dir / PROFILE_NAME, profile)


def _to_tensorboard(log_dir: str, out_dir: Path, staged: Path) -> Path:
    """A copy of the trace as torch-tb-profiler lists it: run = the output folder as given relative
    to the current directory (`runs/profile/train`, a sweep's `.../<id>/<job>`), so one log dir
    holds every capture and sweep job as its own run."""
    from yoloprof.capturing.extras import tensorboard

    try:
        run = out_dir.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        run = out_dir.name
    parts = [tensorboard.run_name(p) for p in run.split("/") if p not in ("", ".", "..")]
    return tensorboard.export(staged, Path(log_dir), "/".join(parts) or "yoloprof")


def _final_trace_name(staged: Path) -> str:
    """`.partial.profile_trace.json[.gz]` -> `profile_trace.json[.gz]`."""
    return staged.name[len(_STAGED):]


def assemble(settings: CaptureSettings, device: DeviceInfo, amp: bool, run: Any,
             trace_path: Path | None, warnings: list[str]) -> dict[str, Any]:
    from yoloprof.capturing.device.environment import collect_env

    config = settings.to_dict()
    # precision is the effective dtype (settings arrive resolved); amp says whether autocast ran
    config.update(device=str(device.torch_device), amp=amp, batch=settings.batch,
                  workers_effective=run.workers, phase_timing=run.phase_timing)
    from yoloprof.workloads.families import input_size

    ran = input_size(settings).imgsz  # the size the model ran at (its family rounds `imgsz` up)
    if ran is not None and ran != settings.imgsz:
        config.update(imgsz=ran, imgsz_asked=settings.imgsz)
    from yoloprof.capturing.device.environment import runtime_warnings

    if run.warmup is not None:  # the warm-up each trial used (docs/steady-state.md)
        config["warmup_used"] = run.warmup
    env = collect_env(device)
    profile = empty_profile(settings.mode, config=config, env=env)
    return fill_profile(profile, run, device, settings.precision, trace_path, [*warnings, *runtime_warnings(env)],
                        trace_name=_final_trace_name(trace_path) if trace_path is not None else None)


def fill_profile(profile: dict[str, Any], run: Any, device: DeviceInfo, compute_dtype: str,
                 trace_path: Path | None, warnings: list[str], trace_name: str | None = None) -> dict[str, Any]:
    """Every measured section of a profile from a RunResult and the trace: shared by `capture`
    and by `yoloprof.profile` around a user's own loop, so both write the same profile."""
    from yoloprof.capturing.builtin.profile_sections import (add_flops, merge_trace_sections, metrics_from_samples,
                                                   phases_from_run)

    from yoloprof.capturing.passes.steady_steps import trial_spread_warnings

    spread = trial_spread_warnings(run.samples.get("step_ms") or [], profile.get("config") or {})
    profile["warnings"] = [*warnings, *run.warnings, *spread]
    if run.contention is not None:  # other processes' CPU while it ran (capturing/device/cpu_contention.py)
        from yoloprof.metrics.contention import SECTION, capture_warning

        profile[SECTION] = run.contention
        profile["warnings"] += capture_warning(run.contention.get("other_cores"), run.contention.get("cores"))
    profile["metrics"] = metrics_from_samples(run.samples)
    add_flops(profile, run.flops, device, compute_dtype, run.flop_mix)
    profile["phases"] = phases_from_run(run)
    if run.latency is not None:
        profile["latency"] = run.latency
        profile["stages"] = run.stages
    for key, section in run.sections.items():  # model facts, modules, hotspots: where measured
        if section is not None:
            profile[key] = section
    if trace_path is not None:
        interrupt.stage("analyse")
        merge_trace_sections(profile, trace_path, name=trace_name or trace_path.name)
    from yoloprof.metrics.verdict import decide

    profile["verdict"] = decide(profile)
    return profile
