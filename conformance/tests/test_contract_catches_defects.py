"""Each contract test class must fail for a provider with the defect it is about, and pass or
skip (with the provider's reason) otherwise. The defective providers are in broken_providers.py;
the good control is the mixing provider of the core tests (tests/test_conformance_third_party.py)
and the null provider (test_null_provider.py)."""

from __future__ import annotations

import pytest

# Imported here, outside the inner runs, so the loaded node-case graphs stay cached between them.
from onnxplug_conformance.contract import survey

TEMPLATE = """
import pytest
from onnxplug_conformance.contract import {mixin}
from broken_providers import {provider}

class TestDefect({mixin}):
    require_kernel_per_schema_version = {strict}

    @pytest.fixture
    def provider_class(self):
        return {provider}
"""


@pytest.fixture(scope="module", autouse=True)
def graphs_loaded() -> None:
    survey.surveyed_graphs()


def run_mixin(pytester: pytest.Pytester, mixin: str, provider: str, *args: str,
              strict: bool = False) -> pytest.RunResult:
    pytester.makepyfile(test_defect=TEMPLATE.format(mixin=mixin, provider=provider, strict=strict))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA", *args)


def test_stateful_kernel_fails_the_concurrency_test(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseStatelessKernelTests", "StatefulProvider", "-k", "node_cases")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*concurrent run(s) disagree*", "*test_relu, thread *: AssertionError*"])


def test_lossy_transfer_fails_the_round_trip(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseDataTransferTests", "LossyTransferProvider", "-k",
                       "round_trip_every_claimed_dtype and float32")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*float32 round trip: dtype float64, expected float32*"])


def test_claims_without_kernels_fail_the_capability_test(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseCapabilityTests", "GreedyProvider", "-k", "consistent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*but resolve_kernel finds no kernel*"])


def test_misplaced_kernel_version_fails_the_strict_registry_test(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseKernelRegistryTests", "MisversionedProvider", strict=True)
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "Relu: no kernel registered for schema version(s) [13, 14]" in out
    assert "Relu: registered at [12], not schema versions [1, 6, 13, 14]" in out


def test_registry_without_strictness_accepts_one_kernel_for_many_versions(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseKernelRegistryTests", "MisversionedProvider")
    result.assert_outcomes(passed=3, skipped=1)


def test_unavailable_provider_without_reason_fails(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseAvailabilityTests", "UnavailableSilently")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*an unavailable provider must say why*"])


def test_unavailable_provider_with_reason_passes_and_skips_the_rest(pytester: pytest.Pytester) -> None:
    result = run_mixin(pytester, "BaseAvailabilityTests", "UnavailableWithReason")
    result.assert_outcomes(passed=4, skipped=1)
    result = run_mixin(pytester, "BaseAllocatorTests", "UnavailableWithReason", "-k", "serve")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not available: the test device is unplugged*"])


def test_wrong_kernel_is_not_a_contract_violation(pytester: pytest.Pytester) -> None:
    """Wrong values are the node layer's business: the contract tests pass for WrongAbsProvider."""
    result = run_mixin(pytester, "BaseCapabilityTests", "WrongAbsProvider", "-k", "consistent")
    result.assert_outcomes(passed=1)
