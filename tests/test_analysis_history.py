"""`yoloprof history` and `yoloprof gate` over the project's results store (docs/history.md).

References: simulated series whose step commit is known, the maximum-likelihood split with the
true means known (the best any method can do for the exact commit), scipy's Welch interval, and
a real git repository with a slowdown commit captured with `yoloprof.profile`.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pytest
from scipy import stats as sps

from helpers.paths import run_main
from yoloprof.analysis.gate import judge
from yoloprof.capturing.builtin.store_record import record_capture
from yoloprof.metrics.changepoints import find_splits, screen, step_effects
from yoloprof.profiles import store


def _row(i: int, **kw) -> dict:
    return {"status": "ok", "config_key": "k", "step_ms": 10.0 + i, "cpu_model": "c", "device_name": "c",
            "threads": 1, **kw}


# ---- the store ---------------------------------------------------------------------------------
def test_concurrent_appends_are_each_kept_once_and_compacted(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "COMPACT_AT", 5)
    monkeypatch.setattr(store, "MERGE_COMPACT_AT", 3)

    def writer(w: int) -> None:
        for i in range(12):
            store.append(tmp_path, _row(i, hostname=f"w{w}"))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list(store.store_dir(tmp_path).rglob("*.parquet"))
    assert len(files) < 48 // 2, "compaction merged the one-row files"
    table = store.read_store(tmp_path)
    assert table.num_rows == 48 and len(set(table.column("row_id").to_pylist())) == 48
    # the layout is a plain hive dataset: pyarrow.dataset and pandas read it without yoloprof
    other = ds.dataset(store.store_dir(tmp_path), format="parquet", partitioning="hive").to_table()
    import pandas as pd

    frame = pd.read_parquet(store.store_dir(tmp_path))
    assert other.num_rows >= 48 and len(frame) >= 48
    assert set(frame["row_id"]) == set(table.column("row_id").to_pylist())
    assert set(frame["machine"].astype(str)) == {store.machine_key(_row(0))}


def test_a_duplicate_left_by_an_interrupted_compaction_counts_once(tmp_path):
    path = store.append(tmp_path, _row(1))
    copy = path.with_name(store.COMPACT_PREFIX + "x.parquet")
    copy.write_bytes(path.read_bytes())  # the part and its compact copy both present
    assert store.read_store(tmp_path).num_rows == 1


def test_a_store_that_cannot_be_written_is_a_warning_not_a_failure(tmp_path, capsys):
    blocker = tmp_path / "proj"
    blocker.write_text("a file where the project folder should be")
    profile = {"created_at": "2026-01-01T00:00:00Z", "kind": "infer", "config": {}, "env": {}, "metrics": {}}
    assert record_capture(profile, None, blocker / "user", source="profile") is None
    assert "not added to the results store" in capsys.readouterr().err


# ---- change points -----------------------------------------------------------------------------
def _series(rng, per_commit: int, tau: int | None):
    g = np.repeat(np.arange(50), per_commit)
    y = rng.normal(0, 0.03, g.size)
    if tau is not None:
        y[g >= tau] += np.log(1.06)
    return y, g


def _oracle(y, g, tau_range):
    d = np.log(1.06)
    return max(tau_range, key=lambda t: -((y[g < t]) ** 2).sum() - ((y[g >= t] - d) ** 2).sum())


@pytest.mark.parametrize("per_commit, exact_min", [(1, 0.45), (3, 0.82)])
def test_a_six_percent_step_in_three_percent_noise_is_found(per_commit, exact_min):
    """50 commits, 3% process noise, one 6% step: found at the right commit about as often as the
    best possible rule (ML with the true means known), inside its location set in >= 85%, and
    flat series are flagged in <= 5%. bench/bench_history.py runs 1000 series of each."""
    rng = np.random.default_rng(7)
    n = 60
    exact = covered = oracle = flagged = 0
    for i in range(n):
        tau = int(rng.integers(10, 41))
        y, g = _series(rng, per_commit, tau)
        found = find_splits(y, g, seed=i)
        exact += any(int(g[s.cut]) == tau for s in found)
        covered += any(g[s.location[0]] <= tau <= g[s.location[1]] for s in found)
        oracle += _oracle(y, g, range(1, 50)) == tau
        z, gz = _series(rng, per_commit, None)
        flagged += bool(find_splits(z, gz, seed=1000 + i))
    assert exact / n >= exact_min and exact >= oracle - 0.1 * n
    assert covered / n >= 0.85
    assert flagged / n <= 0.05


def test_the_batched_first_test_drops_only_series_the_full_search_would_not_flag():
    rng = np.random.default_rng(2)
    many = []
    for i in range(90):
        y, g = _series(rng, 1 + i % 2, 25 if i % 3 == 0 else None)
        many.append((y, g))
    kept = screen(many)
    flagged = [bool(find_splits(y, g)) for y, g in many]
    assert all(k for k, f in zip(kept, flagged) if f) and sum(kept) < len(many)


def test_step_size_and_interval_match_scipy_welch():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 0.03, 12), rng.normal(0.05, 0.02, 9)
    (eff,) = step_effects([(a, b)])
    ref = sps.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert eff["ratio"] == pytest.approx(np.exp(b.mean() - a.mean()))
    assert eff["ci_low"] == pytest.approx(np.exp(ci.low)) and eff["ci_high"] == pytest.approx(np.exp(ci.high))
    assert eff["p_welch"] == pytest.approx(ref.pvalue)


def test_the_gate_rarely_fails_identical_work_and_catches_a_real_slowdown():
    """Simulated process values (3% noise): a new capture of the same distribution is called
    regressed in at most alpha/2 of cases; a 15% slowdown with 20 baseline captures is caught."""
    rng = np.random.default_rng(11)
    same = sum(judge(np.exp(rng.normal(0, 0.03, 20)), np.exp(rng.normal(0, 0.03, 1)), "lower", 0.05, 0.02)
               ["verdict_code"] == "regressed" for _ in range(400))
    assert same / 400 <= 0.025
    slow = sum(judge(np.exp(rng.normal(0, 0.03, 20)), np.exp(rng.normal(np.log(1.15), 0.03, 1)), "lower", 0.05,
                     0.02)["verdict_code"] == "regressed" for _ in range(100))
    assert slow >= 85


# ---- a real git repository ---------------------------------------------------------------------
MODEL = '''import time

import torch

torch.set_num_threads(1)
PAUSE_S = {pause}
_a = torch.randn(32, 32)


def step():
    x = torch.tanh(_a @ _a)  # a little compute
    time.sleep(PAUSE_S)  # most of the step waits, as on I/O: steady even on a machine shared by many jobs
    return x
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _capture_at(repo: Path, commit: str, project: Path) -> None:
    import yoloprof

    _git(repo, "checkout", "-q", commit)
    scope: dict = {}
    exec(compile((repo / "mymodel.py").read_text(), "mymodel.py", "exec"), scope)
    with yoloprof.profile(project / "user", warmup=1, steps=6, trace_steps=0, modules=False, flops=False,
                          project=project) as prof:
        while not prof.done:
            scope["step"]()
            prof.step()


@pytest.mark.slow
def test_history_over_a_real_repository_finds_the_slowdown_commit(tmp_path, monkeypatch):
    repo, project = tmp_path / "repo", tmp_path / "repo" / "runs"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / ".gitignore").write_text("runs/\n")
    commits = []
    for i, pause in enumerate([0.002] * 3 + [0.006] * 3):  # the 4th commit triples the step
        (repo / "mymodel.py").write_text(MODEL.format(pause=pause))
        (repo / "notes.txt").write_text(f"commit {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    monkeypatch.chdir(repo)
    for _ in range(3):  # rounds: the commits alternate, so a change of machine load is not a commit's
        for c in commits:
            _capture_at(repo, c, project)
    res = run_main("history", str(project), "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    (machine,) = data["machines"]
    (series,) = machine["series"]
    assert series["order"] == "git" and series["commits"] == 6 and series["captures"] == 18
    assert len(series["change_points"]) == 1, (series["points"], [(c["index"], c["p"], c["change_pct"])
                                                                for c in series["change_points"]])
    (cp,) = series["change_points"]
    assert cp["commit"] == commits[3] and cp["exact"] and cp["direction"] == "regression"
    assert cp["ci_low"] > 1.3
    # the gate: the latest commit again (same speed: passes), then a slower one (exit 4)
    # (a second try only when the first is judged regressed: a neighbour on a 2-core machine,
    # CI's SLURM jobs or another worker, can slow one whole capture of 6 ms steps by 10%)
    for _ in range(2):
        _capture_at(repo, commits[-1], project)
        ok = run_main("gate", str(project), str(project / "user" / "profile.json"), cwd=repo)
        if ok.returncode == 0:
            break
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (repo / "mymodel.py").write_text(MODEL.format(pause=0.018))
    _git(repo, "commit", "-q", "-am", "slower")
    _capture_at(repo, "HEAD", project)
    bad = run_main("gate", str(project), str(project / "user" / "profile.json"), cwd=repo)
    assert bad.returncode == 4 and "regressed" in bad.stdout, bad.stdout + bad.stderr


def test_the_html_page_plots_each_series_and_fetches_nothing(tmp_path):
    from yoloprof.analysis.history import HistoryQuery, compute_history
    from yoloprof.render.history_report import render_history_html

    rng = np.random.default_rng(5)
    for i in range(12):
        store.append(tmp_path, _row(0, step_ms=float(np.exp(rng.normal(0, 0.01))) * (1.5 if i >= 6 else 1.0),
                                    git_commit=None, started_at=None))
    result = compute_history(HistoryQuery(tmp_path, repo=tmp_path))
    (s,) = result["machines"][0]["series"]
    assert s["order"] == "capture time" and [cp["index"] for cp in s["change_points"]] == [6]
    page = render_history_html(result)
    assert page.count("<svg") == 1 and "<script" not in page
    assert "src=" not in page and "href=" not in page.replace('href="#', "")


def test_a_cli_capture_appends_its_row_and_a_short_history_gates_inconclusive(tmp_path):
    from yoloprof.capturing.builtin.store_record import profile_machine
    from yoloprof.profiles.io import read_profile

    proc = run_main("infer", "--device", "cpu", "--imgsz", "32", "--warmup", "1", "--runs", "2", "--no-trace",
                    "--project", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    profile = read_profile(tmp_path / "infer" / "profile.json")
    (row,) = store.read_store(tmp_path).to_pylist()
    assert row["source"] == "infer" and row["profile_path"] == "infer/profile.json" and row["status"] == "ok"
    assert row["config_key"] == row["group_hash"] and row["imgsz"] == 32 and row["runs"] == 2
    assert row["step_ms"] == pytest.approx(profile["metrics"]["step_ms"]["value"])
    assert row["profile_created_at"] == profile["created_at"]
    assert row["machine"] == store.machine_key(profile_machine(profile))
    gate = run_main("gate", str(tmp_path), str(tmp_path / "infer" / "profile.json"), "--dirty", "--json")
    assert gate.returncode == 0 and json.loads(gate.stdout)["judgements"][0]["verdict_code"] == "inconclusive"


@pytest.mark.parametrize("args, code, text", [
    (("history", "{p}/nowhere"), 2, "no results store"),
    (("history", "{p}", "--metric", "bogus_ms"), 2, "not a stored metric"),
    (("history", "{p}", "--where", "batch"), 2, "give key=value"),
    (("history", "{p}", "--where", "nosuch=1"), 2, "not a results column"),
    (("gate", "{p}", "{p}/missing.json"), 2, "missing.json"),
    (("gate", "{p}", "{p}/notes.txt"), 1, "notes.txt"),
])
def test_bad_history_and_gate_input_is_one_line_and_its_exit_code(tmp_path, args, code, text):
    store.append(tmp_path, _row(1))
    (tmp_path / "notes.txt").write_text("not a profile")
    proc = run_main(*(a.format(p=tmp_path) for a in args))
    assert proc.returncode == code and text in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_step_between_captured_commits_with_uncaptured_ones_between_is_a_range(tmp_path):
    from yoloprof.analysis.history import _attribution
    from yoloprof.render.history_report import attribution

    _git(tmp_path, "init", "-q")
    commits = []
    for i in range(3):
        (tmp_path / "f.txt").write_text(str(i))
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", str(i))
        commits.append(_git(tmp_path, "rev-parse", "HEAD"))
    gap = _attribution([commits[0], commits[2]], 1, tmp_path, True)
    assert not gap["exact"] and gap["commits_in_range"] == 2
    assert attribution(gap) == f"{commits[0][:10]}..{commits[2][:10]} (2 commits)"
    assert _attribution([commits[1], commits[2]], 1, tmp_path, True)["exact"]


def test_two_machines_are_never_mixed_in_history_or_in_the_gate(tmp_path):
    import datetime as dt

    from helpers.profiles import cpu_train_profile
    from yoloprof.analysis.history import HistoryQuery, compute_history
    from yoloprof.profiles.io import write_profile

    rng = np.random.default_rng(4)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    for i, (cpu, ms) in enumerate([("A", 10.0)] * 8 + [("B", 20.0)] * 8):  # B's captures all come later
        store.append(tmp_path, {**_row(0), "cpu_model": cpu, "device_name": cpu, "torch_version": "2.5",
                                "cuda_version": "none", "mode": "train", "batch": 2, "imgsz": 128, "device": "cpu",
                                "started_at": t0 + dt.timedelta(minutes=i),
                                "step_ms": ms * float(np.exp(rng.normal(0, 0.01)))})
    result = compute_history(HistoryQuery(tmp_path, repo=tmp_path))
    assert len(result["machines"]) == 2 and "never mixed" in result["notes"][0]
    assert all(len(m["series"]) == 1 and not m["series"][0]["change_points"] for m in result["machines"])
    new = cpu_train_profile(step_ms=13.0)  # 30% slower than machine A's history, faster than B's
    new["env"].update(cpu_model="A", device_name="A", torch="2.5", threads=1)
    write_profile(tmp_path / "new.json", new)
    proc = run_main("gate", str(tmp_path), str(tmp_path / "new.json"), "--json")
    assert proc.returncode == 4, proc.stderr
    out = json.loads(proc.stdout)
    assert out["judgements"][0]["baseline_n"] == 8 and out["judgements"][0]["baseline_mean"] == pytest.approx(10, rel=0.02)
    assert "other machines" in out["notes"][0]
