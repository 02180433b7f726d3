"""Hydra capture sweeps (docs/sweeps.md): `app.main` (the `yoloprof sweep` command), `job.run_job`
(the task function), `rows` (the Parquet rows store: ROW_SCHEMA, write_row, read_rows,
consolidate), `plan` (pre-flight, job order, resume manifest), `sweeper` (the hooks into Hydra's
sweeper and the submitit launchers), `worker` (a fresh process per job), `machine` (the machine
lock and registry of running captures), `launchers` (what each launcher means for timing),
`progress` (live display, job table)."""
