"""A small conv model whose middle runs through an If chosen by the data.

cond = ReduceMean(input) > 0 over the whole batch, so one branch serves the whole batch:
- then_branch: residual conv block, Relu(Conv3x3(stem)) + stem;
- else_branch: gated 1x1 conv, Sigmoid(Conv1x1(stem)) * stem, then a channel MatMul mix.
Both branches read `stem` and their weights from the outer graph (implicit inputs).

sample_inputs: an even `seed` shifts the input by +0.5 (then_branch), an odd one by -0.5
(else_branch); the shift dwarfs the noise in the mean, so the branch depends on the seed only.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxplug.testing.models._builder import BATCH_DIM, GraphBuilder, float_input

IMAGE_SHAPE = (3, 32, 32)
CHANNELS = 16
NUM_CLASSES = 10
INPUT_SHIFT = 0.5
BRANCH_SHAPE = [BATCH_DIM, CHANNELS, IMAGE_SHAPE[1], IMAGE_SHAPE[2]]


def _then_branch(b: GraphBuilder, stem: str) -> onnx.GraphProto:
    """Residual 3x3 conv block over the outer `stem`."""
    g = b.subgraph_builder()
    y = g.conv(stem, "/then/conv", "then.conv", CHANNELS, CHANNELS, 3, bias=True)
    y = g.node("Relu", [y], "/then")
    g.node("Add", [y, stem], "/then", output="then_out")
    return g.make_graph("then_branch", [], [float_input("then_out", BRANCH_SHAPE)])


def _else_branch(b: GraphBuilder, stem: str) -> onnx.GraphProto:
    """Sigmoid-gated 1x1 conv over the outer `stem`, then a channel-mixing MatMul."""
    g = b.subgraph_builder()
    gate = g.conv(stem, "/else/gate", "else.gate", CHANNELS, CHANNELS, 1, bias=True)
    gate = g.node("Sigmoid", [gate], "/else")
    gated = g.node("Mul", [gate, stem], "/else")
    channels_last = g.node("Transpose", [gated], "/else/mix", perm=[0, 2, 3, 1])
    mix_weight = g.normal((CHANNELS, CHANNELS), 1.0 / np.sqrt(CHANNELS))
    mix = g.initializer("else.mix.weight_T", mix_weight)
    mixed = g.node("MatMul", [channels_last, mix], "/else/mix")
    g.node("Transpose", [mixed], "/else/mix", perm=[0, 3, 1, 2], output="else_out")
    return g.make_graph("else_branch", [], [float_input("else_out", BRANCH_SHAPE)])


def build(seed: int = 0) -> onnx.ModelProto:
    """Build stem conv -> If(mean(input) > 0) -> pool -> Gemm classifier."""
    b = GraphBuilder(np.random.default_rng(seed))
    stem = b.conv("input", "/stem", "stem", IMAGE_SHAPE[0], CHANNELS, 3, bias=True, input_rms=1.0)
    stem = b.node("Relu", [stem], "/stem")
    mean = b.node("ReduceMean", ["input"], "/condition", keepdims=0)
    cond = b.node("Greater", [mean, b.scalar("/condition", 0.0)], "/condition")
    branch = b.node(
        "If", [cond], "/if",
        then_branch=_then_branch(b, stem), else_branch=_else_branch(b, stem),
    )
    pooled = b.node("GlobalAveragePool", [branch], "/pool")
    flat = b.node("Flatten", [pooled], "/pool", axis=1)
    b.gemm_classifier(flat, "/fc", "fc", CHANNELS, NUM_CLASSES)
    return b.make_model(
        "if_model",
        [float_input("input", [BATCH_DIM, *IMAGE_SHAPE])],
        [float_input("output", [BATCH_DIM, NUM_CLASSES])],
    )


def takes_then_branch(seed: int) -> bool:
    """Whether sample_inputs(..., seed=seed) drives the If into then_branch."""
    return seed % 2 == 0


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Normal images shifted by +-INPUT_SHIFT so the branch is chosen by seed parity."""
    rng = np.random.default_rng(seed)
    shift = INPUT_SHIFT if takes_then_branch(seed) else -INPUT_SHIFT
    images = rng.standard_normal((batch, *IMAGE_SHAPE)) + shift
    return {"input": images.astype(np.float32)}
