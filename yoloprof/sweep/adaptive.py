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

`adaptive.max_trials` unset (the default): after round 1 and before the first look, where a noise
floor is stored for the baseline's workload on this machine (metrics/noise_floor.py, `yoloprof
calibrate`), the last look is put at the processes per side that detect a change of the noise band
with 80% power (`sequential.max_trials_for`, from the floor's process-mean SD), capped by the
budget (round 1's seconds per job x the jobs of the rounds still to run must fit what is left of
`budget_s`; AUTO_MAX_TRIALS without one); else FALLBACK_MAX_TRIALS. Fixing it there uses nothing
the comparisons measured, so the plan is still fixed before the first look. A comparison the sweep
leaves undecided says what it could have seen (the smallest change detectable at its last look)
and the max_trials that would detect the noise band (metrics/decide.py).
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
from yoloprof.metrics.contention import threshold
from yoloprof.sweep import grid
from yoloprof.sweep.adaptive_values import CONTENDED, contended_jobs, limit, process_values, shortfall

FALLBACK_MAX_TRIALS = 12  # the last look when adaptive.max_trials is unset and no noise floor is known
AUTO_MAX_TRIALS = 100     # the most a noise floor sets it to when there is no budget

# why a sweep stopped (the manifest's adaptive.stopped)
STOPS = {"decided": "every comparison is decided", "max_trials": "adaptive.max_trials reached",
         "budget": "the next round would end past adaptive.budget_s",
         "no_comparison": "no configuration has a baseline to be compared with",
         "failed": "every open comparison has a configuration whose jobs failed",
         "contended": "contended jobs could not be replaced within the limit (sweep/adaptive_values.py)"}


@dataclass(frozen=True)
class Settings:
    """The `adaptive` settings (config/schema.py AdaptiveConf) with the analysis' own."""

    budget_s: float | None
    max_trials: int | None  # None: from the noise floor within the budget, else FALLBACK_MAX_TRIALS
    min_trials: int
    metric: str
    alpha: float
    noise: float
    baseline: tuple[str, ...]
    vary: str | None
    replace_contended: int | None = None  # None: max_trials (sweep/adaptive_values.py)

    @classmethod
    def from_config(cls, cfg: Any) -> "Settings":
        ad, an = node_dict(cfg.adaptive), node_dict(cfg.analysis)
        s = cls(budget_s=ad["budget_s"], max_trials=None if ad["max_trials"] is None else int(ad["max_trials"]),
                min_trials=int(ad["min_trials"]),
                metric=str(ad["metric"]), alpha=float(an["alpha"]), noise=float(an["noise"]),
                baseline=tuple(an.get("baseline") or ()), vary=an.get("vary"),
                replace_contended=None if ad.get("replace_contended") is None else int(ad["replace_contended"]))
        threshold()  # a bad YOLOPROF_CONTENDED_CORES fails before the first job
        if s.replace_contended is not None and s.replace_contended < 0:
            raise UsageError(f"adaptive.replace_contended={s.replace_contended}: must be 0 or more")
        try:
            sequential.look_plan(s.min_trials, s.first_max_trials)
        except ValueError as exc:
            raise UsageError(f"adaptive: {exc}") from exc
        if registry.better(s.metric) is None and s.metric not in _row_metrics():
            raise UsageError(f"adaptive.metric={s.metric}: not a row metric; use one of {', '.join(_row_metrics())}")
        return s

    @property
    def first_max_trials(self) -> int:
        """The last look planned before anything ran: the user's, else the fallback."""
        return self.max_trials if self.max_trials is not None else max(FALLBACK_MAX_TRIALS, self.min_trials)


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
        self.plan = sequential.look_plan(self.s.min_trials, self.s.first_max_trials)
        self.design: dict[str, Any] = {"max_trials": self.plan[-1], "from": "adaptive.max_trials"
                                       if self.s.max_trials is not None else "default"}
        self.values: dict[str, list[float]] = {}
        self.family = 0
        self.trials = [0] * len(configs)       # trials launched per configuration
        self.group: dict[int, str] = {}        # configuration index -> group_hash (from its rows)
        self.decisions: dict[str, dict[str, Any]] = {}  # candidate group_hash -> last decision
        self.rounds: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.job_s: list[float] = []
        self.lost: dict[int, int] = {}         # configuration index -> its contended jobs (kept, not used)

    def run_round(self, trials: dict[int, range], look: int, replaces: list[int] | None = None) -> list[Any]:
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
        if replaces:  # a round at the same look, in place of contended jobs
            self.rounds[-1]["replaces"] = replaces
        return returns

    def look(self, look: int) -> tuple[set[int], str | None]:
        """Decide what can be decided at `look`; (configurations to run on, stop reason or None)."""
        from yoloprof.profiles.rows import read_rows

        rows = read_rows(self.sweep_dir)
        self._map_groups(rows)
        pairs = pairs_of(self.sweep_dir, self.s)
        values = process_values(rows, self.s.metric)  # contended jobs left out (sweep/adaptive_values.py)
        hit = contended_jobs(rows)
        self.lost = {c: len(hit.get(g, [])) for c, g in self.group.items()}
        if look == 1 and self.s.max_trials is None and pairs:
            self._design(rows, pairs)
        self.values, self.family = values, len(pairs)
        better = registry.better(self.s.metric) or "lower"
        n = self.plan[look - 1]
        todo: list[tuple[str, str]] = []
        for g, base in pairs.items():
            if self.decisions.get(g, {}).get("decided"):
                continue
            if len(values.get(g, [])) < n or len(values.get(base, [])) < n:
                lacks = shortfall((g, base), values, hit, n)
                self.decisions[g] = {"baseline": base, "code": "failed", "look": look, "decided": False,
                                     "why": f"fewer than {n} ok jobs on a side"}
                if lacks is not None:  # contended jobs: replaced (sweep/adaptive_values.py)
                    self.decisions[g].update(code=CONTENDED, **lacks)
            else:
                todo.append((g, base))
        rejected = sum(d["code"] in sequential.REJECTING for d in self.decisions.values())
        found = sequential.decide_family([(values[b], values[g], look) for g, b in todo], self.plan,
                                         better=better, alpha=self.s.alpha, noise=self.s.noise,
                                         family=len(pairs), rejected=rejected)
        for (g, base), d in zip(todo, found):
            self.decisions[g] = {"baseline": base, **asdict(d), "decided": d.decided}
        self.rounds[-1]["decisions"] = {g: dict(v) for g, v in self.decisions.items()}
        open_groups = {g for g, d in self.decisions.items() if d["code"] in (sequential.UNDECIDED, CONTENDED)}
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

    def _design(self, rows: Any, pairs: dict[str, str]) -> None:
        """max_trials from the noise floor of the baseline's workload, within the budget (module doc)."""
        from yoloprof.metrics.decide import POWER
        from yoloprof.sweep.launchers import say

        try:
            floor = _floor(self.sweep_dir, rows, sorted(set(pairs.values()))[0], self.s.metric)
        except UsageError as exc:  # an unreadable noise-floor file: said, and the default kept
            say(f"trial=auto: {exc}")
            floor = None
        if floor is None:
            self.design["why"] = (f"no noise floor of {self.s.metric} for this workload on this machine "
                                  f"(yoloprof calibrate): the default {self.plan[-1]}")
            return
        n = sequential.max_trials_for(float(floor["sd"]), self.s.noise, self.s.min_trials,
                                      alpha=self.s.alpha, family=len(pairs))
        cap, cap_why = self._cap()
        chosen = max(self.s.min_trials, min(n if n is not None else cap, cap))
        self.plan = sequential.look_plan(self.s.min_trials, chosen)
        self.design = {"max_trials": chosen, "from": "noise floor", "floor_sd": floor["sd"],
                       "floor_processes": floor.get("processes"), "needed": n, "cap": cap,
                       "why": (f"{n if n is not None else 'more than 10000'} processes per side detect a change of "
                               f"{self.s.noise:.0%} ({POWER:.0%} power) at the floor's process-mean SD "
                               f"{100 * floor['sd']:.2f}%" + (f"; capped at {cap} by {cap_why}" if n is None or n > cap
                                                               else ""))}
        say(f"trial=auto: max_trials {chosen} from the noise floor: {self.design['why']}")

    def _cap(self) -> tuple[int, str]:
        """The most processes per side the budget allows: round 1's seconds per job times the
        jobs of one more trial of every configuration, for what is left of budget_s."""
        if self.s.budget_s is None:
            return AUTO_MAX_TRIALS, "AUTO_MAX_TRIALS (no adaptive.budget_s)"
        per_round = (sum(self.job_s) / len(self.job_s) if self.job_s else 0.0) * len(self.configs)
        left = self.s.budget_s - (time.monotonic() - self.started)
        more = int(left // per_round) if per_round > 0 else AUTO_MAX_TRIALS
        return min(AUTO_MAX_TRIALS, self.s.min_trials + max(0, more)), f"adaptive.budget_s={self.s.budget_s:g}"

    def explain_undecided(self) -> None:
        """For each comparison left undecided: the smallest change detectable at its last look
        (at that look's level, 80% power, from the pooled SD of the two sides' process values) and
        the max_trials that would detect a change of the noise band; added to its decision."""
        from yoloprof.metrics import decide

        for g, d in self.decisions.items():
            if d.get("decided") or d.get("code") == "failed" or "look" not in d or "n_cand" not in d:
                continue
            n, base = int(d["n_cand"]), self.values.get(d["baseline"], [])
            a, b = self.values.get(g, [])[:n], base[:n]
            if min(len(a), len(b)) < 2:
                continue
            sd = math.sqrt((_var(a) + _var(b)) / 2)
            level = sequential.look_level(self.plan, int(d["look"]), self.s.alpha, self.family)
            mde = decide.mde_pct(sd, n, level)
            need = sequential.max_trials_for(sd, self.s.noise, self.s.min_trials, alpha=self.s.alpha,
                                             family=self.family) if sd > 0 else None
            words = decide.detect_words(mde, n, "process", level, need, self.s.noise)
            if need is not None and need > n:
                words += f" (adaptive.max_trials={need})"
            d.update(mde_pct=mde, processes_needed=need, detectable=words)

    def label(self, group: str) -> str:
        """A configuration's overrides without its trial, e.g. 'precision=bfloat16'."""
        c = next((c for c, g in self.group.items() if g == group), None)
        return group[:8] if c is None else " ".join(i for i in self.configs[c] if not i.lstrip("+").startswith("trial="))

    def short_label(self, group: str) -> str:
        """`label` without the overrides every configuration shares: what tells them apart."""
        shared = set.intersection(*(set(c) for c in self.configs)) if len(self.configs) > 1 else set()
        return " ".join(i for i in self.label(group).split() if i not in shared) or self.label(group)

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

    def replacing(self) -> list[int]:
        """The contended jobs an open comparison lacks at this look ([] when none does)."""
        return sorted({j for d in self.decisions.values() if d["code"] == CONTENDED for j in d["contended"]})

    def next_trials(self, run_on: set[int], n: int) -> dict[int, range]:
        """Trials up to n uncontended jobs per configuration: one more for each contended one,
        up to the replacement limit."""
        most = limit(self.plan[-1], self.s.replace_contended)
        stop = {c: n + min(self.lost.get(c, 0), most) for c in sorted(run_on)}
        return {c: range(self.trials[c], stop[c]) for c in stop if self.trials[c] < stop[c]}

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
        labels = {g: self.label(g) for g in self.group.values()}
        manifest["adaptive"] = {
            "settings": asdict(self.s), "design": self.design, "rule": "lan-demets-obrien-fleming, holm step-down", "plan": list(self.plan),
            "family": len(self.decisions), "stopped": stopped, "why": STOPS[stopped],
            "wall_s": round(time.monotonic() - self.started, 3), "rounds": self.rounds,
            "configs": labels, "trials": {labels.get(self.group.get(c, ""), str(c)): n
                                          for c, n in enumerate(self.trials)},
            "comparisons": self.decisions}
        manifest["jobs"] = self.runner.next_job  # every round's jobs are the sweep's planned jobs
        manifest["planned"] = [{"job_num": n, "overrides": job} for r in self.rounds
                               for n, job in zip(r["jobs"], r["job_overrides"])]
        write_bytes_atomic(path, json.dumps(manifest, indent=1, default=str).encode())


def _var(x: list[float]) -> float:
    m = sum(x) / len(x)
    return sum((v - m) ** 2 for v in x) / (len(x) - 1)


def _floor(sweep_dir: Path, rows: Any, group: str, metric: str) -> dict[str, Any] | None:
    """The stored noise floor of `metric` for the workload of configuration `group` on this machine,
    found from the profile of its first ok job (its env and config are what `calibrate` keys by)."""
    from yoloprof.metrics.noise_floor import find_floor

    ok = rows[(rows["status"] == "ok") & (rows["group_hash"] == group)] if len(rows) else rows
    for rel, sid in zip(ok.get("profile_path", []), ok.get("sweep_id", [None] * len(ok))):
        for path in ([sweep_dir / str(rel), sweep_dir / str(sid) / str(rel)] if isinstance(rel, str) else []):
            if path.is_file():
                try:
                    profile = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                return find_floor(profile, metric)
    return None


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
        replaces = state.replacing()  # contended jobs: replaced at the same look, not counted as a look
        if not replaces and look == len(state.plan):
            stopped = "max_trials"
            break
        trials = state.next_trials(run_on, state.plan[look - 1 if replaces else look])
        if replaces and not trials:
            stopped = "contended"
            break
        if state.over_budget(sum(len(r) for r in trials.values())):
            stopped = "budget"
            break
        runs = f"{sum(len(r) for r in trials.values())} jobs (trials up to {max((r.stop for r in trials.values()), default=0)})"
        if replaces:
            say(f"trial=auto: look {look}: jobs {', '.join(map(str, replaces))} ran contended; "
                f"round {len(state.rounds) + 1} runs {runs} in their place")
        else:
            say(f"trial=auto: look {look}: {len(run_on)} of {len(configs)} configurations undecided; "
                f"round {len(state.rounds) + 1} runs {runs}")
            look += 1
        returns += state.run_round(trials, look, replaces)
    state.explain_undecided()
    state.record(stopped)
    say(f"trial=auto: stopped after {len(state.rounds)} rounds, {runner.next_job} jobs: {STOPS[stopped]}")
    for g, d in state.decisions.items():
        if d.get("detectable"):
            say(f"trial=auto: {state.short_label(g)} undecided against {state.short_label(d['baseline'])}: "
                f"{d['detectable']}")
    return returns
