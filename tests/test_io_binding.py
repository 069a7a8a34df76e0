"""IOBinding (onnxplug.io_binding) on the test device: bound device inputs and outputs skip the
copies the plan would make, host bindings behave as ``run``, and bad bindings are refused by name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.errors import InvalidInputError, InvalidOutputError, UnknownInputError
from onnxplug.errors import BindingError
from onnxplug.io_binding import IOBinding, run_with_iobinding
from onnxplug.plugins import get_catalog
from tests.mixing_provider import BindingProvider, BindingTransfer, DeviceValue
from tests.oracle import ort_outputs


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(BindingProvider, "tests")
    yield
    get_catalog().providers.pop("binding_test", None)


def _model(second_op: str = "Relu") -> bytes:
    """y = second_op(x + b), b an input too (so both inputs can be bound)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node(second_op, ["s"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", f, [2, 3]),
                                    helper.make_tensor_value_info("b", f, [3])],
                              [helper.make_tensor_value_info("y", f, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    return x, np.array([0.5, -0.5, 1.0], np.float32)


def _transfer(session: ort.InferenceSession) -> BindingTransfer:
    return session.engine.providers[0].data_transfer


def test_device_inputs_and_outputs_are_not_copied() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    transfer = _transfer(session)
    x, b = _inputs()
    binding = IOBinding(session)
    binding.bind_input("x", DeviceValue(x))
    binding.bind_input("b", DeviceValue(b), "testdev", 0)
    binding.bind_output("y", "testdev", 0)
    run_with_iobinding(session, binding)
    (y,) = binding.get_outputs()
    assert isinstance(y, ort.OrtValue) and y.device_name() == "testdev"
    assert isinstance(y.value(), DeviceValue)
    assert transfer.to_device_count == 0 and transfer.to_host_count == 0
    assert transfer.synchronized == 1
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], np.maximum(x + b, 0))
    assert transfer.to_host_count == 1


def test_host_bindings_give_what_run_gives() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    x, b = _inputs()
    binding = IOBinding(session)
    binding.bind_cpu_input("x", x)
    binding.bind_input("b", b)
    binding.run()
    (y,) = binding.get_outputs()
    assert isinstance(y, ort.OrtValue) and y.device_name() == "cpu"
    np.testing.assert_array_equal(y.numpy(), session.run(None, {"x": x, "b": b})[0])


def test_device_output_of_a_host_node_is_copied_once() -> None:
    # Sigmoid is not claimed by the test provider: y is produced on the host, then bound to the device
    session = ort.InferenceSession(_model("Sigmoid"), providers=["binding_test"])
    transfer = _transfer(session)
    x, b = _inputs()
    binding = IOBinding(session)
    binding.bind_input("x", DeviceValue(x))
    binding.bind_input("b", DeviceValue(b))
    binding.bind_output("y", "testdev")
    binding.run()
    (y,) = binding.get_outputs()
    assert isinstance(y.value(), DeviceValue)
    (expected,) = ort_outputs(onnx.load_from_string(_model("Sigmoid")), {"x": x, "b": b})
    np.testing.assert_allclose(y.value().data, expected, rtol=1e-6)
    assert transfer.to_host_count == 1  # s leaves the device for the host's Sigmoid
    assert transfer.to_device_count == 1  # and y comes back, as bound


def test_bound_buffer_receives_the_result() -> None:
    class PointerTransfer(BindingTransfer):
        buffers: dict[int, DeviceValue] = {}

        def from_pointer(self, pointer: int, shape: tuple, dtype: np.dtype) -> DeviceValue:
            return self.buffers[pointer]

    session = ort.InferenceSession(_model(), providers=["binding_test"])
    provider = session.engine.providers[0]
    provider.data_transfer = PointerTransfer(provider.allocator)
    target = DeviceValue(np.zeros((2, 3), np.float32))
    PointerTransfer.buffers[1234] = target
    x, b = _inputs()
    binding = IOBinding(session)
    binding.bind_input("x", DeviceValue(x))
    binding.bind_input("b", DeviceValue(b))
    binding.bind_output("y", "testdev", 0, np.float32, (2, 3), 1234)
    binding.run()
    assert binding.get_outputs()[0].value() is target
    np.testing.assert_array_equal(target.data, np.maximum(x + b, 0))


def test_bad_bindings_name_the_culprit() -> None:
    session = ort.InferenceSession(_model(), providers=["binding_test"])
    binding = IOBinding(session)
    with pytest.raises(UnknownInputError, match="'z'"):
        binding.bind_cpu_input("z", np.zeros(3, np.float32))
    with pytest.raises(InvalidOutputError, match="'nope'"):
        binding.bind_output("nope")
    with pytest.raises(BindingError, match="cuda:0"):
        binding.bind_output("y", "cuda", 0)
    with pytest.raises(BindingError, match="'x'.*list"):
        binding.bind_input("x", [1.0, 2.0])
    class TypedValue(DeviceValue):
        dtype = property(lambda self: self.data.dtype)
        shape = property(lambda self: self.data.shape)

    binding.bind_input("x", TypedValue(np.zeros((2, 3), np.float64)))
    binding.bind_cpu_input("b", np.zeros(3, np.float32))
    with pytest.raises(InvalidInputError, match="'x' is float64"):
        binding.run()
    binding.clear_binding_inputs()
    with pytest.raises(InvalidInputError, match="'x' is not bound"):
        binding.run()
    with pytest.raises(BindingError, match="another session"):
        run_with_iobinding(ort.InferenceSession(_model(), providers=["binding_test"]), binding)


def test_session_methods_as_in_onnxruntime():
    sess = ort.InferenceSession(_model(), providers=["binding_test"])
    binding = sess.io_binding()
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    b = np.ones(3, np.float32)
    binding.bind_cpu_input("x", x)
    binding.bind_cpu_input("b", b)
    binding.bind_output("y")
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], np.maximum(x + b, 0))
