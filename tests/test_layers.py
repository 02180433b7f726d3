"""The import contract (.importlinter) holds, and the graph it checks is the real one: imports
inside functions are seen, and no module imports itself back through any chain (no cycles, at
module level, anywhere in the package)."""

from __future__ import annotations

import ast
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


# --- The tests' own conventions (docs/CONTRACTS.md "Tests"): every fixture in conftest.py or a
# fixture plugin it registers, every test file named after the yoloprof package or module it tests.

PROJECT_WIDE_TESTS = {"test_layers.py"}  # this file: the layers of the whole package, no one package


def _yoloprof_units() -> set[str]:
    """The names a test file may start with: yoloprof's subpackages and top-level modules, read
    from the package itself (a package added or renamed is a valid name at once)."""
    pkg = ROOT / "yoloprof"
    return ({p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()}
            | {p.stem for p in pkg.glob("*.py") if p.stem not in ("__init__", "__main__")})


def _misnamed(relpaths: list[str], units: set[str]) -> list[str]:
    """Test files (pytest's default patterns) that are not tests/test_<unit>_<topic>.py."""
    bad = []
    for rel in relpaths:
        parts = rel.split("/")
        name = parts[-1]
        ok = (len(parts) == 2 and (name in PROJECT_WIDE_TESTS or any(
            name.startswith(f"test_{u}_") and len(name) > len(f"test_{u}_.py") for u in units)))
        if not ok:
            bad.append(rel)
    return bad


def _fixture_definitions(source: str) -> list[str]:
    """Where a module defines fixtures: any use of `pytest.fixture` (decorator, call or alias), of
    a `fixture` imported from pytest, or a `pytest_plugins` of its own."""
    tree = ast.parse(source)
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "pytest"
                for a in n.names if a.name in ("fixture", "yield_fixture")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("fixture", "yield_fixture") \
                and isinstance(node.value, ast.Name) and node.value.id == "pytest":
            found.append(f"line {node.lineno}: pytest.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in imported and isinstance(node.ctx, ast.Load):
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.Name) and node.id == "pytest_plugins" and isinstance(node.ctx, ast.Store):
            found.append(f"line {node.lineno}: pytest_plugins")
    return found


def _test_files() -> list[Path]:
    tests = ROOT / "tests"
    return sorted({*tests.rglob("test_*.py"), *tests.rglob("*_test.py")})


def test_the_convention_checks_catch_what_they_forbid():
    units = {"capturing", "cli"}
    assert _misnamed(["tests/test_capturing_cli.py", "tests/test_cli_errors.py", "tests/test_layers.py"], units) == []
    assert _misnamed(["tests/test_stats.py", "tests/test_capturing.py", "tests/test_capturing_.py",
                      "tests/test_userloop_capture.py", "tests/sub/test_cli_x.py", "tests/cli_test.py"],
                     units) == ["tests/test_stats.py", "tests/test_capturing.py", "tests/test_capturing_.py",
                                "tests/test_userloop_capture.py", "tests/sub/test_cli_x.py", "tests/cli_test.py"]
    assert len(_fixture_definitions("import pytest\n@pytest.fixture\ndef a(): pass\n"
                                    "@pytest.fixture(scope='module')\ndef b(): pass\n"
                                    "c = pytest.fixture(lambda: 1)\n")) == 3
    assert _fixture_definitions("from pytest import fixture as fx\n@fx\ndef a(): pass\n") == ["line 2: fx"]
    assert _fixture_definitions("pytest_plugins = ['x']\n") == ["line 1: pytest_plugins"]
    assert _fixture_definitions("import pytest\n@pytest.mark.usefixtures('a')\ndef test_a(request):\n"
                                "    request.getfixturevalue('a')\n") == []


def test_test_files_are_named_after_the_package_they_test():
    """tests/test_<package>_<topic>.py, <package> one of yoloprof's subpackages or top-level
    modules: a test is found beside the others of its package."""
    units = _yoloprof_units()
    assert {"capturing", "cli", "metrics"} <= units
    assert _misnamed([p.relative_to(ROOT).as_posix() for p in _test_files()], units) == []


def test_test_modules_define_no_fixtures():
    """Fixtures live in tests/conftest.py and the fixture plugins it registers (tests/helpers/
    fixtures_*.py), where every test module finds them and none is defined twice."""
    offenders = {p.name: found for p in _test_files()
                 if (found := _fixture_definitions(p.read_text(encoding="utf-8")))}
    assert offenders == {}
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
