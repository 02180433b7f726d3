"""Shell completion for every subcommand, its flags and choices, and Hydra overrides after `sweep`.

`yoloprof completion bash` prints a script to `eval` (or to put in a completion folder); the
script asks `yoloprof __complete` for candidates with the line typed so far (`COMP_LINE`,
`COMP_POINT`, as bash sets them). Flags come from the same argparse parser the commands use, so
completion never lists a flag the command refuses. After `sweep`, Hydra's own completion engine
answers over yoloprof's packaged config (groups, keys, `+sweep=` files), as `-sc query=bash`
would for a plain Hydra app; Hydra's `yoloprof sweep -sc install=bash` prints this same script,
since Hydra's own would register `yoloprof` and `sweep` as two programs and complete nothing.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import Callable, Iterable

SHELLS = ("bash", "zsh")

_BASH = r'''# yoloprof completion for bash. Enable: eval "$(yoloprof completion bash)"
_yoloprof_complete() {
    local IFS=$'\n'
    COMPREPLY=($(COMP_LINE="$COMP_LINE" COMP_POINT="$COMP_POINT" "${COMP_WORDS[0]}" __complete 2>/dev/null))
}
# Hydra overrides are key=value words: '=' must not split a word (as Hydra's own script does).
COMP_WORDBREAKS=${COMP_WORDBREAKS//=}
complete -o default -o nospace -F _yoloprof_complete yoloprof
'''

_ZSH = '# yoloprof completion for zsh. Enable: eval "$(yoloprof completion zsh)"\n' \
       "autoload -U +X bashcompinit && bashcompinit\n" + _BASH.split("\n", 1)[1]

# Words `yoloprof sweep` takes besides Hydra's overrides (ours, then Hydra's common flags).
SWEEP_EXTRAS = ("resume=", "--json", "-m", "--multirun", "--cfg", "--config-dir", "--help", "--info")


def script(shell: str) -> str:
    from yoloprof.errors import UsageError

    if shell not in SHELLS:
        raise UsageError(f"no completion for shell {shell!r}; valid: {', '.join(SHELLS)}")
    return _BASH if shell == "bash" else _ZSH


def _split(line: str) -> tuple[list[str], str]:
    """(complete words before the cursor, the word being typed)."""
    try:
        words = shlex.split(line)
    except ValueError:  # an open quote: complete the raw words
        words = line.split()
    if not line or line[-1].isspace():
        return words, ""
    return words[:-1], words[-1] if words else ""


def _with_space(words: Iterable[str]) -> list[str]:
    """A finished word gets its trailing space; `key=` and `group.` keep typing (-o nospace)."""
    return sorted({w if w.endswith(("=", ".", "/")) else w + " " for w in words})


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flag_candidates(sub: argparse.ArgumentParser, before: list[str], word: str) -> list[str]:
    by_flag = {opt: a for a in sub._actions for opt in a.option_strings}
    prev = by_flag.get(before[-1]) if before else None
    if prev is not None and prev.nargs != 0 and not isinstance(
            prev, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse.BooleanOptionalAction)):
        return [str(c) for c in prev.choices] if prev.choices else []  # a value: choices or files
    if word.startswith("-"):
        return [opt for opt in by_flag if opt.startswith(word)]
    return []  # a positional: let the shell complete file names


def _sweep_candidates(before: list[str], word: str) -> list[str]:
    from hydra.plugins.completion_plugin import DefaultCompletionPlugin

    from yoloprof.config.hydra_adapter import config_loader, search_path
    from yoloprof.config.paths import conf_dir
    from yoloprof.config.schema import register

    register()
    config_dir = before[before.index("--config-dir") + 1] if "--config-dir" in before[:-1] else None
    overrides = [w for w in before if "=" in w or w in ("-m", "--multirun")]
    loader = config_loader(search_path(config_dir or f"file://{conf_dir()}"))
    line = " ".join(overrides + [word])
    if not word:
        line += " "
    try:
        found = DefaultCompletionPlugin(loader)._query(config_name="config", line=line)
    except Exception:  # noqa: BLE001 - a completion must never print a traceback into the shell
        found = []
    return [c for c in found if c.startswith(word)] + [e for e in SWEEP_EXTRAS if e.startswith(word)]


def complete(line: str, point: int | None = None, *, parser: argparse.ArgumentParser) -> list[str]:
    """Candidates for the word at `point` (default: the end) of the command line `line`; `parser`
    is the CLI's own (cli.build_parser(), passed in: this module sits below the CLI layer)."""
    words, word = _split(line[:point] if point is not None else line)
    args = words[1:]  # words[0] is the program
    subs = _subparsers(parser)
    command = next((a for a in args if not a.startswith("-")), None)
    if command is None:
        top = [opt for a in parser._actions for opt in a.option_strings]
        return _with_space(w for w in [*subs, *top] if w.startswith(word))
    before = args[args.index(command) + 1:]
    if command == "sweep":
        return _with_space(_sweep_candidates(before, word))
    if command == "completion":
        return _with_space(s for s in SHELLS if s.startswith(word))
    if command not in subs:
        return []
    return _with_space(c for c in _flag_candidates(subs[command], before, word) if c.startswith(word))


def query_from_env(parser: argparse.ArgumentParser) -> list[str]:
    """What the shell script asks: the line and cursor bash puts in COMP_LINE / COMP_POINT."""
    line = os.environ.get("COMP_LINE", "")
    point = os.environ.get("COMP_POINT", "")
    return complete(line, int(point) if point.isdigit() else None, parser=parser)


def hydra_flag(overrides: list[str], parser: Callable[[], argparse.ArgumentParser]) -> int:
    """Hydra's `-sc install=SHELL` / `-sc query=SHELL`, answered for the whole `yoloprof` command
    (Hydra's own script would register `yoloprof` and `sweep` as two programs)."""
    import sys

    from yoloprof.errors import UsageError

    action, _, shell = (overrides[0] if overrides else "").partition("=")
    if action == "install":
        sys.stdout.write(script(shell or "bash"))
    elif action == "query":
        sys.stdout.write("\n".join(query_from_env(parser())) + "\n")
    elif action == "uninstall":
        sys.stdout.write("complete -r yoloprof\n")
    else:
        raise UsageError("--shell-completion takes install=bash|zsh, uninstall=bash or query=bash")
    return 0
