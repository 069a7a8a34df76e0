"""A small tabular classifier built with onnx.helper, for batch-scoring tests and benchmarks.

features -> Gemm+Relu -> Gemm+Relu -> Gemm -> Softmax ("probabilities", [batch, classes]) and
ArgMax ("label", int64 [batch]); opset 17, a symbolic "batch" dimension, weights from
np.random.default_rng(seed), so ``build`` is deterministic. Each row's outputs depend on that
row alone.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FEATURES = 16
HIDDEN = 64
CLASSES = 3


def build(seed: int = 0, features: int = FEATURES, hidden: int = HIDDEN, classes: int = CLASSES) -> onnx.ModelProto:
    """The classifier with input "features" [batch, features] (float32)."""
    rng = np.random.default_rng(seed)
    sizes = [features, hidden, hidden, classes]
    inits, nodes, x = [], [], "features"
    for i, (cin, cout) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((cin, cout)) / np.sqrt(cin)).astype(np.float32)
        b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"fc{i}.weight"), numpy_helper.from_array(b, f"fc{i}.bias")]
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [f"fc{i}"]))
        x = f"fc{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"]))
            x = f"relu{i}"
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"], axis=-1))
    nodes.append(helper.make_node("ArgMax", [x], ["label"], axis=1, keepdims=0))
    graph = helper.make_graph(
        nodes, "tabular_mlp",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", classes]),
         helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def sample_rows(rows: int, seed: int = 0, features: int = FEATURES) -> np.ndarray:
    """Standard-normal feature rows, float32 [rows, features]."""
    return np.random.default_rng(seed).standard_normal((rows, features)).astype(np.float32)
