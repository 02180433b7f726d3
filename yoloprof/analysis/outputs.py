"""Where an analysis is written, and writing all of its files together or none of them.

Layout inside a sweep folder: the analysis with the sweep's recorded settings lives in
`analysis/`, every other one in `analysis/<name>/`; each folder holds a `settings.json` (the
settings, the reproducing command, the date, the files). All outputs are rendered in memory
first, so a failure while rendering writes nothing. A named analysis is then written to a hidden
staging folder and swapped in with two renames (the old folder is whole until the new one is);
the default analysis shares `analysis/` with the named ones, so its files are replaced one by one
with `settings.json` removed first and written last: a folder without `settings.json` is an
analysis interrupted while being written, and `--list` says so.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from yoloprof.analysis.settings import DEFAULT_NAME, AnalysisSettings
from yoloprof.defs import files
from yoloprof.errors import UsageError
from yoloprof.profiles.io import write_bytes_atomic

SETTINGS_FILE = files.ANALYSIS_SETTINGS
SETTINGS_SCHEMA = "yoloprof.analysis/1"
# Files an analysis writes into its folder (parquet tables are matched by suffix): the only ones
# a newer analysis of the same folder removes when it no longer writes them, so a folder never
# mixes the files of two runs - except an output it was not asked for (`keep`: report.html under
# --no-html), which an analysis never removes or changes.
OUTPUT_SUFFIXES = (".parquet", ".md", ".csv", ".html")


def recorded_settings(sweep_dir: Path) -> tuple[AnalysisSettings, bool]:
    """(the settings the sweep recorded in its manifest, whether it recorded any). A sweep from
    before the record, or a folder without a manifest, uses the built-in defaults."""
    path = sweep_dir / files.MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return AnalysisSettings(), False
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the sweep manifest {path}: {exc}") from exc
    record = manifest.get("analysis") if isinstance(manifest, dict) else None
    if not isinstance(record, dict):
        return AnalysisSettings(), False
    try:
        return AnalysisSettings.from_mapping(record), True
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable analysis settings: {exc}") from exc


def analysis_dir(sweep_dir: Path, name: str) -> Path:
    root = sweep_dir / files.ANALYSIS_DIR
    return root if name == DEFAULT_NAME else root / name


def read_record(folder: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == SETTINGS_SCHEMA else None


def check_target(folder: Path, settings: AnalysisSettings, name: str) -> None:
    """Refuse to replace an analysis with other settings (same settings: a rerun, replaced), or
    anything that is not an analysis folder."""
    if name != DEFAULT_NAME and folder.exists() and (not folder.is_dir() or folder.is_symlink()):
        raise UsageError(f"{folder} exists and is not an analysis folder; choose another --name")
    old = read_record(folder)
    if old is not None and old.get("settings") != settings.to_dict():
        where = folder.name if name != DEFAULT_NAME else files.ANALYSIS_DIR
        raise UsageError(f"{folder} holds another analysis ({where}: {old.get('command', '?')}); "
                         "give this one its own --name")


def record(settings: AnalysisSettings, name: str, command: str, sweep_dir: Path, files: list[str],
           extra: dict[str, Any]) -> dict[str, Any]:
    """The settings.json document."""
    from yoloprof.defs.version import __version__

    return {"schema": SETTINGS_SCHEMA, "name": name, "settings": settings.to_dict(), "command": command,
            "sweep_dir": str(sweep_dir.resolve()),
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "yoloprof_version": __version__, "files": sorted(files), **extra}


def _write(folder: Path, outputs: dict[str, bytes]) -> None:
    for fname, data in outputs.items():
        with open(folder / fname, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def _commit_named(folder: Path, outputs: dict[str, bytes], keep: tuple[str, ...] = ()) -> None:
    root = folder.parent
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=root))
    try:
        _write(stage, outputs)
        for name in keep:  # not asked for: the earlier one moves into the new folder as it is
            if name not in outputs and (folder / name).is_file():
                shutil.copy2(folder / name, stage / name)
        os.chmod(stage, 0o777 & ~_umask())
        old = None
        if folder.exists():
            old = root / f"{stage.name}.old"
            os.replace(folder, old)
        os.replace(stage, folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _commit_default(folder: Path, outputs: dict[str, bytes], keep: tuple[str, ...] = ()) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SETTINGS_FILE).unlink(missing_ok=True)  # from here until the end: "being written"
    for fname, data in outputs.items():
        if fname != SETTINGS_FILE:
            write_bytes_atomic(folder / fname, data)
    for stale in folder.iterdir():
        if stale.is_file() and stale.suffix in OUTPUT_SUFFIXES and stale.name not in outputs \
                and stale.name not in keep:
            stale.unlink()
    write_bytes_atomic(folder / SETTINGS_FILE, outputs[SETTINGS_FILE])


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One analysis commit at a time per sweep (two `yoloprof analyze` started together would
    otherwise interleave the default analysis' files): an advisory lock on the analysis folder
    itself, so no lock file is left behind. Where there is no flock, no lock."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def commit(folder: Path, name: str, outputs: dict[str, bytes],
           settings: AnalysisSettings | None = None, keep: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write every output (settings.json included) into `folder`, together or not at all; the
    target is checked again under the lock, so a concurrent analysis with other settings that got
    there first is never overwritten. `keep`: outputs this analysis was not asked to write
    (report.html under --no-html): an earlier one stays byte for byte, never removed."""
    if SETTINGS_FILE not in outputs:
        raise ValueError("an analysis is committed with its settings.json")
    root = folder if name == DEFAULT_NAME else folder.parent
    with _locked(root):
        if settings is not None:
            check_target(folder, settings, name)
        (_commit_default if name == DEFAULT_NAME else _commit_named)(folder, outputs, keep)
    return {fname: folder / fname for fname in outputs}


def list_analyses(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every analysis in a sweep folder: name, folder, date, settings, command (or, for a folder
    without a readable settings.json, `incomplete`)."""
    root = sweep_dir / files.ANALYSIS_DIR
    if not root.is_dir():
        return []
    folders = [root] + sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    out = []
    for folder in folders:
        rec = read_record(folder)
        name = DEFAULT_NAME if folder == root else folder.name
        if rec is None:
            if any(p.is_file() and p.suffix in OUTPUT_SUFFIXES for p in folder.iterdir()):
                out.append({"name": name, "dir": str(folder), "incomplete": True, "created_at": None,
                            "settings": None, "command": None})
            continue
        out.append({"name": name, "dir": str(folder), "incomplete": False, "created_at": rec.get("created_at"),
                    "settings": rec.get("settings"), "command": rec.get("command"), "jobs": rec.get("jobs")})
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
