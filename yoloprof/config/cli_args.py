"""The argparse options of `yoloprof run` and `yoloprof infer`, generated from the settings schema.

Why generated: help texts, defaults and valid values are typed once, in config/capture_settings.py; the
command line shows each default in `--help` (the mode's own default where it differs by mode) and
turns the parsed namespace back into `CaptureSettings` without a hand-written key list.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from yoloprof.config import analysis_settings as analysis
from yoloprof.config.fields import field_default, flag_dest, flag_name, spec_fields, value_type
from yoloprof.config.capture_settings import (FIELDS, MODES, PRECISIONS, RENAMED, CaptureSettings, default_of,
                                      flag_of, spec_of)
from yoloprof.errors import UsageError

# The positional argument of each command and the setting it fills.
POSITIONAL = {"train": ("data", "synthetic | data.yaml | dataset folder"),
              "infer": ("source", "image or folder; none = the bundled sample image")}
# Shorthands of --precision kept from the libreyolo CLI: (flag, value when on); --no-X is float32.
PRECISION_SHORTHAND = {"train": "--amp", "infer": "--half"}
_TYPES = {int: int, float: float, str: str}


def _base_type(name: str) -> type:
    """int for `int | None`, and so on: the type argparse converts with."""
    return value_type(CaptureSettings, name)


def _shown(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def cli_settings(mode: str) -> list[str]:
    """The setting names that are options of this mode's command, in schema order."""
    return [name for name in FIELDS if spec_of(name).flag is not None and mode in spec_of(name).modes]


def add_capture_arguments(parser: argparse.ArgumentParser, mode: str) -> None:
    """Add the positional data/source argument and one option per setting of `mode`."""
    pos, pos_help = POSITIONAL[mode]
    parser.add_argument(pos, nargs="?", default=default_of("data", mode),
                        help=f"{pos_help} (default: {_shown(default_of('data', mode))})")
    for name in cli_settings(mode):
        spec, default = spec_of(name), default_of(name, mode)
        text = f"{spec.help} (default: {_shown(default)})".replace("%", "%%")  # argparse formats help
        kind = _base_type(name)
        if name == "precision":
            _add_precision(parser, mode, text)
        elif kind is dict:  # --model-arg KEY=VALUE, repeatable
            parser.add_argument(flag_of(name), dest=name, action="append", default=None, help=text,
                                metavar="KEY=VALUE")
        elif kind is bool:
            parser.add_argument(flag_of(name), dest=name, action=argparse.BooleanOptionalAction,
                                default=default, help=text)
        else:
            parser.add_argument(flag_of(name), dest=name, type=_TYPES[kind], default=default, help=text,
                                choices=spec.choices, metavar=None if spec.choices else name.upper())


def _add_precision(parser: argparse.ArgumentParser, mode: str, text: str) -> None:
    """--precision, and its shorthand (--amp / --half = float16, --no-amp / --no-half = float32) in
    one mutually exclusive group: no pair of flags can contradict each other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--precision", dest="precision", choices=PRECISIONS, default=default_of("precision", mode),
                       help=text)
    short = PRECISION_SHORTHAND[mode]
    group.add_argument(short, dest="precision", action="store_const", const="float16",
                       help="shorthand for --precision float16")
    group.add_argument(f"--no-{short[2:]}", dest="precision", action="store_const", const="float32",
                       help="shorthand for --precision float32")


def settings_from_args(args: argparse.Namespace, mode: str) -> CaptureSettings:
    """The validated settings of a parsed `run`/`infer` command line."""
    values = {name: getattr(args, name) for name in cli_settings(mode)}
    values["data"] = getattr(args, POSITIONAL[mode][0])
    for name in [n for n in values if _base_type(n) is dict]:
        values[name] = key_values(values[name] or [], flag_of(name))
    return CaptureSettings.for_mode(mode, **values).validate()


def key_values(items: Sequence[str], flag: str) -> dict[str, Any]:
    """`KEY=VALUE` items -> a dict, each value read as YAML reads a scalar (3 -> int, 0.5 -> float,
    true -> bool, null -> None, anything else a string), as Hydra's `model.KEY=VALUE` would."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        out[key.strip()] = value if isinstance(value, (str, int, float, bool, type(None), list)) else text
    return out


def key_value_hint(tokens: Sequence[str], mode: str) -> None:
    """`yoloprof run weights=X.pt` is the sweep's spelling given to a flag-only command: refuse it
    with the flag to use instead of running with `weights=X.pt` taken as the data argument."""
    known = set(cli_settings(mode)) | set(RENAMED)
    takes_value = {flag_of(n) for n in cli_settings(mode) if _base_type(n) is not bool} | {"--project"}
    for previous, token in zip([""] + list(tokens), tokens):
        if previous in takes_value:  # `--weights model=1.pt`: a value, not a key=value argument
            continue
        if token.startswith("--amp-dtype"):  # the flag `--precision` replaced
            raise UsageError(f"{token.split('=')[0]} was replaced by --precision "
                             f"{'|'.join(PRECISIONS[1:])} (one setting for the arithmetic: no pair of flags can disagree)")
        if token.startswith("-") or "=" not in token:
            continue
        key, value = token.lstrip("+~").split("=", 1)
        if key == "data" or key.startswith("data."):  # the sweep's data group: here a positional
            raise UsageError(f"{token!r}: the data source is the positional argument here (a "
                             f"{POSITIONAL[mode][1]}); data=... data.path=... is the sweep's spelling")
        name = key.split(".")[-1].replace("-", "_")
        if name in RENAMED:
            raise UsageError(f"{token!r}: options are flags here; did you mean --precision "
                             f"{'|'.join(PRECISIONS[1:])}? ({name} was replaced by precision)")
        if name in known:
            hint = flag_of(name) if _base_type(name) is not bool else \
                (flag_of(name) if value.lower() in ("1", "true", "yes", "on") else f"--no-{flag_of(name)[2:]}")
            shown = f"{hint} {value}" if _base_type(name) is not bool else hint
            raise UsageError(f"{token!r}: options are flags here; did you mean {shown}? "
                             f"(key=value is the sweep's spelling: yoloprof sweep {token})")


def all_modes_flags() -> dict[str, list[str]]:
    """Each command's options (for docs and tests)."""
    return {mode: [flag_of(n) for n in cli_settings(mode)] for mode in MODES}


# ---------------------------------------------------------------------------------------------
# the analysis settings (config/analysis_settings.py): options of analyze, compare and gate


def analysis_options(command: str, schema: tuple[type, ...] | None = None) -> list[tuple[type, str]]:
    """(schema class, setting name) of every analysis setting that is an option of `command`
    (`schema`: the classes of config/analysis_settings.py SCHEMA, read when called)."""
    return [(cls, name) for cls in schema or analysis.SCHEMA for name, f in spec_fields(cls).items()
            if f.metadata["spec"].flag is not None and command in f.metadata["spec"].modes]


def add_analysis_arguments(parser: argparse.ArgumentParser, command: str, *, recorded: bool = False,
                           schema: tuple[type, ...] | None = None) -> None:
    """One option per analysis setting of `command`. `recorded`: a setting not given is the one the
    sweep recorded (`analyze`), so the parsed default is None and the help says so."""
    for cls, name in analysis_options(command, schema):
        f = spec_fields(cls)[name]
        spec, default, kind = f.metadata["spec"], field_default(f), value_type(cls, name)
        shown = _shown(None if default == () else default)
        unset = f"the sweep's, else {shown}" if recorded and issubclass(cls, analysis.AnalysisSettings) else shown
        kw: dict[str, Any] = {"help": f"{spec.help} (default: {unset})".replace("%", "%%")}
        if kind is bool:
            kw.update(action=argparse.BooleanOptionalAction, default=default)
        elif kind is tuple:
            kw.update({"action": "append"} if spec.repeat else {"nargs": "+"}, default=None,
                      metavar=spec.metavar or name.upper())
        else:
            kw.update(type=_checked(cls, name, _TYPES[kind]), default=None if recorded else default,
                      choices=spec.choices, metavar=None if spec.choices else spec.metavar or name.upper())
        parser.add_argument(flag_name(name, spec.flag), **kw)


def _checked(cls: type, name: str, kind: type) -> Any:
    """argparse's converter: the type, then the schema's own bounds (one message with a sweep's)."""
    def convert(text: str) -> Any:
        value = kind(text)
        problem = analysis.value_problem(cls, name, value) if not spec_fields(cls)[name].metadata["spec"].choices \
            else None  # choices: argparse's own "invalid choice" names them
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    convert.__name__ = kind.__name__  # argparse's "invalid float value: 'x'"
    return convert


def analysis_given(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The analysis settings a parsed command line gave, by setting name (None = not given);
    outputs such as --html are not settings and stay the command's own."""
    return {name: getattr(args, flag_dest(name, spec_fields(cls)[name].metadata["spec"].flag), None)
            for cls, name in analysis_options(command) if issubclass(cls, analysis.AnalysisSettings)}
