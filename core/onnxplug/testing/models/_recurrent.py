"""Pieces shared by the LSTM and GRU models: torch-style weights and zero initial states."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from onnxplug.testing.models._builder import GraphBuilder


def rnn_weights(
    b: GraphBuilder,
    param: str,
    gates: int,
    directions: int,
    input_size: int,
    hidden: int,
) -> tuple[str, str, str]:
    """W [D, gates*H, I], R [D, gates*H, H], B [D, 2*gates*H] drawn U(+-1/sqrt(H)) like torch."""
    bound = 1.0 / np.sqrt(hidden)
    w = b.uniform((directions, gates * hidden, input_size), -bound, bound)
    r = b.uniform((directions, gates * hidden, hidden), -bound, bound)
    bias = b.uniform((directions, 2 * gates * hidden), -bound, bound)
    return (
        b.initializer(f"{param}.W", w),
        b.initializer(f"{param}.R", r),
        b.initializer(f"{param}.B", bias),
    )


def zero_state(b: GraphBuilder, x: str, scope: str, directions: int, hidden: int) -> str:
    """Zeros [D, batch, H] with batch read from x ([seq, batch, ...]) at run time.

    This is how the exporter materialises h0/c0 when the module is called without them.
    """
    batch = b.shape_dim(x, scope, 1)
    shape = b.node(
        "Concat",
        [b.int64s(scope, [directions]), batch, b.int64s(scope, [hidden])],
        scope,
        axis=0,
    )
    zero = np.zeros((1,), dtype=np.float32)
    return b.node("ConstantOfShape", [shape], scope, value=numpy_helper.from_array(zero))
