"""Is this folder a sweep? Checked with pathlib only, so `yoloprof analyze` rejects a wrong path
before importing pandas and scipy (about two seconds on a small machine)."""

from __future__ import annotations

from pathlib import Path

from yoloprof.defs import files
from yoloprof.errors import ProfileError, UsageError


def check_sweep_folder(folder: str | Path) -> Path:
    """The folder as a Path when it holds job rows; otherwise the error that says what it is.
    A sweep-name folder (`sweeps/<name>/`, holding one folder per run) gets the runs listed."""
    folder = Path(folder)
    if not folder.exists():
        raise UsageError(f"no such sweep folder: {folder}")
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder; give a sweep folder (<project>/sweeps/<name>/<id>)")
    if any(folder.glob(f"*/{files.ROW}")):
        return folder
    runs = sorted({p.parent.parent.name for p in folder.glob(f"*/*/{files.ROW}")})
    if runs:
        raise UsageError(f"{folder} holds {len(runs)} sweep run(s), not job folders; analyse one of them: "
                         + ", ".join(str(folder / r) for r in runs[-5:]))
    raise ProfileError(f"{folder}: not a sweep: no {files.ROW} files in its job folders")
