"""Contract tests of a provider's identity, options and availability reporting.

These run whether or not the provider is available here: an unavailable provider must say why
(a reason a person can act on), and a session that cannot fall back must refuse it with that
reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

import onnxplug as ort
from onnxplug.errors import ProviderUnavailableError, UnsupportedOptionError
from onnxplug.provider import CORE_API_VERSION, Availability


from onnxplug_conformance.contract.fixtures import ProviderFixtures
from onnxplug_conformance.model_runner import suite_model
from onnxplug_conformance.node_runner import session_options
from onnxplug_conformance.provider_spec import ProviderUnderTest


class BaseAvailabilityTests(ProviderFixtures):
    """``availability()``, ``devices()``, name, interface version and options."""

    def test_identity(self, provider_under_test: ProviderUnderTest) -> None:
        cls = provider_under_test.cls
        assert isinstance(cls.name, str) and cls.name.strip(), "the provider class needs a non-empty name"
        assert cls.api_version == CORE_API_VERSION, (
            f"written for core interface {cls.api_version}, this core implements {CORE_API_VERSION}")
        assert isinstance(cls.default_options, Mapping), "default_options must be a mapping"
        assert all(isinstance(a, str) and a for a in cls.aliases), f"aliases must be names: {cls.aliases!r}"

    def test_availability_has_a_reason_when_false(self, provider_under_test: ProviderUnderTest) -> None:
        availability = provider_under_test.cls.availability()
        assert isinstance(availability, Availability), f"availability() returned {type(availability).__name__}"
        if not availability:
            assert isinstance(availability.reason, str) and availability.reason.strip(), (
                "an unavailable provider must say why")
        else:
            devices = provider_under_test.cls.devices()
            assert isinstance(devices, list) and all(isinstance(d, str) for d in devices), devices

    def test_availability_is_stable(self, provider_under_test: ProviderUnderTest) -> None:
        assert provider_under_test.cls.availability() == provider_under_test.cls.availability()

    def test_unavailable_provider_is_refused_with_its_reason(self, provider_under_test: ProviderUnderTest) -> None:
        availability = provider_under_test.cls.availability()
        if availability:
            pytest.skip("the provider is available here; the refusal is checked where it is not")
        with pytest.raises(ProviderUnavailableError) as info:
            ort.InferenceSession(suite_model("gru"), session_options(), providers=[provider_under_test.spec])
        assert availability.reason in str(info.value)

    def test_unknown_option_is_refused_by_name(self, provider_under_test: ProviderUnderTest) -> None:
        if not provider_under_test.cls.availability():
            pytest.skip("the provider is not available here")
        bogus = "conformance_no_such_option"
        with pytest.raises(UnsupportedOptionError, match=bogus):
            provider_under_test.cls({bogus: 1})
        provider = provider_under_test.cls(dict(provider_under_test.options))
        for key, default in provider_under_test.cls.default_options.items():
            assert key in provider.options, f"option {key!r} (default {default!r}) missing from .options"
