"""Shared helpers of the suite's self-tests: running the suite in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent


@dataclass
class SuiteRun:
    """A finished run of ``onnxplug conformance``: exit code, output and JSON report."""

    returncode: int
    output: str
    report: dict[str, Any] | None

    def counts(self, layer: str) -> dict[str, int]:
        """Counts of one layer (or ``overall``)."""
        assert self.report is not None, self.output[-3000:]
        return self.report["counts"][layer]

    def outcome(self, layer: str, test_id: str) -> str:
        """The outcome of one test."""
        assert self.report is not None, self.output[-3000:]
        return self.report["tests"][f"{layer}:{test_id}"]["outcome"]


def run_suite(tmp_path: Path, *args: str, timeout: float = 900) -> SuiteRun:
    """``python -m onnxplug_conformance.cli ARGS --json tmp/report.json`` with the test providers
    of this folder importable; the suite's own table is printed into ``output``."""
    report_path = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "onnxplug_conformance.cli", *args, "--json", str(report_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    return SuiteRun(result.returncode, result.stdout + result.stderr, report)
