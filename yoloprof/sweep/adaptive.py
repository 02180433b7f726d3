"""`trial=auto`: a sweep that runs trials until each comparison is decided (docs/sweeps.md).

Round 1 runs `adaptive.min_trials` trials of every configuration, interleaved (trials outermost,
configurations alternating, as `launch.order=interleave`). After each round every comparison with
its baseline (the pairs the analysis makes: `analysis.baseline` / `analysis.vary` / the default
rule, analysis/configs.py) is looked at with the group-sequential rule (metrics/sequential.py) on
`adaptive.metric`, one value per job (the process mean: one job = one fresh process = one
replicate). A comparison stops when improved, regressed or equivalent; the next round adds one
trial (new job numbers, the next trial values) to every configuration that is part of a
comparison still open - a baseline runs on while any of its comparisons is open. The sweep stops
when every comparison is decided, at `adaptive.max_trials`, or when the next round would end past
`adaptive.budget_s`. The manifest's `adaptive` record says what each round ran and why the sweep
stopped; the analysis (analysis/adaptive_verdicts.py) applies the same rule to the final verdicts.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from yoloprof.config.translate import node_dict
from yoloprof.defs import files
from yoloprof.defs import metrics as registry
from yoloprof.errors import UsageError
from yoloprof.metrics import sequential
from yoloprof.sweep import grid

# why a sweep stopped (the manifest's adaptive.stopped)
STOPS = {"decided": "every comparison is decided", "max_trials": "adaptive.max_trials reached",
         "budget": "the next round would end past adaptive.budget_s",
         "no_comparison": "no configuration has a baseline to be compared with",
         "failed": "every open comparison has a configuration whose jobs failed"}


@dataclass(frozen=True)
class Settings:
    """The `adaptive` settings (config/schema.py AdaptiveConf) with the analysis' own."""

    budget_s: float | None
    max_trials: int
    min_trials: int
    metric: str
    alpha: float
    noise: float
    baseline: tuple[str, ...]
    vary: str | None

    @classmethod
    def from_config(cls, cfg: Any) -> "Settings":
        ad, an = node_dict(cfg.adaptive), node_dict(cfg.analysis)
        s = cls(budget_s=ad["budget_s"], max_trials=int(ad["max_trials"]), min_trials=int(ad["min_trials"]),
                metric=str(ad["metric"]), alpha=float(an["alpha"]), noise=float(an["noise"]),
                baseline=tuple(an.get("baseline") or ()), vary=an.get("vary"))
        try:
            sequential.look_plan(s.min_trials, s.max_trials)
        except ValueError as exc:
            raise UsageError(f"adaptive: {exc}") from exc
        if registry.better(s.metric) is None and s.metric not in _row_metrics():
            raise UsageError(f"adaptive.metric={s.metric}: not a row metric; use one of {', '.join(_row_metrics())}")
        return s


def _row_metrics() -> list[str]:
    from yoloprof.profiles.rows import METRICS

    return list(METRICS)


def round_jobs(configs: list[list[str]], trials: dict[int, range], order: str) -> list[list[str]]:
    """The jobs of one round: each configuration's new trials, trials outermost; interleaved, every
    odd trial runs its configurations in reverse (A B, B A, ...), as `plan.interleave` orders a
    grid, so a drift of the machine falls on every configuration alike across rounds too."""
    jobs: list[list[str]] = []
    for t in sorted({t for r in trials.values() for t in r}):
        group = [grid.with_trial(configs[c], t) for c in sorted(trials) if t in trials[c]]
        jobs += group[::-1] if order == "interleave" and t % 2 else group
    return jobs


def first_round(configs: list[list[str]], min_trials: int, order: str = "interleave") -> list[list[str]]:
    return round_jobs(configs, {c: range(min_trials) for c in range(len(configs))}, order)


def process_values(rows: Any, metric: str) -> dict[str, list[float]]:
    """Per configuration (group_hash), the log of each ok job's process mean of `metric`, in trial
    order."""
    out: dict[str, list[tuple[int, float]]] = {}
    samples = f"{metric}_samples"
    for row in rows.to_dict("records"):
        if row.get("status") != "ok" or row.get("group_hash") is None:
            continue
        raw = row.get(samples)
        values = [float(v) for v in raw] if raw is not None and not isinstance(raw, float) else []
        value = sum(values) / len(values) if values else row.get(metric)
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            continue
        out.setdefault(str(row["group_hash"]), []).append((int(row.get("trial") or 0), math.log(value)))
    return {g: [v for _, v in sorted(vals)] for g, vals in out.items()}


def pairs_of(sweep_dir: Path, s: Settings) -> dict[str, str]:
    """group_hash -> baseline group_hash, as the analysis pairs them (the rows as it collects them)."""
    from yoloprof.analysis.collect import collect
    from yoloprof.analysis.configs import build_configs, plan_baseline
    from yoloprof.errors import ProfileError

    try:
        ok = collect(sweep_dir, load_profiles=False).ok
        plan = plan_baseline(build_configs(ok), baseline=list(s.baseline) or None, vary=s.vary)
    except (ProfileError, UsageError) as exc:  # no ok job yet; a vary/baseline that pairs nothing
        from yoloprof.sweep.launchers import say

        say(f"trial=auto: no comparison to decide ({exc})")
        return {}
    return dict(plan.pairs)


class Rounds:
    """The state of an adaptive sweep between rounds, and its manifest record."""

    def __init__(self, runner: Any, configs: list[list[str]], sweep_dir: Path) -> None:
        self.runner, self.configs, self.sweep_dir = runner, configs, sweep_dir
        self.s = Settings.from_config(runner.config)
        self.plan = sequential.look_plan(self.s.min_trials, self.s.max_trials)
        self.trials = [0] * len(configs)       # trials launched per configuration
        self.group: dict[int, str] = {}        # configuration index -> group_hash (from its rows)
        self.decisions: dict[str, dict[str, Any]] = {}  # candidate group_hash -> last decision
        self.rounds: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.job_s: list[float] = []

    def run_round(self, trials: dict[int, range], look: int) -> list[Any]:
        jobs = round_jobs(self.configs, trials, self.runner.order())
        first = self.runner.next_job
        if not self.rounds:  # later rounds only add trial values to configurations already checked
            self.runner.validate(jobs, total=first + len(jobs))
        else:
            from yoloprof.sweep import progress

            progress.set_total(first + len(jobs))
        t0 = time.monotonic()
        returns = self.runner.launch(jobs)
        self.job_s.append((time.monotonic() - t0) / max(1, len(jobs)))
        for c, r in trials.items():
            self.trials[c] = max(self.trials[c], r.stop)
        self.rounds.append({"round": len(self.rounds) + 1, "look": look, "trials_per_config": self.plan[look - 1],
                            "jobs": list(range(first, first + len(jobs))), "job_overrides": jobs,
                            "wall_s": round(time.monotonic() - t0, 3)})
        return returns

    def look(self, look: int) -> tuple[set[int], str | None]:
        """Decide what can be decided at `look`; (configurations to run on, stop reason or None)."""
        from yoloprof.profiles.rows import read_rows

        rows = read_rows(self.sweep_dir)
        self._map_groups(rows)
        pairs = pairs_of(self.sweep_dir, self.s)
        values = process_values(rows, self.s.metric)
        better = registry.better(self.s.metric) or "lower"
        n = self.plan[look - 1]
        todo: list[tuple[str, str]] = []
        for g, base in pairs.items():
            if self.decisions.get(g, {}).get("decided"):
                continue
            if len(values.get(g, [])) < n or len(values.get(base, [])) < n:
                self.decisions[g] = {"baseline": base, "code": "failed", "look": look, "decided": False,
                                     "why": f"fewer than {n} ok jobs on a side"}
            else:
                todo.append((g, base))
        rejected = sum(d["code"] in sequential.REJECTING for d in self.decisions.values())
        found = sequential.decide_family([(values[b], values[g], look) for g, b in todo], self.plan,
                                         better=better, alpha=self.s.alpha, noise=self.s.noise,
                                         family=len(pairs), rejected=rejected)
        for (g, base), d in zip(todo, found):
            self.decisions[g] = {"baseline": base, **asdict(d), "decided": d.decided}
        self.rounds[-1]["decisions"] = {g: dict(v) for g, v in self.decisions.items()}
        open_groups = {g for g, d in self.decisions.items() if d["code"] == sequential.UNDECIDED}
        open_groups |= {self.decisions[g]["baseline"] for g in set(open_groups)}
        configs = {c for c, g in self.group.items() if g in open_groups}
        if not pairs:
            return set(), "no_comparison"
        if all(d["decided"] for d in self.decisions.values()):
            return set(), "decided"
        if not configs:
            failed = any(d["code"] == "failed" for d in self.decisions.values())
            return set(), "failed" if failed else "max_trials"
        return configs, None

    def _map_groups(self, rows: Any) -> None:
        launched = {num: job for r in self.rounds for num, job in zip(r["jobs"], r["job_overrides"])}
        keys = {tuple(grid.with_trial(c, 0)): i for i, c in enumerate(self.configs)}
        for row in rows.to_dict("records"):
            job = launched.get(int(row["job_num"])) if row.get("job_num") is not None else None
            if job is not None and row.get("group_hash") is not None:
                trial_free = [i if not i.lstrip("+").startswith("trial=") else i.split("=")[0] + "=0" for i in job]
                c = keys.get(tuple(trial_free))
                if c is not None:
                    self.group.setdefault(c, str(row["group_hash"]))

    def over_budget(self, jobs: int) -> bool:
        if self.s.budget_s is None:
            return False
        per_job = sum(self.job_s) / len(self.job_s) if self.job_s else 0.0
        return time.monotonic() - self.started + per_job * jobs > self.s.budget_s

    def record(self, stopped: str) -> None:
        """The manifest's `adaptive` record (not part of its config_hash)."""
        from yoloprof.profiles.io import write_bytes_atomic

        path = self.sweep_dir / files.MANIFEST
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        labels = {g: " ".join(i for i in self.configs[c] if not i.lstrip("+").startswith("trial="))
                  for c, g in self.group.items()}
        manifest["adaptive"] = {
            "settings": asdict(self.s), "rule": "lan-demets-obrien-fleming, holm step-down", "plan": list(self.plan),
            "family": len(self.decisions), "stopped": stopped, "why": STOPS[stopped],
            "wall_s": round(time.monotonic() - self.started, 3), "rounds": self.rounds,
            "configs": labels, "trials": {labels.get(self.group.get(c, ""), str(c)): n
                                          for c, n in enumerate(self.trials)},
            "comparisons": self.decisions}
        manifest["jobs"] = self.runner.next_job  # every round's jobs are the sweep's planned jobs
        manifest["planned"] = [{"job_num": n, "overrides": job} for r in self.rounds
                               for n, job in zip(r["jobs"], r["job_overrides"])]
        write_bytes_atomic(path, json.dumps(manifest, indent=1, default=str).encode())


def run_adaptive(runner: Any, jobs: list[list[str]], sweep_dir: Path) -> list[Any]:
    """The rounds of a trial=auto sweep; Hydra's batches of JobReturns, as the basic sweeper's."""
    from yoloprof.sweep.launchers import say

    configs = list(dict.fromkeys(tuple(j) for j in jobs))
    state = Rounds(runner, [list(c) for c in configs], sweep_dir)
    returns = state.run_round({c: range(state.plan[0]) for c in range(len(configs))}, 1)
    look, stopped = 1, None
    while True:
        run_on, stopped = state.look(look)
        if stopped is not None:
            break
        if look == len(state.plan):
            stopped = "max_trials"
            break
        n = state.plan[look]
        trials = {c: range(state.trials[c], n) for c in sorted(run_on) if state.trials[c] < n}
        if state.over_budget(sum(len(r) for r in trials.values())):
            stopped = "budget"
            break
        say(f"trial=auto: look {look}: {len(run_on)} of {len(configs)} configurations undecided; "
            f"round {look + 1} runs {sum(len(r) for r in trials.values())} jobs (trials up to {n})")
        look += 1
        returns += state.run_round(trials, look)
    state.record(stopped)
    say(f"trial=auto: stopped after {len(state.rounds)} rounds, {runner.next_job} jobs: {STOPS[stopped]}")
    return returns
