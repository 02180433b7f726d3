"""The lowest layer of shared definitions, one home each (docs/CONTRACTS.md "Registry"):
`metrics` (every metric: unit, direction, label, mode, headline, Parquet column, device-only),
`files` (the names of every file and folder yoloprof writes) and `version`. Nothing here imports
another yoloprof package, so every layer may import it."""
