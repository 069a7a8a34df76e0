"""``onnxplug conformance P --zoo``: builds what is missing, runs the selection, saves results, writes the page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, run_suite
from zoo_fakes import fake_zoo  # noqa: F401 - a fixture


def test_zoo_only_builds_runs_saves_and_writes_the_page(fake_zoo: Path, tmp_path: Path) -> None:
    page = tmp_path / "docs" / "zoo.md"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    result = subprocess.run([sys.executable, "-m", "onnxplug.cli", "conformance", "numpy", "--zoo", "--only",
                             "fake_mlp,fake_broken", "--zoo-doc", str(page), "-rs"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "building 2 zoo model(s)" in output
    report = json.loads((tmp_path / "conformance-numpy.json").read_text())
    assert report["counts"]["zoo"] == {**report["counts"]["zoo"], "tests": 2, "pass": 1, "skipped": 1}
    assert report["counts"]["node"]["tests"] == 0 and report["counts"]["model"]["tests"] == 0
    assert report["tests"]["zoo:fake_broken"]["reason"].startswith("not built: RuntimeError: the exporter exploded")
    assert not report["complete"]  # a selection of the zoo
    assert any(line.startswith("fake_mlp") and "match" in line and "100%" in line for line in output.splitlines())
    saved = json.loads((fake_zoo / "results" / "numpy.json").read_text())
    assert set(saved["models"]) == {"fake_mlp"} and saved["models"]["fake_mlp"]["match"] is True
    assert saved["command"] == "onnxplug conformance numpy --zoo --only fake_mlp,fake_broken"
    text = page.read_text()
    assert "| `fake_mlp` | vision | onnx " in text and "match, 100%" in text
    assert "the exporter exploded" in text


def test_a_wrong_provider_fails_and_its_deviation_is_honoured(fake_zoo: Path, tmp_path: Path) -> None:
    run = run_suite(tmp_path, "broken_providers:WrongReluProvider", "--zoo", "--only", "fake_mlp,fake_tokens")
    assert run.returncode == 1, run.output[-3000:]
    assert run.outcome("zoo", "fake_mlp") == "fail"
    assert "fake_mlp differs from onnxruntime" in run.report["tests"]["zoo:fake_mlp"]["reason"]
    assert run.outcome("zoo", "fake_tokens") == "not-claimed"  # matched, but on numpy alone
    deviations = tmp_path / "wrong.toml"
    deviations.write_text('[zoo]\nfake_mlp = "Relu returns |x| (deliberate)"\n'
                          'fake_strings = "listed, not selected: not stale"\n')
    run = run_suite(tmp_path, "broken_providers:WrongReluProvider", "--zoo", "--only", "fake_mlp",
                    "--deviations", str(deviations))
    assert run.returncode == 0, run.output[-3000:]
    assert run.outcome("zoo", "fake_mlp") == "xfail"
    deviations.write_text('[zoo]\nfake_mlp = "Relu returns |x|"\nno_such_model = "stale"\n')
    run = run_suite(tmp_path, "broken_providers:WrongReluProvider", "--zoo", "--only", "fake_mlp",
                    "--deviations", str(deviations))
    assert run.returncode == 1 and run.report["deviations"]["unknown_ids"] == ["zoo:no_such_model"]


def test_no_build_says_the_command_and_skips(fake_zoo: Path, tmp_path: Path) -> None:
    run = run_suite(tmp_path, "numpy", "--zoo", "--only", "fake_tokens", "--no-build", "-rs")
    assert run.returncode == 0, run.output[-3000:]
    assert "python -m onnxplug_conformance.zoo.build --only fake_tokens" in run.output
    assert run.outcome("zoo", "fake_tokens") == "skipped"
    assert not (fake_zoo / "models").exists()


def test_zoo_options_need_zoo(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "numpy", "--only", "fake_mlp")
    assert run.returncode == 2 and "--only, --tier and --zoo-doc go with --zoo" in run.output


def test_an_unknown_model_is_a_usage_error(fake_zoo: Path, tmp_path: Path) -> None:
    run = run_suite(tmp_path, "numpy", "--zoo", "--only", "fake_mlp,nope")
    assert run.returncode == 2 and "no zoo model 'nope'" in run.output


@pytest.mark.parametrize("tier, expected", [("ci", {"fake_mlp", "fake_broken"})])
def test_tier_selects_the_models_of_a_tier(fake_zoo: Path, tmp_path: Path, tier: str, expected: set[str]) -> None:
    run = run_suite(tmp_path, "numpy", "--zoo", "--tier", tier)
    assert run.returncode == 0, run.output[-3000:]
    assert {t["id"] for t in run.report["tests"].values() if t["layer"] == "zoo"} == expected
