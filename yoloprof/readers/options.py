"""The fields of the reader table's option records (`readers.table`): `option(default, help, ...)`
is a dataclass field whose metadata carries what argparse needs."""

from __future__ import annotations

from typing import Any

from dataclasses import field


def option(default: Any, help: str | None = None, *, flag: str | None = "", short: str | None = None,
           choices: tuple[str, ...] | None = None, action: str | None = None, nargs: str | None = None,
           metavar: str | None = None) -> Any:
    """A field of an options record. `flag` "" = `--name-with-dashes`; None = a positional."""
    return field(default=default, metadata={"help": help, "flag": flag, "short": short, "choices": choices,
                                            "action": action, "nargs": nargs, "metavar": metavar})
