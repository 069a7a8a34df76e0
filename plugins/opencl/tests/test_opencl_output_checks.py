"""The executor's output check on the opencl provider: its allocator declares ``pyopencl.array.Array``
(``array_types``), so a kernel that returns anything else (a host numpy array, a list) fails with
KernelError naming node and provider, and the session then runs on, equal to onnxruntime."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest
from onnx import helper

import onnxplug as ort
from onnxplug.errors import KernelError
from onnxplug_opencl.ops import op_movement
from opencl_helpers import assert_close, make_model, run_both

FEEDS = {"x": np.arange(12, dtype=np.float32).reshape(3, 4) - 5, "b": np.linspace(-1, 1, 3).astype(np.float32)}
MODEL = make_model([helper.make_node("Transpose", ["x"], ["t"], name="the_transpose", perm=[1, 0]),
                    helper.make_node("Add", ["t", "b"], ["y"], name="the_add")], FEEDS, ["y"])

#: how a faulty Transpose turns its device result into something else, and what the error says
FAULTS = {"host_array": (lambda value: value.get(), "a ndarray, not a Array float32[4, 3]"),
          "list": (lambda value: value.get().tolist(), "a list, not a Array float32[4, 3]")}


@pytest.fixture
def fault(monkeypatch):
    """``fault[0]``: the FAULTS entry the Transpose kernel applies to its result (None: none)."""
    state = [None]
    original = op_movement.Transpose.compute

    def compute(self, x):
        value = original(self, x)
        return value if state[0] is None else FAULTS[state[0]][0](value)

    monkeypatch.setattr(op_movement.Transpose, "compute", compute)
    return state


def test_the_allocator_declares_the_class_its_kernels_return(fault):
    got, want, session = run_both(MODEL, FEEDS)
    assert_close(got, want)
    provider = session.engine.providers[0]
    assert provider.name == "opencl" and provider.allocator.array_types == (cla.Array,)
    assert isinstance(provider.allocator.alloc((2, 3), np.dtype(np.float32)), cla.Array)
    assert isinstance(provider.data_transfer.to_device(FEEDS["x"]), cla.Array)


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_a_kernel_returning_other_than_a_device_array_is_a_kernel_error(kind, fault):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(MODEL, so, providers=["opencl"])
    assert {a.op_type: a.provider for a in session.get_node_assignments()} == {"Transpose": "opencl",
                                                                                "Add": "opencl"}
    _, want, _ = run_both(MODEL, FEEDS)
    fault[0] = kind
    with pytest.raises(KernelError) as info:
        session.run(None, FEEDS)
    message = str(info.value)
    assert "'the_transpose'" in message and "Transpose" in message and "'opencl'" in message, message
    assert FAULTS[kind][1] in message, message
    fault[0] = None
    for _ in range(2):
        assert_close(session.run(None, FEEDS), want)
