"""The analysis stages over a sweep (DESIGN.md section 9): collect -> read -> compare -> report.
`yoloprof.analysis.run.analyze` computes the view tables (no files, no printing); the report
(files + terminal table) is `yoloprof.render.report.analyze_sweep`, `yoloprof analyze` is in cli.py."""
