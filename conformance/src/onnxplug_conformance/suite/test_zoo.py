"""Layer "zoo": real models from other projects on the provider under test (fallback allowed),
compared with onnxruntime at two shape sets; one test per selected model, ids are model names."""

from __future__ import annotations

import pytest

from onnxplug_conformance.plugin import RUN_PLUGIN_NAME
from onnxplug_conformance.run import ConformanceRun
from onnxplug_conformance.zoo.spec import ZooModel


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise over the run's selection (``--zoo-only``, ``--zoo-tier``)."""
    if "zoo_model" not in metafunc.fixturenames:
        return
    run = metafunc.config.pluginmanager.get_plugin(RUN_PLUGIN_NAME)
    models = run.zoo.models if run is not None and run.zoo is not None else []
    metafunc.parametrize("zoo_model", models, ids=[m.name for m in models])


def test_zoo(zoo_model: ZooModel, conformance: ConformanceRun) -> None:
    conformance.require_available()
    assert conformance.zoo is not None
    conformance.zoo.check(zoo_model)
