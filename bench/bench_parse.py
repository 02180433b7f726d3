"""`yoloprof summary` of a large Kineto trace, whole process, against the references, paired.

Usage: python bench/bench_parse.py [TRACE.json.gz] [--repeat 3] [--no-hta] [--json] [--against DIR]

Method (so that ratios mean something on a shared, noisy machine):
- Every case is a fresh Python process started by this script, timed from outside (wall clock
  around `subprocess`, imports and interpreter start included) with its own peak RSS (VmHWM of
  /proc/self/status, printed at exit: `ru_maxrss` would also count the parent's pages copied at
  fork): what a user waits for and what the machine must hold.
- A round runs every case once, in a rotated order; each ratio is computed inside a round (both
  sides measured seconds apart) and the table shows the median over `--repeat` rounds.
- References: gunzip + `json.loads` of the same file (always); Holistic Trace Analysis 0.5's
  `TraceAnalysis(trace_dir=...)` load of the same file when `hta` is importable (not a yoloprof
  dependency: `pip install --no-deps HolisticTraceAnalysis==0.5.0` plus pandas, numpy, plotly,
  psutil, narwhals, networkx, pydot and pyyaml).
- `--against DIR`: another checkout's `summary .json.gz` (e.g. main before a change) runs in the
  same rounds, byte-compiled alike, and the ratio of its time to this checkout's is shown: an A/B
  measured seconds apart instead of in two runs minutes apart on a machine whose speed drifts.
- The columnar cache is off (YOLOPROF_CACHE=off) in every case: a first read of the file is
  timed, as `json.loads` reads it, never a cached profile (traces of 64 MiB and more are cached).
- yoloprof's modules are byte-compiled before the rounds (as pip does at install for numpy,
  HTA and an installed yoloprof); `--no-compile` times a source checkout run with
  PYTHONDONTWRITEBYTECODE=1 instead.
- In-process, the same run also times parse_trace_bytes against msgspec's plain typed decode of
  the same bytes (CPU time, median of `--repeat`): the cost of building the columns.

Targets (issue 11): summary >= 2x faster than gunzip + json.loads and >= 8x faster than HTA's
load, <= 0.4 s, peak RSS <= 3x the JSON size; a .json.gz costs <= 1.3x its .json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "traces" / "df_index_resolver.json.gz"
TARGETS = {"json_over_summary": 2.0, "hta_over_summary": 8.0, "summary_s": 0.4,
           "peak_over_json": 3.0, "gz_over_json": 1.3}


# Runs a module or code, then reports its peak RSS (this process's own memory map only).
PROBE = """import atexit, runpy, sys
def _hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("\\n@@VmHWM " + line.split()[1] + "\\n")
atexit.register(_hwm)
mode, target = sys.argv[1], sys.argv[2]
sys.argv = [target] + sys.argv[3:]
if mode == "-m":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
"""


AGAINST = "against .json.gz"


def _cases(gz: Path, plain: Path, hta_dir: Path | None, against: Path | None = None
           ) -> dict[str, tuple[list[str], Path]]:
    """Each case's command and the checkout on its PYTHONPATH (and its working directory: `-m`
    puts the working directory first on the path)."""
    probe = [sys.executable, "-c", PROBE]
    cases = {
        "summary .json.gz": (probe + ["-m", "yoloprof", "summary", str(gz)], REPO),
        "summary .json": (probe + ["-m", "yoloprof", "summary", str(plain)], REPO),
        "gunzip + json.loads": (probe + ["-c", "import gzip, json; "
                                         f"json.loads(gzip.decompress(open({str(gz)!r}, 'rb').read()))"], REPO),
    }
    if hta_dir is not None:
        cases["HTA 0.5 load"] = (probe + ["-c", "from hta.trace_analysis import TraceAnalysis; "
                                          f"TraceAnalysis(trace_dir={str(hta_dir)!r})"], REPO)
    if against is not None:
        cases[AGAINST] = (probe + ["-m", "yoloprof", "summary", str(gz)], against)
    return cases


def _run(cmd: list[str], root: Path = REPO) -> tuple[float, int, float]:
    """Wall seconds, peak RSS bytes and CPU seconds (user + system, its children included) of one
    process. On a machine shared with other work, CPU seconds are what the process would take
    alone on a core, wall seconds what it took today."""
    env = {**os.environ, "PYTHONPATH": str(root), "YOLOPROF_CACHE": "off"}
    with tempfile.TemporaryFile() as err_file:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file, env=env, cwd=root)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[3:6])} failed ({proc.returncode}): {err.strip()[-500:]}")
    hwm = [line.split()[1] for line in err.splitlines() if line.startswith("@@VmHWM ")]
    return wall, int(hwm[-1]) * 1024 if hwm else 0, usage.ru_utime + usage.ru_stime


def _hta_available() -> bool:
    code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('hta') else 1)"
    return subprocess.run([sys.executable, "-c", code]).returncode == 0


def _in_process(data: bytes, repeat: int) -> dict[str, float]:
    """CPU seconds (median) of the parse, of msgspec's typed decode it starts with, and of the
    engine (`analyze_events`: steps, launches, op tree, device unions) over the parsed events."""
    sys.path.insert(0, str(REPO))
    from yoloprof.traces.analyze import analyze_events
    from yoloprof.traces.kineto import _TRACE_DECODER
    from yoloprof.traces.parse import parse_trace_bytes

    out = {}
    events = parse_trace_bytes(data)
    for name, op in (("typed decode", lambda: _TRACE_DECODER.decode(data)),
                     ("parse_trace_bytes", lambda: parse_trace_bytes(data)),
                     ("engine", lambda: analyze_events(events, "bench")),
                     ("json.loads", lambda: json.loads(data))):
        times = []
        for _ in range(repeat):
            t = time.process_time()
            op()
            times.append(time.process_time() - t)
        out[name] = statistics.median(times)
    return out


def precompile(root: Path = REPO) -> None:
    """Write yoloprof's bytecode (`__pycache__`, git-ignored) before timing. Why: numpy and HTA
    run from site-packages, byte-compiled when pip installed them, and so does an installed
    yoloprof; a checkout run with PYTHONDONTWRITEBYTECODE=1 would instead compile every yoloprof
    module in every timed process (0.04-0.05 s of CPU), a cost no user pays."""
    import compileall

    compileall.compile_dir(str(root / "yoloprof"), quiet=1)


def measure(trace: Path, repeat: int, hta: bool, compile_first: bool = True, against: Path | None = None) -> dict:
    if compile_first:
        for root in (REPO, against) if against is not None else (REPO,):
            precompile(root)
    raw = trace.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    with tempfile.TemporaryDirectory() as tmp:
        plain, gz = Path(tmp, "trace.json"), Path(tmp, "trace.json.gz")
        plain.write_bytes(data)
        gz.write_bytes(raw if raw[:2] == b"\x1f\x8b" else gzip.compress(data))
        hta_dir = None
        if hta:
            hta_dir = Path(tmp, "hta")
            hta_dir.mkdir()
            shutil.copy(gz, hta_dir / "trace.json.gz")
        cases = _cases(gz, plain, hta_dir, against)
        names = list(cases)
        rounds = []
        for r in range(repeat):
            order = names[r % len(names):] + names[:r % len(names)]
            rounds.append({name: _run(*cases[name]) for name in order})
    return {"json_bytes": len(data), "rounds": rounds, "in_process": _in_process(data, repeat)}


def summarise(m: dict) -> dict:
    rounds, size = m["rounds"], m["json_bytes"]
    med = {name: statistics.median(r[name][0] for r in rounds) for name in rounds[0]}
    cpu = {name: statistics.median(r[name][2] for r in rounds) for name in rounds[0]}
    peak = {name: max(r[name][1] for r in rounds) for name in rounds[0]}

    def ratio(a: str, b: str, k: int = 0) -> float:
        return statistics.median(r[a][k] / r[b][k] for r in rounds)

    out = {"wall_s": med, "cpu_s": cpu, "peak_bytes": peak, "json_bytes": size,
           "json_over_summary": ratio("gunzip + json.loads", "summary .json.gz"),
           "gz_over_json": ratio("summary .json.gz", "summary .json"),
           "summary_s": med["summary .json.gz"],
           "peak_over_json": peak["summary .json.gz"] / size,
           "cpu": {"json_over_summary": ratio("gunzip + json.loads", "summary .json.gz", 2),
                   "gz_over_json": ratio("summary .json.gz", "summary .json", 2),
                   "summary_s": cpu["summary .json.gz"]},
           "load_avg": os.getloadavg()[0], "in_process_cpu_s": m["in_process"]}
    if "HTA 0.5 load" in med:
        out["hta_over_summary"] = ratio("HTA 0.5 load", "summary .json.gz")
        out["cpu"]["hta_over_summary"] = ratio("HTA 0.5 load", "summary .json.gz", 2)
    if AGAINST in med:
        out["against_over_summary"] = ratio(AGAINST, "summary .json.gz")
        out["cpu"]["against_over_summary"] = ratio(AGAINST, "summary .json.gz", 2)
        out["against_json_over_summary"] = {"wall": ratio("gunzip + json.loads", AGAINST),
                                            "cpu": ratio("gunzip + json.loads", AGAINST, 2)}
    return out


def render(s: dict, repeat: int) -> str:
    size = s["json_bytes"]
    lines = [f"JSON size {size / 1e6:.1f} MB; whole processes, median of {repeat} paired rounds; "
             f"1-minute load average {s['load_avg']:.1f} on {os.cpu_count()} cores; yoloprof "
             + ("byte-compiled beforehand, as an install is" if s.get("precompiled", True)
                else "compiled from source in every process (--no-compile)"),
             f"{'case':<22}{'wall s':>9}{'CPU s':>9}{'peak MB':>9}{'peak/JSON':>11}"]
    for name, wall in s["wall_s"].items():
        lines.append(f"{name:<22}{wall:>9.3f}{s['cpu_s'][name]:>9.3f}{s['peak_bytes'][name] / 1e6:>9.0f}"
                     f"{s['peak_bytes'][name] / size:>11.2f}")
    lines.append("")
    lines.append(f"{'ratio':<44}{'wall':>8}{'CPU':>8}{'target':>8}{'':>6}")
    checks = [("gunzip+json.loads / summary (x faster)", "json_over_summary", ">="),
              ("HTA 0.5 load / summary (x faster)", "hta_over_summary", ">="),
              ("summary .json.gz wall s", "summary_s", "<="),
              ("summary peak RSS / JSON size", "peak_over_json", "<="),
              ("summary .json.gz / summary .json", "gz_over_json", "<=")]
    for label, key, op in checks:
        if key not in s:
            lines.append(f"{label:<44}{'n/a':>8}{'n/a':>8}{TARGETS[key]:>8.2f}  (hta not importable)")
            continue
        ok = s[key] >= TARGETS[key] if op == ">=" else s[key] <= TARGETS[key]
        on_cpu = s["cpu"].get(key)
        cpu_text = f"{on_cpu:>8.2f}" if on_cpu is not None else f"{'':>8}"
        lines.append(f"{label:<44}{s[key]:>8.2f}{cpu_text}{TARGETS[key]:>8.2f}  {'ok' if ok else 'MISSED'}"
                     " (wall)")
    if "against_over_summary" in s:
        lines.append(f"{'against / this checkout (x faster)':<44}{s['against_over_summary']:>8.2f}"
                     f"{s['cpu']['against_over_summary']:>8.2f}")
        lines.append(f"{'gunzip+json.loads / against':<44}{s['against_json_over_summary']['wall']:>8.2f}"
                     f"{s['against_json_over_summary']['cpu']:>8.2f}")
    ip = s["in_process_cpu_s"]
    lines.append("")
    lines.append(f"in-process CPU: typed decode {ip['typed decode']:.3f} s, parse_trace_bytes "
                 f"{ip['parse_trace_bytes']:.3f} s ({ip['parse_trace_bytes'] / ip['typed decode']:.2f}x "
                 f"the decode), engine {ip['engine']:.3f} s, json.loads {ip['json.loads']:.3f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-hta", action="store_true", help="skip Holistic Trace Analysis even if importable")
    ap.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile yoloprof first (time its modules' compilation too)")
    ap.add_argument("--against", default=None, metavar="DIR",
                    help="another checkout whose summary runs in the same rounds (an A/B)")
    args = ap.parse_args(argv)
    trace = Path(args.trace)
    if not trace.is_file():
        print(f"no such trace: {trace}", file=sys.stderr)
        return 2
    hta = not args.no_hta and _hta_available()
    against = Path(args.against).resolve() if args.against else None
    if against is not None and not (against / "yoloprof" / "__main__.py").is_file():
        print(f"--against {against}: not a yoloprof checkout", file=sys.stderr)
        return 2
    s = summarise(measure(trace, args.repeat, hta, compile_first=not args.no_compile, against=against))
    s["precompiled"] = not args.no_compile
    print(json.dumps(s, indent=1) if args.json else render(s, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
