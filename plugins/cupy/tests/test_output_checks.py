"""The executor's output check on the cupy provider: its allocator declares the backend's array
class (``cupy.ndarray``; the host emulation's ``EmulatedDeviceArray``) in ``array_types``, so a
kernel that returns anything else (a host numpy array, a list) fails with KernelError naming node
and provider, and the session then runs on, equal to onnxruntime.

Three kinds, as everywhere here: device-free (the declaration, with or without CuPy), host
emulation (marker ``emulation``; NOT a GPU test) and GPU (skipped with CuPy's own reason).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from cupy_test_support import assert_close, onnxruntime_outputs, requires_gpu, session
from host_emulation import EmulatedDeviceArray
from onnxplug.errors import KernelError
from onnxplug_cupy.ops import op_layout
from onnxplug_cupy.provider import CupyProvider
from onnxplug_cupy.runtime.probe import import_cupy

FEEDS = {"x": np.arange(12, dtype=np.float32).reshape(3, 4) - 5, "b": np.linspace(-1, 1, 3).astype(np.float32)}


def _model():
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], name="the_transpose", perm=[1, 0]),
         helper.make_node("Add", ["t", "b"], ["y"], name="the_add")],
        "g", [helper.make_tensor_value_info("x", 1, [3, 4]), helper.make_tensor_value_info("b", 1, [3])],
        [helper.make_tensor_value_info("y", 1, [4, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


#: how a faulty Transpose turns its device result into something else, given the provider's data
#: transfer
FAULTS = {"host_array": lambda transfer, value: np.array(transfer.to_host(value)),
          "list": lambda transfer, value: transfer.to_host(value).tolist()}


@pytest.fixture
def fault(monkeypatch):
    """``fault[0]``: the FAULTS entry the Transpose kernel applies to its result (None: none)."""
    state = [None]
    original = op_layout.Transpose.compute

    def compute(self, *inputs):
        value = original(self, *inputs)
        return value if state[0] is None else FAULTS[state[0]](self.context.provider.data_transfer, value)

    monkeypatch.setattr(op_layout.Transpose, "compute", compute)
    return state


def _faults_are_kernel_errors(provider_name: str, fault: list, says: dict[str, str]) -> None:
    """Each fault is a KernelError naming node and provider and saying ``says[fault]``; the
    session then matches onnxruntime."""
    model = _model()
    sess = session(model, provider_name)
    assert {a.op_type: a.provider for a in sess.get_node_assignments()} == {"Transpose": provider_name,
                                                                            "Add": provider_name}
    want = onnxruntime_outputs(model, FEEDS)
    assert_close(sess.run(None, FEEDS), want)
    for kind in FAULTS:
        fault[0] = kind
        with pytest.raises(KernelError) as info:
            sess.run(None, FEEDS)
        message = str(info.value)
        assert "'the_transpose'" in message and "Transpose" in message and f"'{provider_name}'" in message, message
        assert says[kind] in message, message
        fault[0] = None
        for _ in range(2):
            assert_close(sess.run(None, FEEDS), want)


def test_the_declared_class_is_cupys_and_reading_it_touches_no_device():
    """Where CuPy imports, ``cupy.ndarray``; elsewhere nothing (no session runs the provider),
    and neither creating the provider nor reading the declaration needs CUDA."""
    cupy, _ = import_cupy()
    provider = CupyProvider()
    assert provider.allocator.array_types == (() if cupy is None else (cupy.ndarray,))
    assert provider.backend._cupy is None  # CuPy's device layer was not asked for anything


@pytest.mark.emulation
def test_emulated_kernel_returning_a_host_value_is_a_kernel_error(emulated, fault):
    sess = session(_model(), emulated)
    allocator = sess.engine.providers[0].allocator
    assert allocator.array_types == (EmulatedDeviceArray,)
    assert isinstance(allocator.alloc((2, 3), np.dtype(np.float32)), EmulatedDeviceArray)
    _faults_are_kernel_errors(emulated, fault, {"host_array": "a ndarray, not a EmulatedDeviceArray float32[4, 3]",
                                                "list": "a list, not a EmulatedDeviceArray float32[4, 3]"})


@pytest.mark.gpu
@requires_gpu
def test_gpu_kernel_returning_a_host_value_is_a_kernel_error(fault):
    import cupy

    sess = session(_model(), "cupy")
    allocator = sess.engine.providers[0].allocator
    assert allocator.array_types == (cupy.ndarray,)
    assert isinstance(allocator.alloc((2, 3), np.dtype(np.float32)), cupy.ndarray)
    # numpy's and CuPy's ndarray are named with their package
    _faults_are_kernel_errors("cupy", fault, {"host_array": "a numpy.ndarray, not a cupy.ndarray float32[4, 3]",
                                              "list": "a list, not a ndarray float32[4, 3]"})
