"""Run every client driver twice, on onnxruntime and on onnxplug, and compare the two answers.

Each driver in ``drivers/`` uses one unmodified onnxruntime client from PyPI through its public API
and prints its answer as one JSON line (see ``drivers/common.py``). This script runs it with plain
``python`` (the installed onnxruntime) and with ``python -m onnxplug.as_onnxruntime`` (every
``import onnxruntime`` of that process gets onnxplug), each in a fresh working and home folder, so
that no run sees files that another one cached. The onnxplug side loads only the core's providers
(``ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD=1``): the default ``numpy`` provider answers. Labels and text
must be equal; numbers under a key the driver gives a tolerance for (boxes, scores) may differ by
that much, other numbers by :data:`DEFAULT_ATOL`. One line per client; exit status 1 when any
client differs or fails on either side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

DRIVERS = Path(__file__).resolve().parent / "drivers"
#: Modules of ``drivers/`` that the drivers import; not clients.
HELPERS = {"common", "images"}
#: How far a number may be off where the driver names no tolerance (answers are rounded to 4 digits).
DEFAULT_ATOL = 1e-3
SIDES = ("onnxruntime", "onnxplug")


def drivers(names: list[str]) -> list[Path]:
    found = sorted(p for p in DRIVERS.glob("*.py") if p.stem not in HELPERS and not p.stem.startswith("_"))
    if not names:
        return found
    by_name = {p.stem: p for p in found}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown client(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def run_side(driver: Path, side: str, timeout: float) -> tuple[Any, str, float]:
    """(parsed answer line or None, error text, seconds) of one run of ``driver`` on ``side``."""
    cmd = [sys.executable, str(driver)] if side == "onnxruntime" else \
        [sys.executable, "-m", "onnxplug.as_onnxruntime", str(driver)]
    with tempfile.TemporaryDirectory(prefix=f"client-{driver.stem}-{side}-") as home:
        env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
        env.pop("PYTHONPATH", None)
        if side == "onnxplug":
            env["ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        start = time.perf_counter()
        try:
            done = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:g} s", time.perf_counter() - start
        seconds = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None, last_error(done.stderr) or f"exit {done.returncode}, no answer line", seconds
    try:
        return json.loads(lines[-1]), "", seconds
    except json.JSONDecodeError as e:
        return None, f"answer line is not JSON: {e}", seconds


def last_error(stderr: str) -> str:
    """The exception line of a traceback (the last line that is not a log or warning), shortened."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if ("Error" in line or "Exception" in line or line.startswith(("No module", "Fail"))) \
                and not line.startswith(("File ", "[")):
            return line[:400]
    return lines[-1][:400] if lines else ""


def differences(got: Any, want: Any, where: str, tolerance: Mapping[str, float], atol: float | None,
                limit: int = 3) -> list[str]:
    """Where ``got`` (onnxplug's answer) differs from ``want`` (onnxruntime's), at most ``limit``."""
    out: list[str] = []
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return [f"{where}: keys {sorted(got) if isinstance(got, dict) else type(got).__name__}, "
                    f"expected {sorted(want)}"]
        for key in want:
            out += differences(got[key], want[key], f"{where}.{key}", tolerance, tolerance.get(key, atol), limit)
            if len(out) >= limit:
                break
        return out[:limit]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            n = len(got) if isinstance(got, list) else type(got).__name__
            return [f"{where}: {n} items, expected {len(want)}: got {short(got)}, expected {short(want)}"]
        for i, (g, w) in enumerate(zip(got, want)):
            out += differences(g, w, f"{where}[{i}]", tolerance, atol, limit)
            if len(out) >= limit:
                break
        return out[:limit]
    number = (int, float)
    if isinstance(want, number) and not isinstance(want, bool) and isinstance(got, number) \
            and not isinstance(got, bool):
        if isinstance(want, int) and isinstance(got, int) and atol is None:
            return [] if got == want else [f"{where}: {got} != {want}"]
        allowed = DEFAULT_ATOL if atol is None else atol
        return [] if abs(got - want) <= allowed else [f"{where}: {got} != {want} (tolerance {allowed:g})"]
    return [] if got == want else [f"{where}: {short(got)} != {short(want)}"]


def short(value: Any, width: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."


def check(driver: Path, timeout: float, verbose: bool) -> tuple[bool, str]:
    results = {side: run_side(driver, side, timeout) for side in SIDES}
    times = ", ".join(f"{side} {results[side][2]:.1f} s" for side in SIDES)
    problems = []
    for side in SIDES:
        answer, error, _ = results[side]
        if answer is None:
            problems.append(f"{side}: {error}")
        elif answer.get("runtime") != side:
            problems.append(f"{side} run was served by {answer.get('runtime')!r}")
    if not problems:
        want, got = results["onnxruntime"][0], results["onnxplug"][0]
        problems = differences(got["answer"], want["answer"], "answer", want.get("tolerance", {}), None)
        if verbose:
            print(f"      onnxruntime: {short(want['answer'], 400)}\n      onnxplug:    {short(got['answer'], 400)}")
    status = "same answers" if not problems else "; ".join(problems)
    return not problems, f"({times}) {status}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clients", nargs="*", help="driver names (file stems under drivers/); all by default")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print both answers")
    args = parser.parse_args(argv)
    passed = failed = 0
    for driver in drivers(args.clients):
        ok, detail = check(driver, args.timeout, args.verbose)
        print(f"{'PASS' if ok else 'FAIL'} {driver.stem:28} {detail}", flush=True)
        passed, failed = passed + ok, failed + (not ok)
    print(f"clients: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
