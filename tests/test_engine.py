"""The engine behind the session facade: plans name device values OnDevice(name, Device) and steps
by StepKind; plan_for derives and caches a plan per binding layout; DataTransfer says which of its
optional methods a transfer implements."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.device import CPU, HostDataTransfer
from onnxplug.executor import OnDevice, StepKind
from onnxplug.plugins import get_catalog
from tests import mixing_provider
from tests.mixing_provider import TEST_DEVICE, BindingProvider, BindingTransfer, CountingAllocator


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(BindingProvider, "tests")
    yield
    get_catalog().providers.pop("binding_test", None)


def _session() -> ort.InferenceSession:
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", f, [2, 3]),
                                    helper.make_tensor_value_info("b", f, [3])],
                              [helper.make_tensor_value_info("y", f, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(model.SerializeToString(), providers=["binding_test"])


def test_plan_names_device_values_and_step_kinds():
    engine = _session().engine
    kinds = [s.kind for s in engine.plan.steps]
    assert all(isinstance(k, StepKind) for k in kinds)
    assert kinds.count(StepKind.COPY) == 3 and kinds.count(StepKind.NODE) == 2  # x, b in; y out
    copy_in = next(s for s in engine.plan.steps if s.kind == StepKind.COPY and s.outputs[0] != "y")
    assert copy_in.outputs == [OnDevice(copy_in.inputs[0], TEST_DEVICE)]
    assert engine.plan.outputs == {"y": "y"}


def test_plan_for_drops_the_copies_a_binding_makes_unnecessary_and_is_cached():
    engine = _session().engine
    bound = engine.plan_for({"x": TEST_DEVICE, "b": CPU}, {"y": TEST_DEVICE})
    assert bound.plan.copy_count == 1  # b still goes to the device; x is fed there, y stays there
    assert not bound.produced_on_host("y")
    assert engine.plan_for({"x": TEST_DEVICE}, {"y": TEST_DEVICE}) is bound
    assert engine.plan.copy_count == 3  # the engine's own plan is unchanged


def test_data_transfer_declares_which_optional_methods_it_offers():
    host = HostDataTransfer()
    assert not any(host.offers(m) for m in ("adopt", "from_pointer", "copy_into"))
    host.synchronize()  # the default has nothing to wait for
    plain, binding = mixing_provider.TestTransfer(CountingAllocator()), BindingTransfer(CountingAllocator())
    assert not plain.offers("adopt")
    assert binding.offers("adopt") and binding.offers("copy_into") and not binding.offers("from_pointer")
    with pytest.raises(NotImplementedError):
        plain.copy_into(None, None)
    with pytest.raises(ValueError):
        binding.offers("to_host")
