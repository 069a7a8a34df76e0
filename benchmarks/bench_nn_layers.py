"""Latency of the numpy provider's Conv / pooling / recurrent kernels against onnxruntime on one-node
models shaped like ResNet-18, MobileNetV2, the bi-LSTM and the GRU of the model suite.

    python benchmarks/bench_nn_layers.py [--threads 2] [--only conv]

Each model is a single node with its weights as initializers, so the ratio is kernel against kernel
(plus each runtime's per-run overhead). Prints a Markdown table and the geomean ratio.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness import geomean, interleaved, markdown_table, onnxplug_runner, onnxruntime_runner

# name, (cin, cout, kernel, stride, pad, input hw, group)
CONV_LAYERS = [
    ("resnet conv1 7x7/2", (3, 64, 7, 2, 3, 224, 1)),
    ("resnet layer1 3x3", (64, 64, 3, 1, 1, 56, 1)),
    ("resnet layer2 3x3/2", (64, 128, 3, 2, 1, 56, 1)),
    ("resnet layer2 3x3", (128, 128, 3, 1, 1, 28, 1)),
    ("resnet downsample 1x1/2", (64, 128, 1, 2, 0, 56, 1)),
    ("resnet layer3 3x3", (256, 256, 3, 1, 1, 14, 1)),
    ("resnet layer4 3x3", (512, 512, 3, 1, 1, 7, 1)),
    ("mobilenet dw 3x3/2 112", (96, 96, 3, 2, 1, 112, 96)),
    ("mobilenet dw 3x3 56", (144, 144, 3, 1, 1, 56, 144)),
    ("mobilenet dw 3x3 14", (384, 384, 3, 1, 1, 14, 384)),
    ("mobilenet pw 1x1 56", (144, 24, 1, 1, 0, 56, 1)),
]


def _model(node: onnx.NodeProto, inputs: list[onnx.ValueInfoProto], inits: dict[str, np.ndarray],
           n_out: int = 1) -> onnx.ModelProto:
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output[:n_out]]
    graph = helper.make_graph([node], "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def conv_case(cin, cout, k, s, p, hw, group, batch, rng):
    w = (rng.standard_normal((cout, cin // group, k, k)) * 0.1).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4,
                            group=group)
    x = rng.standard_normal((batch, cin, hw, hw)).astype(np.float32)
    return _model(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], {"w": w, "b": b}), {"x": x}


def pool_cases(batch, rng):
    x = rng.standard_normal((batch, 64, 112, 112)).astype(np.float32)
    vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    yield "resnet maxpool 3x3/2", _model(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                                          strides=[2, 2], pads=[1] * 4), vi, {}), {"x": x}
    yield "avgpool 3x3/2", _model(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                                   strides=[2, 2], pads=[1] * 4), vi, {}), {"x": x}
    scale = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    inits = {"s": scale, "b": scale - 1, "m": scale * 0.1, "v": scale}
    yield "batchnorm 64x112x112", _model(helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"]),
                                         vi, inits), {"x": x}


def rnn_cases(batch, rng):
    for op, gates, bidir in (("LSTM", 4, True), ("GRU", 3, False)):
        d = 2 if bidir else 1
        x = rng.standard_normal((32, batch, 64)).astype(np.float32)
        inits = {"w": (rng.standard_normal((d, gates * 128, 64)) * 0.1).astype(np.float32),
                 "r": (rng.standard_normal((d, gates * 128, 128)) * 0.1).astype(np.float32),
                 "b": (rng.standard_normal((d, 2 * gates * 128)) * 0.1).astype(np.float32)}
        attrs = dict(hidden_size=128, direction="bidirectional" if bidir else "forward")
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        node = helper.make_node(op, ["x", "w", "r", "b"], ["y"], **attrs)
        vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
        yield f"{op} seq32 h128{' bidir' if bidir else ''}", _model(node, vi, inits), {"x": x}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--only", choices=["conv", "pool", "rnn"], default=None)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--block-runs", type=int, default=10)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows, ratios = [], []
    for batch in args.batch:
        cases = []
        if args.only in (None, "conv"):
            cases += [(name, *conv_case(*shape, batch, rng)) for name, shape in CONV_LAYERS]
        if args.only in (None, "pool"):
            cases += list(pool_cases(batch, rng))
        if args.only in (None, "rnn"):
            cases += list(rnn_cases(batch, rng))
        for name, model, feeds in cases:
            engines = {"onnxruntime": onnxruntime_runner(model, args.threads),
                       "numpy": onnxplug_runner(model, ["numpy"], args.threads)}
            t = interleaved(engines, feeds, blocks=args.blocks, block_runs=args.block_runs)
            ratio = t["numpy"].median_ms / t["onnxruntime"].median_ms
            ratios.append(ratio)
            rows.append([name, batch, f"{t['onnxruntime'].median_ms:.3f}", f"{t['numpy'].median_ms:.3f}",
                         f"{ratio:.2f}"])
            print(f"{name} batch {batch}: ratio {ratio:.2f}", file=sys.stderr, flush=True)
    print(markdown_table(["layer", "batch", "onnxruntime ms (median)", "numpy ms (median)", "ratio"], rows))
    print(f"\ngeomean ratio: {geomean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
