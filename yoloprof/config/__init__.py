"""Structured-config schemas (ConfigStore) and Hydra compose helpers for the packaged conf/."""
