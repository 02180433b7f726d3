"""The TensorBoard copy of a trace is named and placed as torch-tb-profiler lists it."""

from __future__ import annotations

import re

from yoloprof.capturing.extras import tensorboard

# torch-tb-profiler's own file-name pattern (pytorch/kineto, tb_plugin/torch_tb_profiler/consts.py),
# and its node/process split of the worker name: the plugin lists exactly the files this matches.
PLUGIN_WORKER_PATTERN = re.compile(r"""^(.*?) # worker name
        (\.\d+)? # optional timestamp like 1619499959628 used as span name
        \.pt\.trace\.json # the ending suffix
        (?:\.gz)?$""", re.X)
PLUGIN_NODE_PROCESS_PATTERN = re.compile(r"""^(.*)_(\d+)""")


def test_exported_name_is_listed_by_the_plugin(tmp_path):
    trace = tmp_path / "profile_trace.json"
    trace.write_text('{"traceEvents": []}')
    dest = tensorboard.export(trace, tmp_path / "tb", "train-n-b4", span_ms=1700000000123)
    assert dest.parent == tmp_path / "tb" / "train-n-b4"  # one run per folder under the log dir
    m = PLUGIN_WORKER_PATTERN.match(dest.name)
    assert m and m.group(2) == ".1700000000123"
    node, process = PLUGIN_NODE_PROCESS_PATTERN.match(m.group(1)).groups()
    assert node and process.isdigit()
    assert dest.read_bytes() == trace.read_bytes()
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]  # no temp file left behind


def test_gzip_trace_keeps_its_suffix_and_ranks_name_the_process(tmp_path):
    trace = tmp_path / "profile_trace.json.gz"
    trace.write_bytes(b"\x1f\x8b")
    dest = tensorboard.export(trace, tmp_path, "r", worker=tensorboard.worker_name(rank=3))
    assert dest.name.endswith(".pt.trace.json.gz") and PLUGIN_WORKER_PATTERN.match(dest.name)
    assert PLUGIN_NODE_PROCESS_PATTERN.match(PLUGIN_WORKER_PATTERN.match(dest.name).group(1)).group(2) == "3"


def test_run_names_are_one_safe_folder():
    assert tensorboard.run_name("train", "my model/v2", None, "b16") == "train-my-model-v2-b16"
    assert tensorboard.run_name() == "yoloprof"


def test_capture_writes_the_tensorboard_copy_and_records_it(tmp_path, monkeypatch):
    """`--tensorboard DIR` (the `tensorboard` setting; `capture.tensorboard` in sweeps): the run is
    the output folder relative to the current directory, the file is the trace byte for byte."""
    from yoloprof.capturing.builtin.capture_entry import capture
    from yoloprof.config.compose import compose_job
    from yoloprof.config.capture_settings import CaptureSettings

    monkeypatch.chdir(tmp_path)
    settings = CaptureSettings.for_mode("infer", device="cpu", imgsz=64, warmup=1, runs=2, threads=1,
                                        modules=False, tensorboard="tb")
    profile = capture(settings, tmp_path / "out" / "infer", echo_warnings=False)
    [copy] = (tmp_path / "tb" / "out" / "infer").iterdir()
    assert PLUGIN_WORKER_PATTERN.match(copy.name)
    assert copy.read_bytes() == (tmp_path / "out" / "infer" / "profile_trace.json").read_bytes()
    assert (tmp_path / profile["trace"]["tensorboard"]).resolve() == copy.resolve()
    assert compose_job(["capture.tensorboard=tb"]).capture.tensorboard == "tb"
