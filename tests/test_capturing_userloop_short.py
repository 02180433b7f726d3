"""`yoloprof.profile` never gets in the loop's way: the iterations it needs, stated up front; an exit
that never raises; a results store that stays inside the folder named (docs/userloop.md)."""

from __future__ import annotations

import gc
import warnings

import pandas as pd
import pytest

import yoloprof
from yoloprof.errors import DataTooSmallError, UsageError

FAST = {"warmup": 1, "warmup_max": 1, "steps": 2, "trace_steps": 0, "flops": False}


def _run(out, n=None, **options):
    with yoloprof.profile(out, **{**FAST, **options}) as prof:
        for _ in range(n if n is not None else 10_000):
            prof.step()
            if n is None and prof.done:
                break
    return prof


def test_iterations_needed_at_the_defaults_are_34_and_announced(capsys):
    import torch

    prof = yoloprof.profile("unused", model=torch.nn.Linear(2, 2))
    # hand-worked from docs/userloop.md's table: warm-up 5, timed 20, trace 3 + 2, FLOPs 1, modules 2 + 1
    assert prof.plan.needed == 5 + 20 + (3 + 2) + 1 + (2 + 1) == 34
    assert prof.plan.settle == 20  # warmup_max auto: warmup + max(steps, 20) warm-up iterations at most
    assert prof.plan.line().startswith("the profile needs 34 iterations: 5 warm-up, 20 timed (iterations 6-25), "
                                       "5 trace, 1 FLOPs, 3 modules; up to 20 more warm-up")


def test_a_loop_of_exactly_the_planned_iterations_completes(tmp_path, capsys):
    import torch

    model = torch.nn.Linear(2, 2)
    with yoloprof.profile(tmp_path, model=model, warmup=2, warmup_max=2, steps=3, trace_steps=1, module_steps=1,
                          python_hotspots=True, hotspot_steps=1) as prof:
        planned, ran = prof.plan.needed, 0
        while not prof.done:  # the reference: iterations until every window is measured
            model(torch.randn(2, 2)).sum().backward()
            prof.step()
            ran += 1
    assert ran == planned == 2 + 3 + (1 + 2) + 1 + (1 + 1) + 1
    err = capsys.readouterr().err
    assert f"yoloprof: the profile needs {planned} iterations: 2 warm-up, 3 timed (iterations 3-5)" in err
    assert prof.result is not None and prof.result["config"]["iterations_lacking"] == 0


def test_a_loop_without_a_timed_step_says_what_was_needed(tmp_path):
    with pytest.warns(RuntimeWarning, match=r"no profile written: the loop ran 1 iteration\(s\); one timed step "
                                            r"needs 4 and the whole profile 6 \(3 warm-up, 2 timed, 1 FLOPs\)"):
        prof = _run(tmp_path, n=1, warmup=3, warmup_max=3, flops=True)
    assert prof.result is None and not any(tmp_path.iterdir())


def test_exit_never_raises_when_writing_fails(tmp_path, monkeypatch):
    from yoloprof.profiles import io

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "write_profile", broken)
    frozen = gc.get_freeze_count()
    with pytest.warns(RuntimeWarning, match="no profile written: OSError.*No space left"):
        prof = _run(tmp_path)
    assert prof.result is None and prof.path is None
    assert gc.get_freeze_count() <= frozen  # the block's frozen heap is released all the same


def test_an_interrupt_while_writing_goes_on(tmp_path, monkeypatch):
    from yoloprof.profiles import io

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "write_profile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path)


def test_warnings_turned_into_errors_still_do_not_raise(tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prof = _run(tmp_path, n=1, warmup=3, warmup_max=3)
    assert prof.result is None
    assert "yoloprof: warning: yoloprof.profile: no profile written" in capsys.readouterr().err


def test_results_store_stays_inside_the_folder_named(tmp_path, capsys):
    out = tmp_path / "mine"
    prof = _run(out)
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # nothing beside the folder named
    rows = pd.read_parquet(out / "results")
    assert len(rows) == 1 and rows["profile_path"].tolist() == ["profile.json"]
    assert rows["source"].tolist() == ["profile"]
    err = capsys.readouterr().err
    assert f"yoloprof: wrote {prof.path}; its row added to the results store {out / 'results'} " \
           f"(yoloprof history {out})" in err


def test_project_names_where_the_row_goes(tmp_path, capsys):
    out, project = tmp_path / "mine", tmp_path / "proj"
    _run(out, project=project)
    assert not (out / "results").exists()
    assert len(pd.read_parquet(project / "results")) == 1
    assert f"results store {project / 'results'}" in capsys.readouterr().err
    _run(tmp_path / "off", project=False)
    assert not (tmp_path / "off" / "results").exists()
    assert "no results-store row (project=False)" in capsys.readouterr().err


def test_a_bad_project_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="project must be"):
        yoloprof.profile(tmp_path, project=3)  # type: ignore[typeddict-item]


def test_a_sweep_job_whose_loop_is_too_short_fails_as_data_too_small(tmp_path, monkeypatch):
    from yoloprof.sweep.usertask import run_task

    (tmp_path / "short_task.py").write_text(
        "import yoloprof\n"
        "def train(out='x'):\n"
        "    with yoloprof.profile(out, warmup=3, steps=2, trace_steps=0) as prof:\n"
        "        prof.step()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning), pytest.raises(DataTooSmallError, match="short_task.train.*one timed step"):
        run_task({"_target_": "short_task.train"}, tmp_path / "job")
