"""Layer 1: the contract tests (onnxplug_conformance.contract) on the provider under test."""

from __future__ import annotations

from typing import Any

import pytest

from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.contract import ProviderContractTests
from onnxplug_conformance.provider_spec import ProviderUnderTest
from onnxplug_conformance.run import ConformanceRun


class TestProviderContract(ProviderContractTests):
    """Every contract test, with the provider named by ``--provider``."""

    @pytest.fixture
    def provider_class(self, conformance: ConformanceRun) -> type[ExecutionProvider]:
        return conformance.provider.cls

    @pytest.fixture
    def provider_options(self, conformance: ConformanceRun) -> dict[str, Any]:
        return dict(conformance.provider.options)

    def test_contract_tests_get_the_provider_the_run_names(self, provider_under_test: ProviderUnderTest,
                                                         conformance: ConformanceRun) -> None:
        """The inherited tests run on the class, catalog name and options given with ``--provider``
        and ``--provider-option`` (options dropped here would test the defaults instead)."""
        named = conformance.provider
        assert provider_under_test.cls is named.cls, (
            f"contract tests got {provider_under_test.cls!r}, the run names {named.cls!r}")
        assert provider_under_test.name == named.name, (
            f"contract tests registered {provider_under_test.name!r}, the run reports {named.name!r}")
        assert provider_under_test.options == named.options, (
            f"contract tests got options {provider_under_test.options!r}, the run was given {named.options!r}")
