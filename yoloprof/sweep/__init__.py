"""Hydra capture sweeps (docs/sweeps.md): `app.main` (the `yoloprof sweep` command), `job.run_job`
(the task function), `rows` (the Parquet rows store: ROW_SCHEMA, write_row, read_rows,
consolidate), `plan` (pre-flight and resume manifest), `progress` (live display, job table)."""
