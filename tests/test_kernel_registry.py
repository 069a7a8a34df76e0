"""The kernel registry: newest since_version <= opset wins, duplicates are refused."""

from __future__ import annotations

import pytest

from onnxplug.errors import DuplicateKernelError
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.providers.numpy.registry import REGISTRY


class K1(Kernel):
    pass


class K6(Kernel):
    pass


class K13(Kernel):
    pass


@pytest.fixture
def registry() -> KernelRegistry:
    r = KernelRegistry("test")
    r.register("Relu", 1, K1)
    r.register("Relu", 13, K13)
    r.register("Relu", 6, K6)
    return r


@pytest.mark.parametrize("opset,expected", [(1, K1), (5, K1), (6, K6), (12, K6), (13, K13), (21, K13)])
def test_resolves_largest_since_version_not_above_opset(registry, opset, expected):
    assert registry.resolve("", "Relu", opset) is expected


def test_below_first_version_and_unknown_ops_resolve_to_none(registry):
    registry.register("Gelu", 20, K1)
    assert registry.resolve("", "Gelu", 19) is None
    assert registry.resolve("", "Nope", 20) is None
    assert registry.resolve("com.example", "Relu", 20) is None


def test_ai_onnx_domain_alias(registry):
    assert registry.resolve("ai.onnx", "Relu", 13) is K13


def test_duplicate_registration_is_refused(registry):
    with pytest.raises(DuplicateKernelError, match="Relu since opset 6"):
        registry.register("Relu", 6, K13)
    assert registry.resolve("", "Relu", 6) is K6


def test_decorator_registers_each_version():
    r = KernelRegistry("deco")

    @r.kernel("Clip", 6, 11, domain="ai.onnx")
    class Clip(Kernel):
        pass

    assert list(r.keys()) == [("", "Clip", 6), ("", "Clip", 11)]


def test_lazy_loader_runs_once():
    calls = []

    def load(reg: KernelRegistry) -> None:
        calls.append(1)
        reg.register("Abs", 1, K1)

    r = KernelRegistry("lazy", loader=load)
    assert r.resolve("", "Abs", 13) is K1 and r.resolve("", "Abs", 1) is K1
    assert calls == [1]


def test_numpy_registry_loads_op_modules():
    assert REGISTRY.resolve("", "Relu", 17) is not None
    assert REGISTRY.resolve("", "Add", 17) is not None
