"""Shared test helpers (builders, fakes, paths): imported by test modules, which never import
each other; fixtures stay in conftest.py."""
