"""The profile `yoloprof.profile` writes when its block ends: the measured windows assembled into
profile.json (the same sections `yoloprof run` writes: capturing/builtin/capture_entry.fill_profile),
the row in the results store (loop_output.py), and the warnings of a loop that ended early or of a
profile that could not be written. Never raises into the user's loop: `Profile.__exit__` turns
any failure here into `give_up`'s warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yoloprof.capturing.device.torch_device import DeviceInfo
from yoloprof.capturing.passes.run_result import RunResult, phase_timing_name
from yoloprof.capturing.passes.steady_steps import SteadySteps, cap_warnings, warmup_section
from yoloprof.capturing.passes.timing import TrialResult
from yoloprof.capturing.userloop.loop_output import ProjectArg, record_row, say, warn_user
from yoloprof.capturing.userloop.loop_plan import LABELS, LoopPlan
from yoloprof.capturing.userloop.loop_support import output_names


class LoopWrite:
    """The writing part of `loop.Profile` (a mixin: it reads the profile's own fields)."""

    announce: bool
    plan: LoopPlan
    project: ProjectArg
    options: dict[str, Any]
    out_dir: Path
    model: Any
    kind: str
    batch_size: int | None
    device: DeviceInfo
    iterations: int
    path: Path | None
    _job: dict[str, Any] | None
    _steady: SteadySteps | None
    _cap: int
    _trials: list[TrialResult]
    _notes: list[str]
    _rank: int | None
    _world: int
    _threads: int
    _threads_arg: int | None
    _phase_order: list[str]
    _batch_bytes: int | None
    _cpu: Any  # capturing/device/cpu_contention.Sampler
    _flops: float | None
    _mix: Any
    _sections: dict[str, Any]
    _trace_path: Path | None

    def give_up(self, why: str, too_few: bool = False, stacklevel: int = 3) -> None:
        """No profile: one warning (a Python RuntimeWarning; in a sweep job, the job's reason)."""
        text = f"yoloprof.profile: no profile written: {why}"
        if self._job is not None:
            self._job.setdefault("failures", []).append((too_few, text))
        warn_user(text, stacklevel=stacklevel)

    def _needed(self) -> int:
        """Iterations every window needs, the timed one as far as its warm-up is known now."""
        timed = self._steady.needed if self._steady is not None else None
        return sum(timed if name == "timed" and timed is not None else n for name, n in self.plan.windows)

    def _missing(self, window: str | None) -> str:
        return ", ".join(LABELS[name] for name in self.plan.missing(window))

    def _warmup_used(self) -> dict[str, Any]:
        """`config.warmup_used`: the user's untouched warm-up plus the timed steps it extended to."""
        record = self._steady.record() if self._steady is not None else {"steps": 0, "steady": None}
        total = {"steps": self.options["warmup"] + record["steps"], "steady": record["steady"]}
        return warmup_section(self.options["warmup"], self._cap, [total])

    def _write(self, completed: bool, window: str | None) -> dict[str, Any] | None:
        warnings = list(self._notes)
        lacked = 0 if completed else self._needed() - self.iterations
        if not self._trials:
            self.give_up(f"the loop ran {self.iterations} iteration(s); one timed step needs "
                         f"{self.plan.count('warmup') + 1} and the whole profile {self._needed()} "
                         f"({self.plan.split()}); not complete: {self._missing(window)}; run more iterations "
                         "or lower warmup/steps", too_few=True, stacklevel=4)
            return None
        if lacked:
            extended = self._needed() - self.plan.needed
            more = f", and {extended} more as the warm-up extended" if extended > 0 else ""
            text = (f"the loop ended {lacked} iteration(s) early: it ran {self.iterations} of the "
                    f"{self._needed()} needed ({self.plan.split()}{more}); not complete: {self._missing(window)}")
            warnings.append(text)
            warn_user(f"yoloprof.profile: {text}", stacklevel=3)
        profile = self._assemble(warnings, lacked)
        from yoloprof.profiles.io import write_profile

        profile_name, _ = output_names(self._rank)
        self.path = write_profile(self.out_dir / profile_name, profile)
        if self._job is not None:
            self._job["written"].append(profile)
            return profile  # a sweep job records its own row
        where = "no results-store row (rank > 0: rank 0's is the run's)"
        if self._rank in (None, 0):  # one row per distributed run
            where = record_row(profile, self.out_dir, self.project)[1]
        if self.announce:
            say(f"wrote {self.path}; {where}")
        return profile

    def _assemble(self, warnings: list[str], lacked: int) -> dict[str, Any]:
        from yoloprof.capturing.builtin.capture_entry import fill_profile
        from yoloprof.capturing.passes.timing import trial_metrics
        from yoloprof.capturing.device.environment import collect_env
        from yoloprof.capturing.extras.model_facts import facts_section
        from yoloprof.profiles.model import empty_profile

        warmup = self._warmup_used()
        warnings = warnings + cap_warnings(warmup, what="the loop", knob="warmup_max")
        samples = trial_metrics(self._trials, self.batch_size or 1)
        if not self.batch_size:
            samples.pop("img_per_s", None)
        model_section = facts_section(self.model, None)
        model_section["batch_bytes"] = self._batch_bytes
        run = RunResult(samples=samples, phase_order=tuple(self._phase_order), workers=0,
                        phase_timing=phase_timing_name(self.device.is_cuda), flops=self._flops, flop_mix=self._mix,
                        sections={"model": model_section, **self._sections}, contention=self._cpu.section())
        if self.kind == "infer":  # the latency block `yoloprof infer` writes (capturing/passes/latency.py)
            from yoloprof.capturing.passes.latency import latency_of
            from yoloprof.capturing.passes.step_calls import INFER_STAGES

            # the stage split where every phase is one of the pipeline's stages (the schema's names)
            stages = INFER_STAGES if set(self._phase_order) <= set(INFER_STAGES) else ()
            latency = latency_of(self._trials, stages)
            samples.update(latency.per_trial)
            run.latency, run.stages, run.warnings = latency.table, latency.stages, latency.warnings
        config = {"source": "yoloprof.profile", "mode": self.kind,
                  "model": type(self.model).__name__ if self.model is not None else None,
                  "device": str(self.device.torch_device), "batch": self.batch_size, "amp": None,
                  **self.options, "warmup_used": warmup, "phase_timing": run.phase_timing,
                  "iterations_run": self.iterations,
                  "iterations_lacking": lacked, "rank": self._rank, "world_size": self._world,
                  "threads": self._threads, "threads_set": self._threads_arg is not None}
        from yoloprof.capturing.userloop.loop_device import device_lines

        env = collect_env(self.device)
        profile = empty_profile(self.kind, config=config, env=env)
        trace_path = self._trace_path if self._trace_path is not None and self._trace_path.exists() else None
        warnings = [*warnings, *device_lines(env, self._mix, self.device)]
        # the compute dtype is the one the FLOPs ran in (capturing/device/flop_count.py), float32 only without a split
        return fill_profile(profile, run, self.device, "float32", trace_path, warnings)
