"""Elementwise ops on 0-d tensors (shape arithmetic of exported transformers) against onnxruntime:
kernels that write in place with ``out=`` must not choke on the numpy scalars 0-d operands give."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.single_node_oracle import assert_matches_oracle

BINARY = ["Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "Greater", "LessOrEqual",
          "GreaterOrEqual", "Max", "Min", "Sum", "Mean"]
PAIRS = [(7, 2), (-7, 2), (7, -3), (9, 3)]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("op_type", BINARY)
def test_binary_on_0d(op_type, dtype):
    attrs = {"fmod": 1} if op_type == "Mod" and np.dtype(dtype).kind == "f" else {}
    for a, b in PAIRS:
        if op_type == "Pow" and b < 0 and np.dtype(dtype).kind == "i":
            continue  # a negative integer exponent is undefined
        feeds = {"a": np.array(a, dtype), "b": np.array(b, dtype)}
        assert_matches_oracle(op_type, feeds, **attrs)


def test_div_0d_by_1d_and_large_int64():
    assert_matches_oracle("Div", {"a": np.array(-9, np.int64), "b": np.array([2, -4], np.int64)})
    assert_matches_oracle("Div", {"a": np.array(-(2**60) - 3, np.int64), "b": np.array(7, np.int64)})


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op_type", ["Sigmoid", "HardSigmoid", "HardSwish", "Relu", "Tanh", "Elu", "Softplus",
                                     "LeakyRelu", "Gelu"])
def test_activation_on_0d(op_type, dtype):
    for x in (-1.5, 0.25, 3.0):
        assert_matches_oracle(op_type, {"x": np.array(x, dtype)}, rtol=1e-3, atol=1e-4)
