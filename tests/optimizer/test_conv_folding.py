"""Conv + BatchNormalization / Add / Mul folding."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.optimizer.passes.conv_add_mul_fusion import ConvAddMulFusion
from onnxplug.optimizer.passes.conv_bn_fusion import ConvBatchNormFusion
from tests.optimizer.util import F, assert_equivalent, model, node, op_types, rand, run_passes

X = ("x", F, ["n", 3, 8, 8])
Y = ("y", F, ["n", 4, 8, 8])


def _bn_inits(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rand(4, 3, 3, 3), "b": rand(4, seed=2), "gamma": rng.uniform(0.5, 1.5, 4).astype(np.float32),
            "beta": rand(4, seed=3), "mean": rand(4, seed=4), "var": rng.uniform(0.5, 1.5, 4).astype(np.float32)}


def _conv(with_bias: bool = True):
    return node("Conv", ["x", "w", "b"] if with_bias else ["x", "w"], ["c"], pads=[1, 1, 1, 1])


@pytest.mark.parametrize("with_bias", [True, False])
def test_batchnorm_after_conv_is_folded(with_bias):
    proto = model([_conv(with_bias), node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"],
                                          epsilon=1e-3)], [X], [Y], _bn_inits())
    m, reports = run_passes(proto, ConvBatchNormFusion)
    assert op_types(m) == {"Conv": 1}
    assert reports["ConvBatchNormFusion"].counts == {"fused": 1}
    assert_equivalent(proto, m, {"x": rand(2, 3, 8, 8)})


def test_batchnorm_is_kept_when_conv_output_is_shared_or_stats_are_inputs():
    inits = _bn_inits()
    shared = model([_conv(), node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"]),
                    node("Add", ["bn", "c"], ["y"])], [X], [Y], inits)
    m, _ = run_passes(shared, ConvBatchNormFusion)
    assert op_types(m)["BatchNormalization"] == 1
    del inits["mean"]
    fed = model([_conv(), node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"])],
                [X, ("mean", F, [4])], [Y], inits)
    m, _ = run_passes(fed, ConvBatchNormFusion)
    assert op_types(m)["BatchNormalization"] == 1


def test_weight_shared_by_two_convs_is_not_modified_in_place():
    inits = _bn_inits()
    proto = model([_conv(), node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"]),
                   node("Conv", ["x", "w", "b"], ["c2"], pads=[1, 1, 1, 1]), node("Add", ["bn", "c2"], ["y"])],
                  [X], [Y], inits)
    m, _ = run_passes(proto, ConvBatchNormFusion)
    np.testing.assert_array_equal(m.graph.initializers["w"], inits["w"])
    assert_equivalent(proto, m, {"x": rand(1, 3, 8, 8)})


@pytest.mark.parametrize("op, shape", [("Add", (4, 1, 1)), ("Mul", (1, 4, 1, 1)), ("Mul", ()), ("Add", (1,))])
def test_per_channel_add_and_mul_are_folded(op, shape):
    c = (rand(*shape, seed=5) if shape else np.array(1.7, np.float32))
    proto = model([_conv(), node(op, ["c", "k"] if op == "Add" else ["k", "c"], ["y"])], [X], [Y],
                  {**_bn_inits(), "k": c})
    m, _ = run_passes(proto, ConvAddMulFusion)
    assert op_types(m) == {"Conv": 1}
    assert_equivalent(proto, m, {"x": rand(2, 3, 8, 8)})


@pytest.mark.parametrize("shape", [(1, 1, 8, 8), (8,)])
def test_add_that_varies_over_space_is_not_folded(shape):
    proto = model([_conv(), node("Add", ["c", "k"], ["y"])], [X], [Y], {**_bn_inits(), "k": rand(*shape)})
    m, _ = run_passes(proto, ConvAddMulFusion)
    assert op_types(m) == {"Conv": 1, "Add": 1}
