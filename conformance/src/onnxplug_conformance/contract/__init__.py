"""Contract tests every execution provider can run, as mixin classes (in the style of pandas'
extension base tests and fsspec's abstract tests); usage: :class:`ProviderContractTests`.

The fixture contract is described in :mod:`.fixtures`; each ``Base*Tests`` class can also be
used alone. Tests that do not apply are skipped with a reason: a dtype or model the provider
does not claim is skipped as "not claimed", a provider unavailable here with its own reason.
"""

from onnxplug_conformance.contract.availability import BaseAvailabilityTests
from onnxplug_conformance.contract.capability import BaseCapabilityTests
from onnxplug_conformance.contract.concurrency import BaseStatelessKernelTests
from onnxplug_conformance.contract.fixtures import ProviderFixtures
from onnxplug_conformance.contract.memory import BaseAllocatorTests, BaseDataTransferTests
from onnxplug_conformance.contract.registry import BaseKernelRegistryTests


class ProviderContractTests(BaseAvailabilityTests, BaseAllocatorTests, BaseDataTransferTests,
                            BaseKernelRegistryTests, BaseCapabilityTests, BaseStatelessKernelTests):
    """Every contract test at once.

    A provider package subclasses it in its own tests and names its provider class::

        import pytest
        from onnxplug_conformance.contract import ProviderContractTests
        from my_provider import MyProvider

        class TestMyProviderContract(ProviderContractTests):
            @pytest.fixture
            def provider_class(self):
                return MyProvider

            @pytest.fixture
            def provider_options(self):        # optional, default {}
                return {"device": 0}
    """


__all__ = [
    "BaseAllocatorTests",
    "BaseAvailabilityTests",
    "BaseCapabilityTests",
    "BaseDataTransferTests",
    "BaseKernelRegistryTests",
    "BaseStatelessKernelTests",
    "ProviderContractTests",
    "ProviderFixtures",
]
