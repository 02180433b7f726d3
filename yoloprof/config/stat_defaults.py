"""The statistics' defaults (DESIGN.md section 7), one home: significance level, noise band (a
fraction of the baseline) and the family-wise correction across a sweep's comparisons. Shared by
`compare`, `analyze`, the sweep's analysis group, the CLI's help and the statistics module; kept
apart from the settings schema (`config.capture_settings`) so that reading them imports nothing else."""

ALPHA = 0.05
NOISE = 0.02
CORRECTIONS = ("holm", "bh", "none")
CORRECTION = CORRECTIONS[0]

# A job (or trial) is "contended" when other processes used more than this many cores while it
# ran (capturing/device/cpu_contention.py; docs/analysis.md "Contended jobs"). A quarter of a core:
# an idle machine's background (daemons, a shell, an editor) stays near a tenth, one competing busy
# process is a whole core, and a window of a second or more reads to about a fiftieth of a core.
CONTENDED_CORES = 0.25

# a configuration's outputs are "same" as the eager float32 reference's within this relative
# difference (output_max_rel_diff, docs/knobs.md)
OUTPUT_TOL = 1e-3
