"""Contract tests of a provider's kernel registry: well-formed keys, real ops, resolution by opset.

Resolution is checked through the provider's own ``resolve_kernel`` (what the partitioner and
``create_kernel`` use), at every opset from an op's first registered version up to the newest
opset onnx knows: it must return the kernel registered at the largest since_version not above
that opset. Below the first registered version a provider may add fallbacks of its own.

A provider whose kernels each cover exactly one version range of the op's schema can opt in to
a stricter check: set ``require_kernel_per_schema_version = True`` on the test class, and every
schema version of a registered op from the first registered one on must have its own kernel.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

import onnx
import pytest

from onnxplug.ir import ORT_DEFAULT_DOMAIN_OPS, Node
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.case_labels import op_label
from onnxplug_conformance.contract.fixtures import ProviderFixtures

#: Domains onnx defines; ops of other (custom) domains are not checked against onnx schemas.
ONNX_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")


@lru_cache(maxsize=1)
def _schema_versions() -> dict[tuple[str, str], list[int]]:
    versions: dict[tuple[str, str], set[int]] = defaultdict(set)
    for schema in onnx.defs.get_all_schemas_with_history():
        versions[(schema.domain, schema.name)].add(schema.since_version)
    return {key: sorted(v) for key, v in versions.items()}


@lru_cache(maxsize=8)
def newest_opset(domain: str) -> int:
    """The newest opset version onnx defines for ``domain`` (0 for unknown domains)."""
    return max((v for (d, _), vs in _schema_versions().items() if d == domain for v in vs), default=0)


def _registered(registry: KernelRegistry) -> dict[tuple[str, str], list[int]]:
    ops: dict[tuple[str, str], list[int]] = defaultdict(list)
    for domain, op_type, since in registry.keys():
        ops[(domain, op_type)].append(since)
    return {key: sorted(v) for key, v in ops.items()}


class BaseKernelRegistryTests(ProviderFixtures):
    """The provider's ``kernel_registry`` and ``resolve_kernel``."""

    #: Opt in to "one kernel per schema version" (see the module docstring).
    require_kernel_per_schema_version: bool = False

    @pytest.fixture
    def kernel_registry(self, provider: ExecutionProvider) -> KernelRegistry:
        """The provider's registry; skips for providers that only compile fused subgraphs."""
        if provider.kernel_registry is None:
            pytest.skip("the provider has no kernel registry (it claims through get_capability/compile)")
        return provider.kernel_registry

    def test_registry_keys_are_well_formed(self, kernel_registry: KernelRegistry) -> None:
        problems = []
        for key in kernel_registry.keys():
            domain, op_type, since = key
            if not (isinstance(domain, str) and isinstance(op_type, str) and op_type
                    and isinstance(since, int) and since >= 1):
                problems.append(f"malformed key {key!r}")
                continue
            kernel = kernel_registry.resolve(domain, op_type, since)
            if not (isinstance(kernel, type) and issubclass(kernel, Kernel)):
                problems.append(f"{op_label(domain, op_type)} since {since}: {kernel!r} is not a Kernel subclass")
        assert not problems, "\n".join(problems)

    def test_registered_ops_exist_in_onnx(self, kernel_registry: KernelRegistry) -> None:
        schemas = _schema_versions()
        # onnxruntime's own default-domain ops (its optimizer's, the pre-opset-10 experimental ones) count
        unknown = [f"{op_label(d, op)} (since {vs})" for (d, op), vs in _registered(kernel_registry).items()
                   if d in ONNX_DOMAINS and (d, op) not in schemas and not (d == "" and op in ORT_DEFAULT_DOMAIN_OPS)]
        assert not unknown, f"kernels for ops neither onnx nor onnxruntime defines: {', '.join(unknown)}"

    def test_resolution_by_opset(self, provider: ExecutionProvider, kernel_registry: KernelRegistry) -> None:
        problems = []
        for (domain, op_type), versions in _registered(kernel_registry).items():
            last = max(newest_opset(domain), versions[-1])
            if kernel_registry.resolve(domain, op_type, versions[0] - 1) is not None:
                problems.append(f"{op_label(domain, op_type)}: the registry resolves opset "
                                f"{versions[0] - 1}, below the first registered version {versions[0]}")
            for opset in range(versions[0], last + 1):
                since = max(v for v in versions if v <= opset)
                expected = kernel_registry.resolve(domain, op_type, since)
                got = provider.resolve_kernel(Node(op_type, [], [], domain=domain, opset=opset))
                if got is not expected:
                    problems.append(f"{op_label(domain, op_type)} at opset {opset}: resolve_kernel gave "
                                    f"{getattr(got, '__qualname__', got)}, the kernel registered since "
                                    f"{since} is {getattr(expected, '__qualname__', expected)}")
        assert not problems, "\n".join(problems[:50])

    def test_kernel_for_every_schema_version(self, kernel_registry: KernelRegistry) -> None:
        if not self.require_kernel_per_schema_version:
            pytest.skip("opt in with require_kernel_per_schema_version = True on the test class")
        schemas = _schema_versions()
        gaps = []
        for (domain, op_type), versions in _registered(kernel_registry).items():
            known = schemas.get((domain, op_type), [])
            missing = [v for v in known if v >= versions[0] and v not in versions]
            stray = [v for v in versions if known and v not in known]
            if missing:
                gaps.append(f"{op_label(domain, op_type)}: no kernel registered for schema version(s) {missing}")
            if stray:
                gaps.append(f"{op_label(domain, op_type)}: registered at {stray}, not schema versions {known}")
        assert not gaps, "\n".join(gaps)
