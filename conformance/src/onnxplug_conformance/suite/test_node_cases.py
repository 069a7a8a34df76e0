"""Layer 2: every ONNX backend node test on the provider under test, CPU fallback disabled.

A test passes only if the provider ran every node; one it does not fully claim is skipped as
"not claimed" (counted apart, never a pass). Random-output ops are checked by shape, dtype and
value range.
"""

from __future__ import annotations

import pytest

from onnxplug_conformance.node_case import NodeCase
from onnxplug_conformance.node_runner import NotClaimed, run_node_case
from onnxplug_conformance.plugin import RUN_PLUGIN_NAME
from onnxplug_conformance.run import ConformanceRun


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per cached node case, named after it (``-k test_abs`` works)."""
    if "node_case" in metafunc.fixturenames:
        run = metafunc.config.pluginmanager.get_plugin(RUN_PLUGIN_NAME)
        cases = run.cases if run is not None else []
        metafunc.parametrize("node_case", cases, ids=[case.name for case in cases])


def test_node_case(node_case: NodeCase, conformance: ConformanceRun) -> None:
    conformance.require_available()
    try:
        compared = run_node_case(node_case, conformance.provider)
    except NotClaimed as e:
        pytest.skip(str(e))
    assert compared > 0, f"{node_case.name}: the case has no data set, so nothing was compared"
