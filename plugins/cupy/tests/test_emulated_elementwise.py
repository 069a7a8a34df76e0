"""Host emulation (NOT a GPU test): generated elementwise kernels compiled by g++ and run on numpy
arrays, against onnxruntime. Checks the generated C expressions, broadcasting, strides, the
float16 widening and fused chains with exported intermediates."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from cupy_test_support import assert_close, check_emulated, node_model, onnxruntime_outputs, session

pytestmark = pytest.mark.emulation

F32, F64 = np.float32, np.float64


def _x(rng: np.random.Generator, dtype: type, shape: tuple[int, ...] = (2, 3, 4), low: float = -3,
       high: float = 3) -> np.ndarray:
    values = rng.uniform(low, high, size=shape)
    if np.dtype(dtype).kind == "f":
        ties = [0.5, -0.5, 2.5, -2.5][:values.size]
        values.reshape(-1)[:len(ties)] = ties  # rounding ties
    return values.astype(dtype)


UNARY = [("Relu", {}), ("Abs", {}), ("Neg", {}), ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Sign", {}),
         ("Exp", {}), ("Sin", {}), ("Cos", {}), ("Tan", {}), ("Tanh", {}), ("Atan", {}), ("Sinh", {}),
         ("Cosh", {}), ("Asinh", {}), ("Erf", {}), ("Sigmoid", {}), ("Softplus", {}), ("Softsign", {}),
         ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.3}), ("LeakyRelu", {"alpha": 0.2}),
         ("ThresholdedRelu", {"alpha": 0.4}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
         ("HardSwish", {}), ("Mish", {}), ("Shrink", {"lambd": 0.6, "bias": 0.1}), ("Reciprocal", {})]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op, attrs", UNARY, ids=[u[0] for u in UNARY])
def test_unary(op: str, attrs: dict, dtype: type, emulated: str, rng: np.random.Generator) -> None:
    if op == "Celu" and dtype == F64:
        pytest.skip("ONNX defines Celu for float32 only")
    x = _x(rng, dtype)
    if op == "Reciprocal":
        x[np.abs(x) < 0.1] = 0.25
    check_emulated(node_model(op, {"x": x}, opset=18, **attrs), {"x": x}, emulated)


@pytest.mark.parametrize("op", ["Log", "Sqrt", "Acosh"])
def test_unary_positive_domain(op: str, emulated: str, rng: np.random.Generator) -> None:
    x = _x(rng, F32, low=1.0, high=30.0)
    check_emulated(node_model(op, {"x": x}), {"x": x}, emulated)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset20(approximate: str, emulated: str, rng: np.random.Generator) -> None:
    x = _x(rng, F32)
    check_emulated(node_model("Gelu", {"x": x}, opset=20, approximate=approximate), {"x": x}, emulated)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [F32, F64, np.int32, np.int64, np.uint8])
def test_binary_with_broadcasting(op: str, dtype: type, emulated: str, rng: np.random.Generator) -> None:
    a = (rng.integers(-50, 50, (2, 3, 4)) if np.dtype(dtype).kind != "u" else rng.integers(0, 200, (2, 3, 4)))
    b = rng.integers(1, 9, (3, 1)) * (1 if np.dtype(dtype).kind == "u" else rng.choice([-1, 1], (3, 1)))
    a, b = a.astype(dtype), b.astype(dtype)
    if op == "Sub" and np.dtype(dtype).kind == "u":
        a = a + np.uint8(10)
    check_emulated(node_model(op, {"a": a, "b": b}), {"a": a, "b": b}, emulated)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_mod_signs(fmod: int, dtype: type, emulated: str) -> None:
    a = np.array([-7, -7, 7, 7, 0, -1], dtype=dtype)
    b = np.array([3, -3, 3, -3, 5, 4], dtype=dtype)
    check_emulated(node_model("Mod", {"a": a, "b": b}, fmod=fmod), {"a": a, "b": b}, emulated)


def test_float_mod(emulated: str) -> None:
    a = np.array([-7.5, 7.5, 5.25, -0.0], dtype=F32)
    b = np.array([2.0, -2.0, 0.5, 3.0], dtype=F32)
    check_emulated(node_model("Mod", {"a": a, "b": b}, fmod=1), {"a": a, "b": b}, emulated)


def test_pow_with_integer_exponent(emulated: str, rng: np.random.Generator) -> None:
    a = rng.uniform(0.5, 2.0, (3, 4)).astype(F32)
    e = np.array([0, 1, 2, 3], dtype=np.int64)
    check_emulated(node_model("Pow", {"a": a, "e": e}), {"a": a, "e": e}, emulated)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_broadcasting_three_inputs(op: str, emulated: str, rng: np.random.Generator) -> None:
    feeds = {"a": _x(rng, F32, (2, 1, 4)), "b": _x(rng, F32, (3, 1)), "c": _x(rng, F32, (4,))}
    check_emulated(node_model(op, feeds), feeds, emulated)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op: str, emulated: str, rng: np.random.Generator) -> None:
    a = rng.integers(0, 3, (2, 3)).astype(F32)
    b = rng.integers(0, 3, (3,)).astype(F32)
    check_emulated(node_model(op, {"a": a, "b": b}), {"a": a, "b": b}, emulated)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op: str, emulated: str, rng: np.random.Generator) -> None:
    a, b = rng.random((3, 4)) > 0.5, rng.random((4,)) > 0.5
    check_emulated(node_model(op, {"a": a, "b": b}), {"a": a, "b": b}, emulated)


def test_not_isnan_isinf_where(emulated: str) -> None:
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], dtype=F32)
    check_emulated(node_model("IsNaN", {"x": x}), {"x": x}, emulated)
    check_emulated(node_model("IsInf", {"x": x}, detect_positive=0), {"x": x}, emulated)
    c = np.array([True, False, True, False, False])
    check_emulated(node_model("Not", {"c": c}), {"c": c}, emulated)
    y = np.arange(5, dtype=F32)
    check_emulated(node_model("Where", {"c": c, "x": x, "y": y}), {"c": c, "x": x, "y": y}, emulated)


def test_bitshift_and_bitwise(emulated: str) -> None:
    a = np.array([1, 2, 255, 16], dtype=np.uint8)
    s = np.array([1, 3, 1, 4], dtype=np.uint8)
    check_emulated(node_model("BitShift", {"a": a, "s": s}, direction="LEFT"), {"a": a, "s": s}, emulated)
    check_emulated(node_model("BitShift", {"a": a, "s": s}, direction="RIGHT"), {"a": a, "s": s}, emulated)
    i = np.array([5, -3, 12], dtype=np.int32)
    j = np.array([3, 6, -1], dtype=np.int32)
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        check_emulated(node_model(op, {"i": i, "j": j}, opset=18), {"i": i, "j": j}, emulated)


def test_clip_with_bound_inputs_and_omitted_min(emulated: str, rng: np.random.Generator) -> None:
    x = _x(rng, F32)
    hi = np.array(1.5, dtype=F32)
    model = node_model("Clip", {"x": x}, initializers={"hi": hi}, input_names=["x", "", "hi"], opset=13)
    check_emulated(model, {"x": x}, emulated)
    check_emulated(node_model("Clip", {"x": x}, opset=6, min=-0.5, max=0.5), {"x": x}, emulated)


def test_prelu_slope_broadcasts(emulated: str, rng: np.random.Generator) -> None:
    x, slope = _x(rng, F32, (2, 3, 4)), rng.uniform(0, 1, (3, 1)).astype(F32)
    check_emulated(node_model("PRelu", {"x": x, "s": slope}), {"x": x, "s": slope}, emulated)


def test_float16_nodes_compute_widened(emulated: str, rng: np.random.Generator) -> None:
    x, b = _x(rng, np.float16), _x(rng, np.float16, (4,))
    check_emulated(node_model("Add", {"x": x, "b": b}), {"x": x, "b": b}, emulated, rtol=1e-3, atol=1e-3)
    check_emulated(node_model("Sigmoid", {"x": x}), {"x": x}, emulated, rtol=1e-3, atol=1e-3)


def _chain_model() -> onnx.ModelProto:
    """t = a * s (shape [1, 4], exported), u = Transpose(x) (non-contiguous input of the chain),
    y = Relu(t + u) (shape [3, 4]); the chain {Mul, Add, Relu} is fused by the provider."""
    nodes = [helper.make_node("Transpose", ["x"], ["u"], perm=[1, 0]),
             helper.make_node("Mul", ["a", "s"], ["t"]),
             helper.make_node("Add", ["t", "u"], ["v"]),
             helper.make_node("Relu", ["v"], ["y"])]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", f, [4, 3]),
                                           helper.make_tensor_value_info("a", f, [1, 4]),
                                           helper.make_tensor_value_info("s", f, [1, 4])],
                              [helper.make_tensor_value_info("y", f, [3, 4]),
                               helper.make_tensor_value_info("t", f, [1, 4])])
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def test_fused_chain_exports_a_smaller_intermediate(emulated: str, rng: np.random.Generator) -> None:
    model = _chain_model()
    feeds = {"x": _x(rng, F32, (4, 3)), "a": _x(rng, F32, (1, 4)), "s": _x(rng, F32, (1, 4))}
    sess = session(model, emulated)
    groups = {a.node_name: a for a in sess.get_node_assignments()}
    assert len(groups) == 4 and len(sess.engine.groups) == 2  # Transpose alone, one fused group of three
    assert_close(sess.run(None, feeds), onnxruntime_outputs(model, feeds))


def test_strided_path_reads_transposed_views(emulated: str, rng: np.random.Generator) -> None:
    # a non-contiguous input (a transposed view) must go through the strided kernel correctly
    x = _x(rng, F32, (4, 3))
    model = node_model("Relu", {"x": x})
    sess = session(model, emulated)
    step = next(s for s in sess.engine.plan.steps if s.kind == "node")
    backend = sess.engine.providers[0].backend
    view = backend.to_device(x).T  # a non-contiguous device view
    assert not view.flags.c_contiguous
    got = backend.to_host(step.kernel.compute(view))
    np.testing.assert_array_equal(got, np.maximum(x.T, 0))
