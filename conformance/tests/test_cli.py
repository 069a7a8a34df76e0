"""``onnxplug conformance`` (the core's command) and ``onnxplug_conformance.cli``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onnxplug_conformance.cli import build_parser, pytest_args
from onnxplug_conformance.provider_spec import ProviderSpecError, parse_options, resolve_provider


def onnxplug(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onnxplug.cli", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)


def test_core_command_runs_the_suite_and_prints_the_table(tmp_path: Path) -> None:
    result = onnxplug(tmp_path, "conformance", "numpy", "-k", "test_abs or test_relu", "--layers", "node")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "conformance-numpy.json").read_text())  # the default path
    assert report["counts"]["node"]["pass"] >= 2 and report["counts"]["node"]["fail"] == 0
    assert {"Abs", "Relu"} <= set(report["claimed_ops"])
    assert "onnxplug conformance: provider 'numpy'" in result.stdout
    assert any(line.startswith("Relu ") for line in result.stdout.splitlines())


def test_json_option_and_extra_pytest_arguments(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.json"
    result = onnxplug(tmp_path, "conformance", "null", "--json", str(out), "-k", "test_abs",
                      "--layers", "node", "--table", "none", "-rs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(out.read_text())["counts"]["node"]["not-claimed"] == 1
    assert "onnxplug conformance: provider" not in result.stdout
    assert "SKIPPED" in result.stdout and "not claimed" in result.stdout  # -rs reached pytest


def test_unknown_provider_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    result = onnxplug(tmp_path, "conformance", "cudaa")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "unknown provider 'cudaa'" in result.stderr and "numpy" in result.stderr


def test_pytest_arguments() -> None:
    args, extra = build_parser().parse_known_args(["numpy", "--json", "r.json", "-k", "abs", "--option", "a=1", "-x"])
    argv = pytest_args(args, extra)
    assert argv[:2] == ["--pyargs", "onnxplug_conformance"]
    assert argv[argv.index("--onnxplug-provider") + 1] == "numpy"
    assert argv[argv.index("--conformance-json") + 1] == "r.json"
    assert argv[argv.index("--provider-option") + 1] == "a=1"
    assert argv[-2:] == ["-q", "-x"]
    args, extra = build_parser().parse_known_args(["numpy", "-v"])
    assert "-q" not in pytest_args(args, extra)


def test_provider_options_are_parsed_as_json_when_they_can_be() -> None:
    assert parse_options(["n=2", "claim=Relu,Add", "flag=true", "empty="]) == {
        "n": 2, "claim": "Relu,Add", "flag": True, "empty": ""}
    with pytest.raises(ProviderSpecError, match="expected KEY=VALUE"):
        parse_options(["novalue"])


def test_provider_specs() -> None:
    assert resolve_provider("CPUExecutionProvider").name == "numpy"
    assert resolve_provider("null").cls.name == "null"
    with pytest.raises(ProviderSpecError, match="has no attribute 'Nope'"):
        resolve_provider("onnxplug_conformance.null_provider:Nope")
    with pytest.raises(ProviderSpecError, match="not an ExecutionProvider subclass"):
        resolve_provider("onnxplug_conformance.null_provider:NULL_PROVIDER_NAME")
    with pytest.raises(ProviderSpecError, match="cannot import module"):
        resolve_provider("no_such_module_xyz:Provider")
