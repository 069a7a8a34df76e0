"""The executor's output check on an SDK-built device provider: ``DeviceMemory`` declares
``DeviceArray`` (``array_types``), so a kernel that returns anything else (a host numpy array, a
list) fails with KernelError naming node and provider, and the session then runs on, equal to
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from sdk_support import NullRelu, SecondDeviceProvider, make_model, plain_session, run_onnxruntime

from onnxplug.errors import KernelError
from onnxplug_sdk import Device, DeviceArray, DeviceMemory, NullDevice

FEEDS = {"x": np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)}
MODEL = make_model([helper.make_node("Relu", ["x"], ["r"], name="the_relu"),
                    helper.make_node("Add", ["r", "b"], ["y"], name="the_add")],
                   {"x": [2, 3]}, {"y": [2, 3]},
                   initializers=[numpy_helper.from_array(np.array([0.5, -1, 2], np.float32), "b")])

#: how a faulty Relu turns its device result into something else (given the memory), and what
#: the error says
FAULTS = {"host_array": (lambda memory, value: memory.to_host(value), "a ndarray, not a DeviceArray float32[2, 3]"),
          "list": (lambda memory, value: memory.to_host(value).tolist(), "a list, not a DeviceArray float32[2, 3]")}


@pytest.fixture
def fault(monkeypatch):
    """``fault[0]``: the FAULTS entry the Relu kernel applies to its result (None: none)."""
    state = [None]
    original = NullRelu.compute

    def compute(self, x):
        value = original(self, x)
        return value if state[0] is None else FAULTS[state[0]][0](self.context.provider.memory, value)

    monkeypatch.setattr(NullRelu, "compute", compute)
    return state


def test_device_memory_declares_the_class_it_hands_out():
    memory = NullDevice(Device("null", 3))
    assert DeviceMemory.array_types == memory.array_types == (DeviceArray,)
    assert isinstance(memory.alloc((2, 3), np.dtype(np.float32)), DeviceArray)
    assert isinstance(memory.to_device(np.zeros(4, np.int64)), DeviceArray)


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_a_kernel_returning_other_than_a_device_array_is_a_kernel_error(kind, fault, register_provider):
    register_provider(SecondDeviceProvider)
    session = plain_session(MODEL, [SecondDeviceProvider.name])
    assert {a.op_type: a.provider for a in session.get_node_assignments()} == {
        "Relu": SecondDeviceProvider.name, "Add": SecondDeviceProvider.name}
    want = run_onnxruntime(MODEL, FEEDS)
    fault[0] = kind
    with pytest.raises(KernelError) as info:
        session.run(None, FEEDS)
    message = str(info.value)
    assert "'the_relu'" in message and "Relu" in message and f"'{SecondDeviceProvider.name}'" in message, message
    assert FAULTS[kind][1] in message, message
    fault[0] = None
    for _ in range(2):
        got = session.run(None, FEEDS)
        assert len(got) == 1 and got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
