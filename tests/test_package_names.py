"""Module names say what each holds and mean one thing (issue 25): no two modules of yoloprof/
share a file name (a traceback, a grep or an editor tab names the module by it), and
`yoloprof.capture` is the public function only: the capture layer is the plain package
`yoloprof.capturing`, so no submodule import can rebind the name and no module class is swapped."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections import defaultdict
from pathlib import Path

import yoloprof

PACKAGE = Path(yoloprof.__file__).resolve().parent
SHARED_OK = {"__init__.py", "__main__.py"}


def _basenames(root: Path) -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts and path.name not in SHARED_OK:
            where[path.name].append(path.relative_to(root).as_posix())
    return where


def test_no_two_modules_share_a_file_name():
    repeated = {name: paths for name, paths in _basenames(PACKAGE).items() if len(paths) > 1}
    assert not repeated, f"module file names repeated across packages: {repeated}"


def test_the_name_check_sees_a_repeat(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "stats.py").write_text("")
    assert _basenames(tmp_path) == {"stats.py": ["a/stats.py", "b/stats.py"]}


def test_capture_is_the_public_function_and_no_package_of_that_name_exists():
    from yoloprof import capture
    from yoloprof.api import capture as api_capture

    assert capture is api_capture and type(yoloprof.capture) is types.FunctionType
    # a package or a leftover folder `capture` in the package (even a namespace package made of
    # a stale __pycache__) would rebind yoloprof.capture to a module on its first import
    assert importlib.util.find_spec("yoloprof.capture") is None
    assert not (PACKAGE / "capture").exists()


def test_importing_the_capture_layer_leaves_the_function_and_plain_modules():
    for sub in ("builtin", "passes", "userloop", "extras", "device"):
        importlib.import_module(f"yoloprof.capturing.{sub}")
    assert type(yoloprof.capture) is types.FunctionType
    assert isinstance(yoloprof.capturing, types.ModuleType)
    swapped = {name: type(mod).__name__ for name, mod in sys.modules.items()
               if name.split(".")[0] == "yoloprof" and type(mod) is not types.ModuleType}
    assert not swapped, f"modules whose class is not a plain module: {swapped}"
