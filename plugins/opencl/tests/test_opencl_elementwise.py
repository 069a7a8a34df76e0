"""Generated elementwise kernels and fused chains against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_helpers import assert_close, helper, make_model, run_both

UNARY = ["Abs", "Neg", "Exp", "Log", "Sqrt", "Sigmoid", "Tanh", "Relu", "Erf", "Floor", "Ceil", "Round",
         "Reciprocal", "Softsign", "Softplus", "Sin", "Cos", "Sign", "HardSwish"]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ()), ((1, 3, 1, 2), (2, 1, 7, 1))]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op, rng):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    if op in ("Log", "Sqrt"):
        x = np.abs(x) + 0.1
    got, want, _ = run_both(make_model([helper.make_node(op, ["x"], ["y"])], {"x": x}, ["y"]), {"x": x})
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_with_broadcasting(op, shapes, rng):
    if op == "PRelu" and len(shapes[1]) > len(shapes[0]):
        pytest.skip("PRelu broadcasts the slope to the input only")
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    if op == "Pow":
        a = np.abs(a) + 0.5
    got, want, _ = run_both(make_model([helper.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b}, ["y"]),
                            {"a": a, "b": b})
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int8])
def test_integer_arithmetic_and_comparisons(dtype, rng):
    a = rng.integers(-20 if dtype != np.uint8 else 0, 20, (4, 6)).astype(dtype)
    b = (rng.integers(1, 7, (6,))).astype(dtype)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["a", "b"], ["p"]),
             helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Greater", ["a", "b"], ["g"]),
             helper.make_node("Mod", ["a", "b"], ["m"])]
    got, want, _ = run_both(make_model(nodes, {"a": a, "b": b}, ["s", "p", "q", "g", "m"]), {"a": a, "b": b})
    assert_close(got, want, rtol=0, atol=0)


def test_where_cast_and_logic(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4,)).astype(np.float32)
    nodes = [helper.make_node("Less", ["x", "y"], ["c"]), helper.make_node("Not", ["c"], ["nc"]),
             helper.make_node("Where", ["nc", "x", "y"], ["w"]), helper.make_node("Cast", ["w"], ["i"], to=7),
             helper.make_node("Cast", ["c"], ["f"], to=1)]
    got, want, _ = run_both(make_model(nodes, {"x": x * 10, "y": y * 10}, ["w", "i", "f"]), {"x": x * 10, "y": y * 10})
    assert_close(got, want, rtol=0, atol=0)


def test_fused_chain_is_one_kernel_and_matches(rng):
    x = rng.standard_normal((2, 8, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "b"], ["t1"]), helper.make_node("Sigmoid", ["t1"], ["t2"]),
             helper.make_node("Mul", ["t1", "t2"], ["t3"]), helper.make_node("Tanh", ["t3"], ["y"])]
    got, want, session = run_both(make_model(nodes, {"x": x, "b": b}, ["y"]), {"x": x, "b": b})
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    groups = session.engine.groups
    assert len(groups) == 1 and groups[0].fused and len(groups[0].nodes) == 4


def test_fused_chain_exporting_a_smaller_intermediate(rng):
    """An exported value narrower than the chain's space makes the chain fall back to node by node."""
    a = rng.standard_normal((1, 4)).astype(np.float32)
    b = rng.standard_normal((1, 4)).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Add", ["ab", "x"], ["y"])]
    got, want, session = run_both(make_model(nodes, {"a": a, "b": b, "x": x}, ["ab", "y"]),
                                  {"a": a, "b": b, "x": x})
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert any(g.fused for g in session.engine.groups)


def test_clip_with_optional_bounds(rng):
    x = rng.standard_normal((4, 4)).astype(np.float32) * 3
    lo = np.array(-1.0, np.float32)
    nodes = [helper.make_node("Clip", ["x", "lo", ""], ["y"]), helper.make_node("Clip", ["x", "", "lo"], ["z"])]
    got, want, _ = run_both(make_model(nodes, {"x": x, "lo": lo}, ["y", "z"]), {"x": x, "lo": lo})
    assert_close(got, want, rtol=0, atol=0)


def test_fuse_option_off_runs_node_by_node(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    nodes = [helper.make_node("Exp", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
             helper.make_node("Abs", ["b"], ["y"])]
    got, want, session = run_both(make_model(nodes, {"x": x}, ["y"]), {"x": x}, options={"fuse": False})
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert len(session.engine.groups) == 3 and not any(g.fused for g in session.engine.groups)
