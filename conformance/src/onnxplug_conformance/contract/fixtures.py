"""The fixture contract of the contract tests.

A test class that mixes in the ``Base*Tests`` classes provides ``provider_class`` (required: the
:class:`~onnxplug.provider.ExecutionProvider` subclass under test) and ``provider_options``
(optional, default ``{}``), each a fixture method on the class, a module-level fixture or a
``conftest.py`` fixture. Everything else is derived here: ``provider_under_test`` (the class
registered in the provider catalog for the test, so sessions can name it), ``provider`` (an
instance; the test is skipped with the provider's own reason when it is unavailable here),
``claim_survey`` and ``claimed_dtypes``.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from onnxplug.plugins import get_catalog
from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.contract.survey import ClaimSurvey, survey_claims
from onnxplug_conformance.provider_spec import ProviderUnderTest, register_class

NOT_CLAIMED = "not claimed"


def _optional_fixture(request: pytest.FixtureRequest, name: str, default: Any) -> Any:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        return default


class ProviderFixtures:
    """Fixtures every ``Base*Tests`` mixin uses; see the module docstring for the contract."""

    @pytest.fixture
    def provider_under_test(self, request: pytest.FixtureRequest,
                            provider_class: type[ExecutionProvider]) -> Iterator[ProviderUnderTest]:
        """The provider class with its options, registered in the catalog while the test runs."""
        options = dict(_optional_fixture(request, "provider_options", {}) or {})
        catalog = get_catalog()
        name = getattr(provider_class, "name", "") or provider_class.__name__
        added = catalog.providers.get(name) is not provider_class
        register_class(provider_class)
        try:
            yield ProviderUnderTest(name, provider_class, options)
        finally:
            if added and catalog.providers.get(name) is provider_class:
                del catalog.providers[name]

    @pytest.fixture
    def provider(self, provider_under_test: ProviderUnderTest) -> ExecutionProvider:
        """An instance of the provider; skips the test when the provider is unavailable here."""
        availability = provider_under_test.cls.availability()
        if not availability:
            pytest.skip(f"provider {provider_under_test.name!r} is not available: {availability.reason}")
        return provider_under_test.cls(dict(provider_under_test.options))

    @pytest.fixture
    def claim_survey(self, provider: ExecutionProvider, provider_under_test: ProviderUnderTest) -> ClaimSurvey:
        """What the provider claims over the node-case graphs and the model suite (cached)."""
        return survey_claims(provider_under_test.cls, provider_under_test.options)

    @pytest.fixture
    def claimed_dtypes(self, claim_survey: ClaimSurvey) -> set[str]:
        """Names of the element types (``ONNX_DTYPES`` keys) of tensors the provider's claims touch."""
        return set(claim_survey.dtypes)

    @staticmethod
    def require_dtype(claimed_dtypes: set[str], key: str) -> None:
        """Skip as "not claimed" when the provider claims no tensor of dtype ``key``."""
        if key not in claimed_dtypes:
            pytest.skip(f"{NOT_CLAIMED}: the provider claims no node reading or writing {key}")

    @staticmethod
    def some_claimed_dtype(claimed_dtypes: set[str]) -> str:
        """float32 when claimed, else any claimed dtype; skips when the provider claims none."""
        if "float32" in claimed_dtypes:
            return "float32"
        usable = sorted(d for d in claimed_dtypes if d != "string")
        if not usable:
            pytest.skip(f"{NOT_CLAIMED}: the provider claims no node with numeric tensors")
        return usable[0]
