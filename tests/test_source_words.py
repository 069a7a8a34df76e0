"""Source text that ages well: short module docstrings, no stopwatch readings, no code history.

A module docstring states the design and its invariants in at most :data:`MAX_DOCSTRING_LINES`
lines. Comments and docstrings say why, not how fast something once was: measured figures live in
docs/benchmarks.md ("Measurements behind design choices"), and git keeps the history.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("core/onnxplug", "plugins/*/src", "provider_sdk/src", "conformance/src", "benchmarks")
MAX_DOCSTRING_LINES = 12

_NUMBER = r"(?<![\w.])~?\d+(?:[.,]\d+)?(?:\s?(?:-|to)\s?~?\d+(?:[.,]\d+)?)?"
#: A figure with a unit of elapsed time, a ratio of speeds, or history of the code itself.
READINGS = {
    "time": re.compile(_NUMBER + r"(?:\s?(?:ns|us|µs|ms|milliseconds?|microseconds?)|\s(?:s|seconds?))\b"),
    "ratio": re.compile(r"\d(?:\.\d+)?x\s+(?:faster|slower|as fast|the time)\b|\d%\s+(?:faster|slower)\b"
                        r"|\bspeed-?ups?\b|\bmeasured\s+(?:at\s+)?~?\d"),
    "history": re.compile(r"\bused to be\b|\bpreviously\b|\bwas changed\b|\bthis replaced\b"
                          r"|\bearlier (?:version|code|implementation)\b"
                          r"|\b(?:earlier|previous|older|test) (?:test )?machines?\b", re.IGNORECASE),
}
#: Time figures that are settings, not readings: pauses, timeouts and limits a caller chooses.
SETTING = re.compile(r"\b(?:pause|pauses|timeout|limit|deadline|sleep|interval|budget|wait|default)\b",
                     re.IGNORECASE)


def source_files() -> list[Path]:
    return [path for pattern in SOURCE_DIRS for folder in sorted(ROOT.glob(pattern))
            for path in sorted(folder.rglob("*.py")) if not any(part.endswith(".egg-info") for part in path.parts)]


def prose(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every comment and every docstring-like string statement."""
    lines: list[tuple[int, str]] = []
    previous = tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.append((token.start[0], token.string))
        elif token.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT,
                                                            tokenize.DEDENT, tokenize.ENCODING):
            lines.extend((token.start[0] + i, text) for i, text in enumerate(token.string.splitlines()))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.type
    return lines


def _is_setting(text: str, start: int, end: int) -> bool:
    """A time figure next to a word that makes it a chosen value rather than a measured one."""
    return bool(SETTING.search(text[max(0, start - 40):end + 25]))


def readings(source: str) -> list[str]:
    found = []
    for number, text in prose(source):
        for kind, pattern in READINGS.items():
            match = pattern.search(text)
            if match and not (kind == "time" and _is_setting(text, match.start(), match.end())):
                found.append(f"{number}: [{kind}] {text.strip()}")
                break
    return found


def docstring_lines(source: str) -> int:
    doc = ast.get_docstring(ast.parse(source), clean=False)
    return len(doc.strip().splitlines()) if doc else 0


@pytest.mark.parametrize("text, kind", [
    ("# the ufunc: ~0.1 us less than +=", "time"),
    ("# took 290 us on one thread, 320-840 us in two halves", "time"),
    ('"""A 40 MB array cost 6.8 ms to allocate."""', "time"),
    ("# a full import runs every export, ~12 s", "time"),
    ("#: blocks of cache size, shared, wait for the GIL: 1024 x 256 in blocks of 128 rows 659 us on two", "time"),
    ("# measured 2.5x slower GRU at batch 8", "ratio"),
    ("# 3-5x faster than im2col", "ratio"),
    ("# a 20% speed-up", "ratio"),
    ("# measured on an earlier test machine", "history"),
])
def test_the_checker_finds_readings(text: str, kind: str) -> None:
    assert [f.split("] ")[0] for f in readings(text + "\nx = 1\n")] == [f"1: [{kind}"]


@pytest.mark.parametrize("text", [
    "# blocks separated by a 0.3 s pause",
    "# timeout in ms, default 500 ms",
    "# a 7x7 kernel, 2304 x GEMM_MULTITHREAD_THRESHOLD 4",
    "# chunks of a millisecond or more",
    "# its shape left-padded with 1s",
    "x = '12 ms'  # a string in code is not prose",
])
def test_the_checker_lets_settings_and_shapes_pass(text: str) -> None:
    assert readings(text + "\n") == []


def test_every_plugin_is_checked() -> None:
    parts = [path.relative_to(ROOT).parts for path in source_files()]
    plugins = {p[1] for p in parts if p[0] == "plugins"}
    assert {"numba", "opencl", "cupy"} <= plugins


def test_docstring_lines_counts_the_module_docstring() -> None:
    assert docstring_lines('"""One.\n\nTwo.\nThree.\n"""\nx = 1\n') == 4
    assert docstring_lines("x = 1\n") == 0


def test_module_docstrings_are_short() -> None:
    long = [f"{path.relative_to(ROOT)}: {count} lines" for path in source_files()
            if (count := docstring_lines(path.read_text(encoding="utf-8"))) > MAX_DOCSTRING_LINES]
    assert not long, f"module docstrings over {MAX_DOCSTRING_LINES} lines:\n" + "\n".join(long)


def test_comments_hold_no_stopwatch_readings() -> None:
    found = [f"{path.relative_to(ROOT)}:{reading}" for path in source_files()
             for reading in readings(path.read_text(encoding="utf-8"))]
    assert not found, ("figures belong in docs/benchmarks.md, history in git:\n" + "\n".join(found))
