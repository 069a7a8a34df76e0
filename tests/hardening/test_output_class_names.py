"""The output check's message when a kernel returns the wrong class: classes are named by their
short name, and by package too where two of them share it (numpy's and CuPy's ``ndarray``), so the
message never reads "a ndarray, not a ndarray"."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from onnxplug.errors import KernelError
from onnxplug.plan_compiler import check_output

#: a device array class with numpy's short name, as CuPy's is
ndarray = type("ndarray", (), {"__module__": "gpuarrays._core.core"})
DeviceArray = type("DeviceArray", (), {"__module__": "gpuarrays.memory"})


def _spec(*classes: type) -> tuple:
    node = SimpleNamespace(describe=lambda: "node 'relu' (ai.onnx::Relu, opset 17)")
    step = SimpleNamespace(kind="node", kernel=SimpleNamespace(node=node), provider=SimpleNamespace(name="gpu"),
                           outputs=["y"], shape_warned=set())
    return step, 0, classes, np.dtype(np.float32), (2,)


@pytest.mark.parametrize("value,classes,says", [
    (np.zeros(2, np.float32), (ndarray,), "a numpy.ndarray, not a gpuarrays.ndarray float32[2]"),
    ([0.0, 0.0], (ndarray,), "a list, not a ndarray float32[2]"),
    (np.zeros(2, np.float32), (DeviceArray,), "a ndarray, not a DeviceArray float32[2]"),
    (np.zeros(2, np.float32), (DeviceArray, ndarray),
     "a numpy.ndarray, not a gpuarrays.DeviceArray or gpuarrays.ndarray float32[2]"),
])
def test_a_wrong_class_is_named_so_that_got_and_wanted_differ(value, classes, says):
    with pytest.raises(KernelError) as info:
        check_output(value, _spec(*classes))
    message = str(info.value)
    assert message.startswith("node 'relu' (ai.onnx::Relu, opset 17) on provider 'gpu' returned output 0 'y'")
    assert says in message, message
