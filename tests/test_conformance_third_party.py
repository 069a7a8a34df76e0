"""A third-party provider adopting the conformance contract tests in a few lines.

The test provider of tests/mixing_provider.py (Relu and Add on a second device) runs every
contract test of onnxplug-conformance by naming its class; it claims only float32, so the
dtype tests of other element types are reported as "not claimed".
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnxplug_conformance", reason="onnxplug-conformance is not installed (pip install -e conformance)")

from onnxplug_conformance.contract import ProviderContractTests  # noqa: E402

from tests.mixing_provider import MixingProvider  # noqa: E402


class TestMixingProviderConformance(ProviderContractTests):
    require_kernel_per_schema_version = True  # its kernels follow the Relu/Add schema versions

    @pytest.fixture
    def provider_class(self):
        return MixingProvider


def test_adopting_the_contract_collects_its_tests():
    """Naming the class is all it takes: the adopter inherits every contract test."""
    inherited = [name for name in dir(TestMixingProviderConformance) if name.startswith("test_")]
    assert inherited and set(inherited) == {n for n in dir(ProviderContractTests) if n.startswith("test_")}
