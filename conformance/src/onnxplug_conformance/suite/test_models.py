"""Layer 3: the project's model suite on the provider under test (fallback allowed), compared
with onnxruntime; skipped with a reason when onnxruntime is not installed."""

from __future__ import annotations

import pytest

from onnxplug_conformance.model_runner import MODEL_NAMES, ONNXRUNTIME_MISSING, assert_close_scaled, run_model
from onnxplug_conformance.node_runner import NotClaimed
from onnxplug_conformance.run import ConformanceRun


@pytest.mark.parametrize("model_name", MODEL_NAMES)
def test_model(model_name: str, conformance: ConformanceRun) -> None:
    conformance.require_available()
    pytest.importorskip("onnxruntime", reason=ONNXRUNTIME_MISSING)
    try:
        run = run_model(model_name, conformance.provider)
    except NotClaimed as e:
        pytest.skip(str(e))
    assert_close_scaled(run.outputs, run.expected)
