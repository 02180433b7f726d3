"""The names of the files and folders yoloprof writes, defined once (DESIGN.md sections 4 and 8).

Capture writes PROFILE and TRACE into its output folder; a sweep job folder holds the same two
plus ROW; the sweep folder holds MANIFEST, RESULTS and the ANALYSIS_DIR of report files.
"""

PROFILE = "profile.json"  # a capture's profile (schema yoloprof.profile/1)
TRACE = "profile_trace.json"  # the Kineto trace of the capture's trace pass
ROW = "row.parquet"  # one sweep job's row (sweep rows schema)
RESULTS = "results.parquet"  # the consolidation of every job's row, rebuilt at any time
MANIFEST = "yoloprof_sweep.json"  # the sweep's resume manifest
JOB_STATE = "job_state.json"  # a sweep job's state record (profiles/jobstate.py)
JOB_LOG = "yoloprof.log"  # a sweep job's log (Hydra's job name in conf/config.yaml + ".log")
ANALYSIS_DIR = "analysis"  # the analysis report folder inside a sweep folder
COMPARISON_MD = "comparison.md"
COMPARISON_CSV = "comparison.csv"
REPORT_HTML = "report.html"
CAPTURE_REPORT_HTML = "capture_report.html"  # `yoloprof report`: one capture's views
ANALYSIS_SETTINGS = "settings.json"  # an analysis' recorded settings, beside its files
RESULTS_DIR = "results"  # a project's results store: every capture's row (profiles/store.py)
TUNE_DIR = "tune"  # `yoloprof tune`: <project>/tune/<id>/ (docs/tune.md)
TUNE_MANIFEST = "tune.json"  # a tune run's settings, plan and state (resume reads it)
TUNE_ROWS = "tune.parquet"  # a tune run's rows: one per knob=level
TUNE_BEST = "best.yaml"  # the overrides of a tune run's best confirmed configuration
