"""Fixtures of the suite's own test modules; loaded only when a run asked for a provider."""

from __future__ import annotations

import pytest

from onnxplug_conformance.plugin import RUN_PLUGIN_NAME
from onnxplug_conformance.run import ConformanceRun


@pytest.fixture(scope="session")
def conformance(pytestconfig: pytest.Config) -> ConformanceRun:
    """The current run: provider under test, deviations, report."""
    run = pytestconfig.pluginmanager.get_plugin(RUN_PLUGIN_NAME)
    if run is None:
        pytest.skip("the conformance suite runs only with --provider NAME")
    return run
