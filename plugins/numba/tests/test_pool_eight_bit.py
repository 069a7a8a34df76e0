"""8-bit MaxPool on numba (through float32) against onnxruntime, bit for bit, and its declines."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import node_model, run_numba, run_onnxruntime

CASES = [
    ((1, 16, 32, 32), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ((2, 8, 15, 17), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 4, 31, 31), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ((1, 3, 7, 9), dict(kernel_shape=[3, 2], dilations=[2, 2], pads=[2, 1, 1, 1])),
    ((2, 5, 40), dict(kernel_shape=[4], strides=[3], pads=[3, 2], ceil_mode=1)),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape, attrs", CASES, ids=[str(i) for i in range(len(CASES))])
def test_eight_bit_max_pool_matches_onnxruntime(shape: tuple, attrs: dict, dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(len(shape)).integers(info.min, info.max + 1, size=shape).astype(dtype)
    model = node_model("MaxPool", {"x": x}, opset=13, **attrs)
    got, _ = run_numba(model, {"x": x})  # numba only: a decline would fail here
    expected = run_onnxruntime(model, {"x": x})
    assert got[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got[0], expected[0])


def test_window_of_padding_alone_is_declined() -> None:
    """A pad as wide as the window could leave a window without an input element: not claimed."""
    from onnxplug_numba.ops.op_pool import MaxPool
    from onnxplug_sdk import Decline
    from onnxplug.ir import load_model
    from onnxplug_sdk import GraphView

    x = np.zeros((1, 2, 5, 5), np.uint8)
    model = node_model("MaxPool", {"x": x}, opset=13, kernel_shape=[2, 2], pads=[2, 0, 0, 0])
    graph = load_model(model.SerializeToString()).graph
    found = MaxPool.supports(graph.nodes[0], GraphView(graph, graph.nodes))
    assert isinstance(found, Decline) and "pad" in found.reason
