"""The model layer fails a provider whose kernel is wrong inside a real model of the suite."""

from __future__ import annotations

from pathlib import Path

from conftest import run_suite


def test_wrong_relu_inside_a_real_model_fails_the_run(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "broken_providers:WrongReluProvider", "--layers", "model", "-k", "if_model")
    assert run.returncode == 1, run.output[-3000:]
    assert run.outcome("model", "if_model") == "fail"
