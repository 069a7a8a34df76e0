"""Layer 1: the contract tests (onnxplug_conformance.contract) on the provider under test."""

from __future__ import annotations

from typing import Any

import pytest

from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.contract import ProviderContractTests
from onnxplug_conformance.run import ConformanceRun


class TestProviderContract(ProviderContractTests):
    """Every contract test, with the provider named by ``--provider``."""

    @pytest.fixture
    def provider_class(self, conformance: ConformanceRun) -> type[ExecutionProvider]:
        return conformance.provider.cls

    @pytest.fixture
    def provider_options(self, conformance: ConformanceRun) -> dict[str, Any]:
        return dict(conformance.provider.options)
