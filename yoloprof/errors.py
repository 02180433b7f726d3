"""Exception types that map one-to-one onto the documented exit codes (DESIGN.md section 2).

Every module raises one of these for problems a user can fix; `cli.main` is the single place that
turns them into a one-line message and an exit code, so no other code calls `sys.exit`.
"""

from __future__ import annotations


class YoloprofError(Exception):
    """Base class: a problem the user can act on. `exit_code` is what the CLI returns."""

    exit_code = 1


class ProfileError(YoloprofError):
    """A profile or trace exists but cannot be parsed or analysed (exit 1)."""

    exit_code = 1


class UsageError(YoloprofError):
    """Missing/unreadable file, unknown field, phase, category or option value (exit 2)."""

    exit_code = 2


class DataTooSmallError(YoloprofError):
    """The data cannot fill --warmup + --steps batches (exit 3)."""

    exit_code = 3


class RegressionError(YoloprofError):
    """--fail-on-regression found a significant regression beyond the noise threshold (exit 4)."""

    exit_code = 4
