"""Single-thread float32 GEMM rates: onnxruntime's MatMul (MLAS) against numpy's BLAS.

    python benchmarks/bench_gemm.py

The numpy provider's MatMul, Gemm and Conv run on numpy's BLAS, so its rate per thread against
MLAS's bounds the provider's ratio on the convolution and transformer models. Shapes: a square
product and the im2col products of three ResNet-18 layers at batch 1 (stem, layer1, layer4).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import threadpoolctl
from onnx import TensorProto, helper

from harness import interleaved, machine_description, markdown_table

SHAPES = [(1024, 1024, 1024), (64, 147, 12544), (64, 576, 3136), (512, 4608, 49)]


def _matmul_model(m: int, k: int, n: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [k, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> int:
    import onnxruntime

    rng = np.random.default_rng(0)
    rows = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 1
        sess = onnxruntime.InferenceSession(_matmul_model(m, k, n).SerializeToString(), so,
                                            providers=["CPUExecutionProvider"])
        out = np.empty((m, n), np.float32)
        with threadpoolctl.threadpool_limits(1, user_api="blas"):
            t = interleaved({"mlas": lambda feeds: sess.run(None, feeds),
                             "blas": lambda feeds: np.matmul(feeds["a"], feeds["b"], out=out)},
                            {"a": a, "b": b}, blocks=7, block_runs=5)
        gflop = 2 * m * k * n / 1e6  # per millisecond
        mlas, blas = gflop / t["mlas"].median_ms, gflop / t["blas"].median_ms
        rows.append([f"{m} x {k} x {n}", f"{mlas:.0f}", f"{blas:.0f}", f"{blas / mlas:.2f}"])
    print(f"machine: {machine_description()}")
    print(markdown_table(["M x K x N", "onnxruntime GFLOP/s", "numpy BLAS GFLOP/s", "numpy / onnxruntime"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
