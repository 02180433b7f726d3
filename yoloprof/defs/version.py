"""The package version, in a module every layer can import (pyproject reads it from here)."""

__version__ = "0.1.0"
