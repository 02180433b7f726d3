"""Compose the packaged config outside `hydra.main`: for tests, and for the sweep's pre-flight.

Why a pre-flight at all: Hydra's basic launcher composes each job's config only when that job
starts, and the capture's own value checks (imgsz a multiple of 32, a model `_target_` that does not
import, a GPU device under joblib) would otherwise fire in job 7 after six finished captures. The
pre-flight expands the grid exactly as Hydra's BasicSweeper does, composes every job and validates
it, so a bad sweep fails at once, with one line, before the first job.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Iterator

from omegaconf import DictConfig

from yoloprof.config.paths import conf_dir
from yoloprof.config.schema import register
from yoloprof.errors import UsageError

if TYPE_CHECKING:
    from yoloprof.config.hydra_adapter import HydraApp

CONFIG_NAME = "config"


@contextlib.contextmanager
def hydra_session(config_dir: str | None = None) -> Iterator[HydraApp]:
    """A Hydra instance over the conf (+ a user's `--config-dir`), cleared on exit so the next
    `hydra.main` or compose in this process starts clean."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.config_search_path import SearchPathQuery

    from yoloprof.config.hydra_adapter import main_hydra, search_path as make_search_path

    register()
    GlobalHydra.instance().clear()
    search_path = make_search_path(f"file://{conf_dir()}")
    if config_dir is not None:
        path = os.path.abspath(config_dir)
        if not os.path.isdir(path):
            raise UsageError(f"--config-dir {config_dir!r} is not a directory")
        search_path.prepend(provider="command-line", path=f"file://{path}",
                            anchor=SearchPathQuery(provider="schema"))
    try:
        yield main_hydra("yoloprof", search_path)
    finally:
        GlobalHydra.instance().clear()


# `trial=auto` on the command line: the adaptive sweep's switch, not a trial number (`trial` is an
# int), so it goes to the sweeper's params, where a sweep file would put it (docs/sweeps.md).
AUTO_TRIAL = ("trial=auto", "++hydra.sweeper.params.trial=auto")


def normalise_overrides(overrides: list[str]) -> list[str]:
    """`+sweep=X` and `sweep=X` both select an experiment file: the group's default is null (DESIGN.md
    section 8), which Hydra only lets the plain form replace. `trial=auto` becomes the sweeper's."""
    return [item[1:] if item.startswith("+sweep=") else AUTO_TRIAL[1] if item.lstrip("+") == AUTO_TRIAL[0]
            else item for item in overrides]


def compose_job(overrides: list[str] | None = None, config_dir: str | None = None) -> DictConfig:
    """One job's config (no sweep expansion), with the `hydra` node: the test fixture's compose."""
    from hydra.types import RunMode

    with hydra_session(config_dir) as hydra:
        try:
            return hydra.compose_config(CONFIG_NAME, normalise_overrides(list(overrides or [])),
                                        run_mode=RunMode.RUN,
                                        with_log_configuration=False)
        except Exception as exc:  # noqa: BLE001 - turned into one line for the user
            raise UsageError(one_line(exc, hydra)) from exc


def sweep_options(hydra: HydraApp, group: str = "sweep") -> list[str]:
    """The experiment files Hydra can see (packaged + --config-dir), for 'unknown sweep' errors."""
    return sorted(hydra.config_loader.get_group_options(group))


def _yaml_error(exc: BaseException) -> str | None:
    """A YAML syntax error as 'file, line N: problem' from the parser's marks (Hydra's message
    buries them in a chain)."""
    import yaml

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, yaml.MarkedYAMLError) and current.problem_mark is not None:
            mark, context = current.problem_mark, ""
            if current.context and current.context_mark is not None:
                context = f" ({current.context} from line {current.context_mark.line + 1})"
            return (f"YAML syntax error in {mark.name}, line {mark.line + 1}, column {mark.column + 1}: "
                    f"{current.problem}{context}")
        current = current.__cause__ or current.__context__
    return None


_UNKNOWN_OVERRIDE = re.compile(r"Could not override '([^']+)'\.\s*To append to your config use \+")


def _unknown_key(exc: BaseException) -> str | None:
    """Hydra's "Could not override 'bacth'. To append to your config use +bacth=4" invites the very
    typo that would then run silently; name the closest known key instead."""
    from yoloprof.config.schema import known_keys
    from yoloprof.config.capture_settings import unknown_key_message

    current: BaseException | None = exc
    while current is not None:
        match = _UNKNOWN_OVERRIDE.search(str(current))
        if match:
            return (f"unknown key {unknown_key_message(match.group(1), known_keys())}; "
                    "extra keyword arguments of a model factory go under model.*")
        current = current.__cause__
    return None


_IN_FILE = re.compile(r"^In '([^']+)': ConfigKeyError")


def _source_file(hydra: HydraApp, config_path: str) -> str:
    """The file Hydra read `sweep/mine` from (the first source on its search path holding it)."""
    try:
        for source in hydra.config_loader.repository.get_sources():  # type: ignore[attr-defined]
            if source.is_config(config_path):
                root = source.path.split("://", 1)[-1]
                return os.path.join(root, config_path + ".yaml") if source.scheme() == "file" else \
                    f"{source.path}/{config_path}.yaml"
    except Exception:  # noqa: BLE001 - Hydra internals: the config path alone still names it
        pass
    return f"{config_path}.yaml"


def _key_in_file(exc: BaseException, hydra: HydraApp | None) -> str | None:
    """A key of a user's YAML file that the schema does not have (`capture: {stesp: 3}`): Hydra
    says `ConfigKeyError ... reference_type=CaptureConf`; yoloprof names the file, the line, the
    key and the closest known key."""
    from omegaconf.errors import ConfigKeyError

    from yoloprof.config.schema import known_keys
    from yoloprof.config.capture_settings import unknown_key_message

    match = _IN_FILE.match(str(exc))
    cause = exc.__cause__ or exc.__context__
    while cause is not None and not isinstance(cause, ConfigKeyError):
        cause = cause.__cause__ or cause.__context__
    if not match or cause is None or not getattr(cause, "full_key", None):
        return None
    full_key = str(cause.full_key)
    path = _source_file(hydra, match.group(1)) if hydra is not None else f"{match.group(1)}.yaml"
    leaf = re.escape(full_key.rsplit(".", 1)[-1])
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
        line = next((n for n, text in enumerate(lines, 1) if re.match(rf"\s*{leaf}\s*:", text)), None)
    except OSError:
        line = None
    where = f"{path}, line {line}" if line else path
    return f"{where}: unknown key {unknown_key_message(full_key, known_keys())}"


def one_line(exc: BaseException, hydra: HydraApp | None = None) -> str:
    """Hydra/OmegaConf errors are multi-line with hints about HYDRA_FULL_ERROR; yoloprof prints one
    line that keeps what matters: the key, the value and the valid values (and, with the `hydra`
    that composed, the user's file a wrong key is in)."""
    from omegaconf.errors import OmegaConfBaseException

    yaml_where = _yaml_error(exc) or _key_in_file(exc, hydra) or _unknown_key(exc)
    if yaml_where:
        return yaml_where
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current).split("Config search path:")[0]
        if isinstance(current, OmegaConfBaseException) and getattr(current, "full_key", None):
            text = f"{current.full_key}: {getattr(current, 'msg', None) or text.splitlines()[0]}"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()
                 and "HYDRA_FULL_ERROR" not in ln and not ln.strip().startswith(("full_key:", "object_type"))]
        if lines:
            chunk = " ".join(lines)
            if not any(chunk in p for p in parts):
                parts.append(chunk)
        current = current.__cause__
    return ": ".join(parts) or type(exc).__name__
