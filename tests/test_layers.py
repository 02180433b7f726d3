"""The import contract (.importlinter) holds, and the graph it checks is the real one: imports
inside functions are seen, and no module imports itself back through any chain (no cycles, at
module level, anywhere in the package)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _graph():
    return grimp.build_graph("yoloprof", cache_dir=None)


def test_layers_contract_is_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_imports_inside_functions_are_in_the_graph():
    # cli.py imports the loader and every reader only inside its command functions.
    graph = _graph()
    assert graph.direct_import_exists(importer="yoloprof.cli", imported="yoloprof.readers.load")
    assert graph.direct_import_exists(importer="yoloprof.api", imported="yoloprof.readers.load")


def _cycles(adj: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(adj.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_known_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_import_cycles():
    graph = _graph()
    adj = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(adj) == []


def test_import_yoloprof_stays_cheap():
    code = ("import sys, yoloprof; yoloprof.__version__; "
            "heavy = [m for m in ('torch', 'pandas', 'hydra', 'numpy', 'pyarrow') if m in sys.modules]; "
            "print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_test_modules_import_no_other_test_module():
    """Shared test code lives in tests/helpers/ (fixtures in conftest.py): a test module that
    imports another would run its tests twice and couple the two."""
    import ast

    import re

    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(ROOT)} imports {m}" for m in
                      re.findall(r"""(?:__import__|import_module)\(["'](test_\w+|conftest)""", text)]
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                leaf = name.split(".")[-1]
                if leaf.startswith("test_") or leaf == "conftest":
                    offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


# Module names say what each holds and mean one thing (issue 25): no two modules of yoloprof/ share
# a file name (a traceback, a grep or an editor tab names a module by it), and `yoloprof.capture`
# is the public function only: the capture layer is the plain package `yoloprof.capturing`, so no
# submodule import can rebind the name and no module class is swapped.
SHARED_NAMES_OK = {"__init__.py", "__main__.py"}


def _basenames(root: Path) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts and path.name not in SHARED_NAMES_OK:
            where.setdefault(path.name, []).append(path.relative_to(root).as_posix())
    return where


def test_no_two_modules_share_a_file_name():
    repeated = {name: paths for name, paths in _basenames(ROOT / "yoloprof").items() if len(paths) > 1}
    assert not repeated, f"module file names repeated across packages: {repeated}"


def test_the_name_check_sees_a_repeat(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "stats.py").write_text("")
    assert _basenames(tmp_path) == {"stats.py": ["a/stats.py", "b/stats.py"]}


def test_capture_is_the_public_function_and_no_package_of_that_name_exists():
    import importlib.util
    import types

    import yoloprof
    from yoloprof import capture
    from yoloprof.api import capture as api_capture

    assert capture is api_capture and type(yoloprof.capture) is types.FunctionType
    # a package or a leftover folder `capture` in the package (even a namespace package made of
    # a stale __pycache__) would rebind yoloprof.capture to a module on its first import
    assert importlib.util.find_spec("yoloprof.capture") is None
    assert not (ROOT / "yoloprof" / "capture").exists()


def test_importing_the_capture_layer_leaves_the_function_and_plain_modules():
    import importlib
    import types

    import yoloprof

    for sub in ("builtin", "passes", "userloop", "extras", "device"):
        importlib.import_module(f"yoloprof.capturing.{sub}")
    assert type(yoloprof.capture) is types.FunctionType
    swapped = {name: type(mod).__name__ for name, mod in sys.modules.items()
               if name.split(".")[0] == "yoloprof" and type(mod) is not types.ModuleType}
    assert not swapped, f"modules whose class is not a plain module: {swapped}"
