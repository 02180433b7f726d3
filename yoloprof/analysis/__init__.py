"""The analysis stages over a sweep (DESIGN.md section 9): collect -> read -> compare -> report.
Entry points: `yoloprof.analysis.run.analyze_sweep` (API, called after every sweep) and
`yoloprof.analysis.cli.run_analyze` (`yoloprof analyze`)."""
