"""`yoloprof sweep` in-process with a fake capture: grid, rows, failures, resume, bad input."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pyarrow.dataset as ds
import pytest

from helpers.fake_sweep import fake_step_ms
from yoloprof.errors import UsageError
from yoloprof.sweep.app import main
from yoloprof.profiles.rows import RESULTS_NAME, ROW_NAME, ROW_SCHEMA, read_rows, row_files

from helpers.paths import SWEEPS
# in-process jobs: these tests are about grids, rows and resume; isolation has its own tests
QUIET = ["device=cpu", "workers=0", "analysis.enabled=false", "launch.isolation=inprocess"]


# the `sweep_env` fixture (fake capture, sweeps in tmp_path) is in conftest.py


def test_multirun_grid_writes_profile_and_row_per_job(sweep_env, capsys):
    assert main(["-m", "batch=1,2", "imgsz=64,128", *QUIET]) == 0
    [sweep] = sweep_env()
    df = read_rows(sweep)
    assert len(df) == 4 and set(df["status"]) == {"ok"}
    # Hydra's basic sweeper: the first axis is the outermost
    assert [(r.batch, r.imgsz) for r in df.itertuples()] == [(1, 64), (1, 128), (2, 64), (2, 128)]
    for r in df.itertuples():
        assert r.step_ms == pytest.approx(fake_step_ms(r.batch, r.imgsz, 0, 0))
        assert (sweep / r.profile_path).is_file()
        assert (sweep / str(r.job_num) / ".hydra" / "config.yaml").is_file()
        assert r.launcher == "basic" and r.threads >= 1 and r.sweep_id == sweep.name
        assert json.loads(r.overrides)[:2] == [f"batch={r.batch}", f"imgsz={r.imgsz}"]
    results = pd.read_parquet(sweep / RESULTS_NAME)
    assert len(results) == 4 and list(results.columns) == ROW_SCHEMA.names
    dataset = ds.dataset([str(p) for p in row_files(sweep)], format="parquet")
    assert dataset.schema.remove_metadata() == ROW_SCHEMA and dataset.count_rows() == 4
    out = capsys.readouterr().out
    assert out.count(" ok ") >= 4 or out.count("ok") >= 4


def test_failed_job_writes_failed_row_and_traceback_and_exit_1(sweep_env, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_FAIL_BATCH", "2")
    assert main(["-m", "batch=1,2,3", *QUIET]) == 1
    [sweep] = sweep_env()
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok", "failed", "ok"]
    assert df.iloc[1]["error"] == "RuntimeError: fake failure for batch 2"
    log = (sweep / "1" / "yoloprof.log").read_text()
    assert "Traceback (most recent call last)" in log and "fake failure for batch 2" in log
    assert "1 of 3 jobs failed" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.stem for p in sorted(SWEEPS.glob("*.yaml"))])
def test_packaged_sweep_files_expand_to_their_grids(sweep_env, name):
    """Every file in sweeps/ runs with the fake capture (cluster_example: composed below); one test
    per file, so the files spread over the xdist workers."""
    import yaml

    path = SWEEPS / f"{name}.yaml"
    text = path.read_text()
    assert text.startswith("# @package _global_"), path.name
    spec = yaml.safe_load(text)
    assert spec["hydra"]["mode"] == "MULTIRUN" and spec["sweep_name"] == path.stem
    if path.stem == "cluster_example":
        return
    search = ["search.max_peak_mem_mib=null"] if "search" in spec else []  # the fake has no memory
    assert main([f"+sweep={path.stem}", *QUIET, *search]) == 0, path.stem
    expected = spec["hydra"]["sweeper"].get("n_trials", 1)  # a search sweeper runs n_trials jobs
    auto = spec["hydra"]["sweeper"]["params"].get("trial") == "auto"  # trial=auto: rounds decide
    for value in spec["hydra"]["sweeper"]["params"].values() if expected == 1 else ():
        if value == "auto":
            continue
        value = str(value)
        expected *= len(range(*map(int, value[6:-1].split(",")))) if value.startswith("range(") \
            else len(value.split(","))
    [sweep] = sweep_env(path.stem)
    df = read_rows(sweep)
    if auto:  # min_trials..max_trials jobs per configuration
        expected *= spec["adaptive"]["min_trials"]
        assert expected <= len(df) <= expected // spec["adaptive"]["min_trials"] * spec["adaptive"]["max_trials"]
        expected = len(df)
    assert len(df) == expected and set(df["status"]) == {"ok"}, path.stem


def test_cluster_example_targets_slurm_one_gpu_per_job():
    from yoloprof.config.compose import compose_job
    from yoloprof.sweep.plan import plan_sweep

    cfg = compose_job(["+sweep=cluster_example"])
    assert cfg.hydra.runtime.choices["hydra/launcher"] == "submitit_slurm"
    assert "SlurmLauncher" in cfg.hydra.launcher._target_
    # resources from the sweep's settings: one GPU per job, workers + 1 CPUs, a time limit
    assert cfg.hydra.launcher.gpus_per_task == 1 and cfg.hydra.launcher.tasks_per_node == 1
    assert cfg.hydra.launcher.cpus_per_task == 8 + 1 and cfg.hydra.launcher.gpus_per_node is None
    # train: (5 warm-up + 20 steps) x (3 trials + trace pass) x 5 s = 500 s -> 9 min, + 10 fixed
    assert cfg.hydra.launcher.timeout_min == 10 + 9
    plan = plan_sweep(["+sweep=cluster_example"], multirun_flag=False, config_dir=None)
    assert plan.launcher == "submitit_slurm" and plan.total == 6
    assert json.loads(plan.launcher_resources) == {
        "array_parallelism": 8, "cpus_per_task": 9, "gpus_per_task": 1, "mem_gb": 32, "nodes": 1,
        "tasks_per_node": 1, "timeout_min": 19}


def test_interleaved_trials_alternate(sweep_env):
    assert main(["+sweep=interleaved", *QUIET]) == 0
    [sweep] = sweep_env("interleaved")
    df = read_rows(sweep)
    # trials outermost, every other trial reversed: A B B A A B (a linear drift cancels)
    assert [(r.trial, r.precision) for r in df.itertuples()] == \
        [(0, "float32"), (0, "float16"), (1, "float16"), (1, "float32"), (2, "float32"), (2, "float16")]
    # trials of one side pool: equal group_hash, distinct config_hash
    assert df.groupby("precision")["group_hash"].nunique().tolist() == [1, 1]
    assert df["config_hash"].nunique() == 6


def test_resume_keeps_ok_rows_and_reruns_the_rest(sweep_env, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL_BATCH", "2")
    assert main(["-m", "batch=1,2,3", *QUIET]) == 1
    [sweep] = sweep_env()
    (sweep / "2" / ROW_NAME).unlink()  # as if killed before job 2 wrote its row
    kept = (sweep / "0" / ROW_NAME).read_bytes()
    monkeypatch.delenv("FAKE_FAIL_BATCH")
    assert main([f"resume={sweep}"]) == 0
    assert sweep_env() == [sweep]  # same dir, no new sweep
    assert (sweep / "0" / ROW_NAME).read_bytes() == kept
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok"] * 3 and list(df["batch"]) == [1, 2, 3]


@pytest.mark.parametrize("args, words", [
    (["+sweep=nope"], ["unknown sweep 'nope'", "demo", "batch_scaling", "interleaved"]),
    (["-m", "bacth=1,2"], ["bacth"]),
    (["-m", "precision=float16,float8"], ["precision", "float32", "bfloat16"]),
    (["-m", "amp_dtype=float16,bfloat16"], ["amp_dtype", "precision"]),
    (["+bacth=4"], ["bacth", "did you mean 'batch'"]),
    (["+capture.stesp=4"], ["capture.stesp", "did you mean 'capture.steps'"]),
    (["-m", "batch=1,-4"], ["job 1", "batch"]),
    (["model._target_=no_such_pkg.Net"], ["no_such_pkg.Net", "does not import"]),
])
def test_bad_input_fails_before_the_first_job(sweep_env, tmp_path, args, words):
    with pytest.raises(UsageError) as err:
        main([*args, *QUIET])
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message
    assert not list(tmp_path.glob("runs/profile/sweeps/*/*"))  # nothing ran, no sweep dir left


def test_yaml_syntax_error_names_file_and_line(sweep_env, tmp_path):
    conf = tmp_path / "myconf" / "sweep"
    conf.mkdir(parents=True)
    (conf / "broken.yaml").write_text("# @package _global_\nbatch: 2\nhydra:\n  mode: [MULTIRUN\n")
    with pytest.raises(UsageError) as err:
        main(["--config-dir", str(tmp_path / "myconf"), "+sweep=broken", *QUIET])
    assert "broken" in str(err.value) and "line" in str(err.value)


def test_user_sweep_and_model_from_config_dir(sweep_env, tmp_path):
    (tmp_path / "mymodels.py").write_text(textwrap.dedent("""
        import torch
        def Net(width=4):
            return torch.nn.Conv2d(3, width, 3)
    """))
    conf = tmp_path / "myconf"
    (conf / "sweep").mkdir(parents=True)
    (conf / "model").mkdir()
    (conf / "model" / "mynet.yaml").write_text("_target_: mymodels.Net\nwidth: 8\n")
    (conf / "sweep" / "mine.yaml").write_text(textwrap.dedent("""\
        # @package _global_
        defaults:
          - override /model: mynet
        hydra:
          mode: MULTIRUN
          sweeper:
            params:
              batch: 1,2
    """))
    assert main(["--config-dir", str(conf), "+sweep=mine", *QUIET]) == 0
    [sweep] = sweep_env("mine")  # no sweep_name in the file: the file's name is used
    df = read_rows(sweep)
    assert list(df["model"]) == ["mymodels.Net"] * 2 and df["size"].isna().all()
    profile = json.loads((sweep / "0" / "profile.json").read_text())
    assert profile["config"]["model_kwargs"] == {"width": 8}


def test_sweep_dir_that_cannot_be_written(sweep_env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(UsageError, match="cannot write the sweep dir"):
        main(["batch=1", f"project={blocker}/runs", *QUIET])


def test_joblib_overlapping_gpu_captures_is_refused(sweep_env, tmp_path):
    launcher = tmp_path / "myconf" / "hydra" / "launcher"
    launcher.mkdir(parents=True)
    # the plugin need not be installed: the refusal comes before Hydra instantiates the launcher
    (launcher / "joblib.yaml").write_text("_target_: hydra_plugins.hydra_joblib_launcher.joblib_launcher."
                                          "JoblibLauncher\nn_jobs: 2\n")
    with pytest.raises(UsageError, match="several captures on one GPU"):
        main(["--config-dir", str(tmp_path / "myconf"), "hydra/launcher=joblib", "-m", "batch=1,2",
              "device=cuda", "workers=0", "launch.machine=shared"])


def test_analysis_runs_at_the_end_with_the_analysis_group(sweep_env, capsys):
    # (trial=0: the demo's trial=auto pinned to one trial per point, tests/test_sweep_adaptive.py
    # covers the rounds)
    assert main(["+sweep=demo", "device=cpu", "analysis.html=false", "trial=0", "launch.isolation=inprocess"]) == 0
    [sweep] = sweep_env("demo")
    assert (sweep / "analysis").is_dir() and any((sweep / "analysis").iterdir())
    assert len(read_rows(sweep)) == 2  # batch=1,4 (sweeps/demo.yaml)


def test_corrupt_row_at_consolidation_is_reported_and_exit_1(sweep_env, capsys):
    from yoloprof.sweep.app import finish

    assert main(["-m", "batch=1,2", *QUIET]) == 0
    [sweep] = sweep_env()
    (sweep / "1" / ROW_NAME).write_bytes(b"garbage")
    capsys.readouterr()
    assert finish(sweep, 2, {"enabled": False}) == 1
    assert f"unreadable row skipped: {sweep / '1' / ROW_NAME}" in capsys.readouterr().err
    assert list(pd.read_parquet(sweep / RESULTS_NAME)["job_num"]) == [0]
    # resume heals it: an unreadable row is not an ok row, so that job runs again
    assert main([f"resume={sweep}"]) == 0
    assert list(read_rows(sweep)["status"]) == ["ok", "ok"]


def test_missing_config_dir_is_a_usage_error(sweep_env, tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        main(["--config-dir", str(tmp_path / "nope"), "batch=1", *QUIET])


def test_resume_of_a_folder_that_is_not_a_sweep(sweep_env, tmp_path):
    with pytest.raises(UsageError, match="not a yoloprof sweep dir"):
        main([f"resume={tmp_path}"])


def test_cuda_device_on_a_machine_without_one_fails_up_front(sweep_env, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(UsageError, match="no CUDA device; use device=cpu "):  # the sweep's spelling
        main(["-m", "batch=1,2", "workers=0", "analysis.enabled=false", "device=0"])  # explicit: strict
    assert not list(tmp_path.glob("runs/profile/sweeps/*/*"))


def test_out_of_memory_is_a_failed_row_and_the_sweep_goes_on(sweep_env, monkeypatch):
    monkeypatch.setenv("FAKE_OOM_BATCH", "64")
    assert main(["-m", "batch=8,64,16", *QUIET]) == 1
    [sweep] = sweep_env()
    df = read_rows(sweep)
    assert list(df["status"]) == ["ok", "failed", "ok"]
    assert df.iloc[1]["error"].startswith("OutOfMemoryError: CUDA out of memory at batch 64")


def test_model_that_fails_to_build_with_the_real_capture(tmp_path, monkeypatch):
    """No fake here: the real capture builds the user's model, which raises; the job fails alone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("YOLOPROF_SWEEP_ID", raising=False)
    (tmp_path / "brokenmodels.py").write_text("def Net(**kw):\n    raise ValueError('no such layer: Conv9')\n")
    code = main(["-m", "batch=1,2", "model._target_=brokenmodels.Net", "+model.depth=3", *QUIET,
                 "imgsz=64", "capture.warmup=1", "capture.steps=1"])
    assert code == 1
    [sweep] = sorted((tmp_path / "runs" / "profile" / "sweeps" / "adhoc").iterdir())
    df = read_rows(sweep)
    assert list(df["status"]) == ["failed", "failed"] and list(df["model"]) == ["brokenmodels.Net"] * 2
    assert all("no such layer: Conv9" in e for e in df["error"])
    assert "ValueError: no such layer: Conv9" in (sweep / "0" / "yoloprof.log").read_text()
    from yoloprof.config.compose import compose_job
    from yoloprof.config.translate import model_fields

    fields = model_fields(compose_job(["model._target_=brokenmodels.Net", "+model.depth=3"]))
    assert fields["model_kwargs"] == {"depth": 3}  # the built-in entry's keys are not passed on


def test_rows_have_a_typed_column_per_swept_key_and_the_run_record(sweep_env, tmp_path):
    """`groupby("model.width")` on results.parquet, as a pandas user would; seed, version, git and
    warnings in every row."""
    import subprocess

    import yoloprof

    (tmp_path / "mymodels.py").write_text("import torch\ndef Net(width=4, scale=1.0):\n"
                                          "    return torch.nn.Conv2d(3, width, 3)\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                    "-m", "x"], cwd=tmp_path, check=True)
    assert main(["-m", "model._target_=mymodels.Net", "+model.width=4,8", "+model.scale=1,2.5", "seed=3",
                 *QUIET]) == 0
    [sweep] = sweep_env()
    df = pd.read_parquet(sweep / RESULTS_NAME)
    assert len(df) == 4
    assert df["model.width"].dtype.kind == "i" and sorted(df["model.width"].unique()) == [4, 8]
    assert df["model.scale"].dtype.kind == "f" and sorted(df["model.scale"].unique()) == [1.0, 2.5]
    assert df.groupby("model.width")["step_ms"].count().to_dict() == {4: 2, 8: 2}
    assert df["model._target_"].unique().tolist() == ["mymodels.Net"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert set(df["git_commit"]) == {head.strip()}
    assert set(df["git_dirty"]) == {False}  # untracked files (mymodels.py, runs/) do not count
    assert set(df["seed"]) == {3} and set(df["yoloprof_version"]) == {yoloprof.__version__}
    assert set(map(tuple, df["warnings"])) == {("fake warning for batch 16",)}
    for r in df.itertuples():
        assert list(r.warnings) == json.loads((sweep / r.profile_path).read_text())["warnings"]
    rows = read_rows(sweep)  # the same columns through the project's reader
    assert "model.width" in rows.columns and rows["model.width"].tolist() == df["model.width"].tolist()


def test_threads_and_precision_are_axes_recorded_as_run(sweep_env):
    """`threads` is a sweep axis; rows record the resolved values the capture ran with (precision
    `auto` on CPU is float32; device `CPU` is `cpu`)."""
    assert main(["-m", "threads=1,2", "precision=auto,bfloat16", "device=CPU", "workers=0",
                 "analysis.enabled=false", "launch.isolation=inprocess"]) == 0
    df = read_rows(sweep_env()[0])
    assert sorted(zip(df["threads"], df["precision"])) == \
        [(1, "bfloat16"), (1, "float32"), (2, "bfloat16"), (2, "float32")]
    assert set(df["device"]) == {"cpu"} and df["group_hash"].nunique() == 4
