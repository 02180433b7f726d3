"""The lowest layer of shared definitions, one home each (docs/CONTRACTS.md "Registry"):
`metrics` (every metric: unit, direction, label, mode, headline, Parquet column, device-only),
`files` (the names of every file and folder yoloprof writes), `version` and `records` (frozen
records: a frozen dataclass' behaviour without its start-up cost). Nothing here imports
another yoloprof package, so every layer may import it."""
