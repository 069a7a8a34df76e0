"""KernelRegistryProvider: the registry decorator, duplicate refusal, opset resolution, lazy op loading."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from onnx import helper
from sdk_support import make_model

import onnxplug
from onnxplug.ir import load_model
from onnxplug.plugins import get_catalog
from onnxplug_sdk import (
    Capability,
    GraphView,
    Kernel,
    KernelRegistryProvider,
    errors,
    hookimpl,
    registry_for,
)


def _relu_view(opset: int, op_type: str = "Relu") -> GraphView:
    model = make_model([helper.make_node(op_type, ["x"], ["y"], name="n")], {"x": [2]}, {"y": [2]}, opset=opset)
    graph = load_model(model).graph
    return GraphView(graph, graph.nodes)


def test_decorator_registers_in_the_class_registry_only() -> None:
    class First(KernelRegistryProvider):
        name = "sdk_t_first"

    class Second(KernelRegistryProvider):
        name = "sdk_t_second"

    @First.kernel("Relu", 6, 14)
    class Relu(Kernel):
        pass

    assert list(First.registry.keys()) == [("", "Relu", 6), ("", "Relu", 14)]
    assert list(Second.registry.keys()) == []
    assert registry_for(First) is First.registry


def test_duplicate_registration_is_refused_and_names_both_kernels() -> None:
    class Dup(KernelRegistryProvider):
        name = "sdk_t_dup"

    @Dup.kernel("Relu", 13)
    class ReluA(Kernel):
        pass

    with pytest.raises(errors.DuplicateKernelError, match=r"Relu since opset 13.*ReluA.*refusing.*ReluB"):
        @Dup.kernel("Relu", 13)
        class ReluB(Kernel):
            pass
    # Another since_version, or another domain, is a different key.
    Dup.kernel("Relu", 14)(ReluA)
    Dup.kernel("Relu", 13, domain="com.example")(ReluA)


@pytest.mark.parametrize(("opset", "expected"), [(5, None), (6, "V6"), (12, "V6"), (13, "V13"), (21, "V14")])
def test_opset_resolution_picks_the_largest_since_version_not_above_the_model(opset: int, expected: str) -> None:
    class Versions(KernelRegistryProvider):
        name = "sdk_t_versions"

    for since in (6, 13, 14):
        Versions.kernel("Relu", since)(type(f"V{since}", (Kernel,), {}))
    view = _relu_view(opset)
    provider = Versions()
    kernel = provider.resolve_kernel(view.nodes[0])
    assert (kernel.__name__ if kernel else None) == expected
    claims = provider.get_capability(view)
    assert [c.nodes for c in claims] == ([] if expected is None else [(view.nodes[0],)])


def test_supports_false_leaves_the_node_unclaimed() -> None:
    class Picky(KernelRegistryProvider):
        name = "sdk_t_picky"

    @Picky.kernel("Relu", 6)
    class OnlyDoubles(Kernel):
        @classmethod
        def supports(cls, node, view):  # type: ignore[no-untyped-def]
            return view.dtype_of(node.inputs[0]) == np.dtype(np.float64)

    assert Picky().get_capability(_relu_view(17)) == []  # the model is float32


def test_subclass_kernels_win_and_missing_ops_fall_back_to_the_base() -> None:
    class Base(KernelRegistryProvider):
        name = "sdk_t_base"

    class Child(Base):
        name = "sdk_t_child"

    Base.kernel("Relu", 6)(type("BaseRelu", (Kernel,), {}))
    Base.kernel("Sigmoid", 6)(type("BaseSigmoid", (Kernel,), {}))
    Child.kernel("Relu", 6)(type("ChildRelu", (Kernel,), {}))
    assert Child().resolve_kernel(_relu_view(17).nodes[0]).__name__ == "ChildRelu"
    assert Child().resolve_kernel(_relu_view(17, "Sigmoid").nodes[0]).__name__ == "BaseSigmoid"
    assert Base().resolve_kernel(_relu_view(17).nodes[0]).__name__ == "BaseRelu"


def test_kernel_and_registry_for_refuse_non_subclasses() -> None:
    with pytest.raises(TypeError, match="KernelRegistryProvider.kernel must be called on a provider subclass"):
        KernelRegistryProvider.kernel("Relu")
    with pytest.raises(TypeError, match="registry_for expects a subclass"):
        registry_for(object)  # type: ignore[arg-type]


def _write_ops_package(root: Path, package: str, modules: dict[str, str]) -> None:
    folder = root / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for name, body in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(body))


def test_ops_package_modules_are_imported_on_first_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Lazy(KernelRegistryProvider):
        name = "sdk_t_lazy"
        ops_package = "sdk_lazy_ops"

    monkeypatch.setitem(sys.modules, "sdk_lazy_provider", type(sys)("sdk_lazy_provider"))
    sys.modules["sdk_lazy_provider"].Lazy = Lazy  # type: ignore[attr-defined]
    _write_ops_package(tmp_path, "sdk_lazy_ops", {
        "op_relu": """
            from onnxplug_sdk import Kernel
            from sdk_lazy_provider import Lazy

            @Lazy.kernel("Relu", 6)
            class Relu(Kernel):
                pass
        """,
        "helper_not_an_op": "raise RuntimeError('modules not named op_* must not be imported')\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "sdk_lazy_ops.op_relu" not in sys.modules
    kernel = Lazy().resolve_kernel(_relu_view(17).nodes[0])
    assert kernel is not None and kernel.__module__ == "sdk_lazy_ops.op_relu"
    for name in ("sdk_lazy_ops", "sdk_lazy_ops.op_relu"):
        sys.modules.pop(name, None)


def test_a_broken_op_module_fails_with_its_name_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(KernelRegistryProvider):
        name = "sdk_t_broken"
        ops_package = "sdk_broken_ops"

    _write_ops_package(tmp_path, "sdk_broken_ops", {"op_bad": "import a_module_that_does_not_exist\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    node = _relu_view(17).nodes[0]
    for _ in range(2):  # not a half-loaded registry on the second lookup
        with pytest.raises(errors.ProviderError, match=r"'sdk_t_broken'.*'sdk_broken_ops.op_bad' failed to import"):
            Broken().resolve_kernel(node)
    sys.modules.pop("sdk_broken_ops", None)


def test_missing_ops_package_is_a_provider_error() -> None:
    class Missing(KernelRegistryProvider):
        name = "sdk_t_missing"
        ops_package = "sdk_no_such_package_anywhere"

    with pytest.raises(errors.ProviderError, match="ops_package 'sdk_no_such_package_anywhere' cannot be imported"):
        Missing().resolve_kernel(_relu_view(17).nodes[0])


class _KernelPlugin:
    """A plugin adding a kernel to another provider through onnxplug_register_kernels."""

    calls: ClassVar[list[str]] = []

    @hookimpl
    def onnxplug_register_kernels(self, provider_name: str, registry) -> None:  # type: ignore[no-untyped-def]
        if provider_name == "sdk_t_hooked":
            type(self).calls.append(provider_name)
            registry.register("Sigmoid", 6, type("PluginSigmoid", (Kernel,), {}))


def test_register_kernels_hook_runs_once_after_loading() -> None:
    class Hooked(KernelRegistryProvider):
        name = "sdk_t_hooked"

    Hooked.kernel("Relu", 6)(type("OwnRelu", (Kernel,), {}))
    plugin = _KernelPlugin()
    pm = get_catalog().pm
    pm.register(plugin, name="sdk-tests-kernel-plugin")
    try:
        provider = Hooked()
        assert provider.resolve_kernel(_relu_view(17, "Sigmoid").nodes[0]).__name__ == "PluginSigmoid"
        assert provider.resolve_kernel(_relu_view(17).nodes[0]).__name__ == "OwnRelu"
        Hooked().get_capability(_relu_view(17))
    finally:
        pm.unregister(name="sdk-tests-kernel-plugin")
    assert _KernelPlugin.calls == ["sdk_t_hooked"]


def test_claims_run_in_a_session(register_provider) -> None:  # type: ignore[no-untyped-def]
    class Claiming(KernelRegistryProvider):
        name = "sdk_t_claiming"

    @Claiming.kernel("Relu", 6, 13, 14)
    class Relu(Kernel):
        def compute(self, x: np.ndarray) -> np.ndarray:
            return np.maximum(x, np.float32(0))

    register_provider(Claiming)
    model = make_model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                        helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid")], {"x": [4]}, {"y": [4]})
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=["sdk_t_claiming"])
    assert [(a.node_name, a.provider) for a in session.get_node_assignments()] == [
        ("relu", "sdk_t_claiming"), ("sigmoid", "numpy")]
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)
    assert isinstance(Claiming().get_capability(GraphView(session.engine.model.graph, session.engine.model.graph.nodes))[0],
                      Capability)
