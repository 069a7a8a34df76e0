"""onnxruntime as the oracle: run a model with it and compare outputs with a magnitude-scaled tolerance."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
import onnxruntime


def ort_outputs(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    """The outputs onnxruntime computes (CPU, 2 threads)."""
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 2
    sess = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def assert_close(actual: Sequence[Any], expected: Sequence[Any], rtol: float = 1e-3, atol: float = 1e-4) -> None:
    """Same dtypes and shapes, values within rtol and atol scaled by the output's magnitude."""
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype, f"output {i}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"output {i}: shape {a.shape} != {e.shape}"
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol * max(scale, 1.0), err_msg=f"output {i}")
