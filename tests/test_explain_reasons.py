"""The numba and opencl providers' reasons for the nodes they leave name the cause: the node where
type inference stopped, the element type, the device's missing extension."""

from __future__ import annotations

import numpy as np
import onnxplug as ort
import onnxruntime
import pytest
from onnx import TensorProto, helper

OPSET = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]


def _options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the model's nodes as written
    return options


def _needs(provider: str) -> None:
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not installed or not available here")


def _declines(model: bytes, provider: str) -> dict[str, tuple[str, str]]:
    sess = ort.InferenceSession(model, _options(), providers=[provider])
    found = {}
    for a in sess.get_node_assignments():
        if a.provider != provider:
            assert [d.provider for d in a.declined] == [provider], a
            found[a.node_name] = (a.declined[0].kind, a.declined[0].reason)
    return found


def _untyped_chain() -> bytes:
    """com.microsoft::Inverse (no type inference here, none filled in) feeds Transpose then Add: their
    inputs have no element type."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Inverse", ["x"], ["s"], name="inv", domain="com.microsoft"),
         helper.make_node("Transpose", ["s"], ["t"], name="transpose", perm=[0, 2, 1]),
         helper.make_node("Add", ["t", "t"], ["y"], name="add")],
        "g", [helper.make_tensor_value_info("x", f, [1, 3, 3])],
        [helper.make_tensor_value_info("y", f, None)])
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8).SerializeToString()


@pytest.mark.parametrize("provider", ["numba", "opencl"])
def test_an_untyped_input_names_where_type_inference_stopped(provider):
    _needs(provider)
    found = _declines(_untyped_chain(), provider)
    assert found["inv"][0] == "op"
    for node, value, via in (("transpose", "s", ""), ("add", "t", " (via 's')")):
        kind, reason = found[node]
        assert kind == "dtype", reason
        assert reason == f"the element type of {value!r} is unknown: type inference gives none for the output " \
                         f"of node 'inv' (com.microsoft::Inverse, opset 1){via}"
    # the fallback computes what onnxruntime computes
    x = np.random.default_rng(0).standard_normal((1, 3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    model = _untyped_chain()
    got = ort.InferenceSession(model, _options(), providers=[provider]).run(None, {"x": x})[0]
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_numba_names_the_element_type_it_lacks():
    _needs("numba")
    i64 = TensorProto.INT64
    graph = helper.make_graph(
        [helper.make_node("ReduceMin", ["x"], ["y"], name="rmin", keepdims=0),
         helper.make_node("Sign", ["y"], ["z"], name="sign")],
        "g", [helper.make_tensor_value_info("x", i64, [2, 3])], [helper.make_tensor_value_info("z", i64, None)])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "numba")
    assert found["rmin"] == ("dtype", "element type int64 is not one of float32, float64")
    assert found["sign"] == ("dtype", "no generated Sign loop for input types (int64)")


def test_numba_names_mixed_element_types():
    _needs("numba")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["c"], name="mmi"),
         helper.make_node("Cast", ["c"], ["cf"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("MatMul", ["cf", "w"], ["y"], name="mm")],
        "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 3]),
              helper.make_tensor_value_info("b", TensorProto.UINT8, [3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("w", TensorProto.DOUBLE, [2, 2], [1.0, 0.0, 0.0, 1.0])])
    # a MatMul of float and double is invalid ONNX, which the loader leaves to the providers' checks
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "numba")
    assert found["mm"][0] == "dtype" and "mixed element types: 'cf' is float32, 'w' is float64" in found["mm"][1]


def test_opencl_names_a_string_tensor():
    _needs("opencl")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["words", "idx"], ["picked"], name="gather", axis=0)],
        "g", [helper.make_tensor_value_info("words", TensorProto.STRING, [3]),
              helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("picked", TensorProto.STRING, None)])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "opencl")
    assert found["gather"] == ("dtype", "'words' is object, which OpenCL C kernels have no type for")


def test_numba_names_the_loop_body_node_it_cannot_compile():
    _needs("numba")
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Softmax", ["x_in"], ["x_out"], name="body_softmax", axis=-1),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", f, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", f, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body, name="the_loop")],
        "g", [helper.make_tensor_value_info("x", f, [2, 3])], [helper.make_tensor_value_info("y", f, [2, 3])],
        [helper.make_tensor("n", TensorProto.INT64, [], [2]), helper.make_tensor("c", TensorProto.BOOL, [], [True])])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "numba")
    assert found["the_loop"] == \
        ("op", "body node 'body_softmax' (Softmax) has an op the compiled loop does not generate")
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    got = ort.InferenceSession(model, _options(), providers=["numba"]).run(None, {"x": x})[0]
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_opencl_names_what_its_kernels_do_not_compute():
    _needs("opencl")
    i64, f = TensorProto.INT64, TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Dropout", ["x"], ["dx", "mask"], name="dropout_with_mask"),
         helper.make_node("ReduceMean", ["n"], ["rn"], name="int_mean", keepdims=0)],
        "g", [helper.make_tensor_value_info("n", i64, [2, 3]), helper.make_tensor_value_info("x", f, [2, 3])],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in ("dx", "mask", "rn")])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "opencl")
    assert found["dropout_with_mask"] == ("attribute", "its mask output is not computed (inference only)")
    kind, reason = found["int_mean"]
    assert kind == "dtype" and reason.startswith("'n' is int64; the ReduceMean kernel computes in "), reason


def test_numba_names_the_pool_attribute_it_does_not_compute():
    _needs("numba")
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool_with_indices", kernel_shape=[2, 2])],
        "g", [helper.make_tensor_value_info("x", f, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", f, None), helper.make_tensor_value_info("idx", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "numba")
    assert found["pool_with_indices"] == ("attribute", "an Indices output is not computed")


def test_numba_names_the_rnn_and_cast_attributes_it_does_not_compute():
    _needs("numba")
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("GRU", ["x", "w", "r"], ["y"], name="clipped_gru", hidden_size=2, clip=1.0),
         helper.make_node("Cast", ["x"], ["s"], name="to_string", to=TensorProto.STRING)],
        "g", [helper.make_tensor_value_info("x", f, [1, 1, 3])],
        [helper.make_tensor_value_info("y", f, None), helper.make_tensor_value_info("s", TensorProto.STRING, None)],
        [helper.make_tensor("w", f, [1, 6, 3], [0.1] * 18), helper.make_tensor("r", f, [1, 6, 2], [0.1] * 12)])
    model = helper.make_model(graph, opset_imports=OPSET[:1], ir_version=8).SerializeToString()
    found = _declines(model, "numba")
    assert found["clipped_gru"] == ("attribute", "clip or input_forget is not computed")
    assert found["to_string"] == ("dtype", "a cast to tensor(string)")
