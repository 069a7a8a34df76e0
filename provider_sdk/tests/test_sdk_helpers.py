"""Helpers against independent oracles: numpy broadcasting, onnxruntime's outputs, onnx shape inference."""

from __future__ import annotations

import dataclasses
import itertools

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from sdk_support import make_model, run_onnxruntime

from onnxplug.ir import ValueInfo, ValueType, load_model
from onnxplug_sdk import (
    GraphView,
    attribute_defaults,
    broadcast_shapes,
    conv_output_shape,
    errors,
    infer_output_types,
    onnx_type_name,
    pool_output_shape,
    resolve_pads,
)
from onnxplug_sdk.helpers import ShapeError

# --- broadcast_shapes ---------------------------------------------------------------------------------


def test_broadcast_shapes_matches_numpy_on_random_shapes() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        shapes = [tuple(int(d) for d in rng.choice([1, 1, 2, 3], size=rng.integers(0, 4)))
                  for _ in range(rng.integers(1, 4))]
        try:
            want = np.broadcast_shapes(*shapes)
        except ValueError:
            with pytest.raises(ShapeError, match="do not broadcast"):
                broadcast_shapes(*shapes)
        else:
            assert broadcast_shapes(*shapes) == want, shapes


@pytest.mark.parametrize(("shapes", "want"), [
    ((("N", 3), (1, 3)), ("N", 3)),
    ((("N", 1), (5,)), ("N", 5)),
    ((("N",), (4,)), (4,)),  # N must be 4 (or 1) for the model to run
    ((("N",), ("M",)), (None,)),
    ((("N",), ("N",)), ("N",)),
    (((None,), (1,)), (None,)),
    (((None, 2), (3, 1)), (3, 2)),
    ((), ()),
])
def test_broadcast_shapes_with_symbols(shapes: tuple, want: tuple) -> None:
    assert broadcast_shapes(*shapes) == want


def test_broadcast_error_names_the_axis_and_shapes() -> None:
    with pytest.raises(ShapeError, match=r"shapes \[2, 3\], \[4, 3\] do not broadcast: axis -2 has sizes \[2, 4\]"):
        broadcast_shapes((2, 3), (4, 3))


# --- attribute_defaults -------------------------------------------------------------------------------


def _node(op: str, opset: int, domain: str = "", **attrs: object) -> object:
    proto = helper.make_node(op, ["x"], ["y"], name="n", domain=domain, **attrs)
    model = make_model([proto], {"x": [2, 3]}, {"y": ["d0", "d1"]}, opset=opset)
    if domain:
        model.opset_import.append(helper.make_opsetid(domain, 1))
    return load_model(model).graph.nodes[0] if not domain else _custom_node(proto, opset, domain)


def _custom_node(proto: onnx.NodeProto, opset: int, domain: str) -> object:
    from onnxplug.ir import Node
    from onnxplug.ir.graph import Attribute

    attrs = {a.name: Attribute(helper.get_attribute_value(a), a.type) for a in proto.attribute}
    return Node(proto.op_type, list(proto.input), list(proto.output), "n", domain, attrs, opset=1)


def test_defaults_come_from_the_schema_at_the_node_opset() -> None:
    assert attribute_defaults(_node("LeakyRelu", 16)) == {"alpha": pytest.approx(0.01)}
    assert attribute_defaults(_node("LeakyRelu", 16, alpha=0.3)) == {"alpha": pytest.approx(0.3)}
    assert attribute_defaults(_node("Softmax", 11))["axis"] == 1
    assert attribute_defaults(_node("Softmax", 13))["axis"] == -1
    pool = attribute_defaults(_node("MaxPool", 12, kernel_shape=[2]))
    assert pool == {"auto_pad": "NOTSET", "ceil_mode": 0, "storage_order": 0, "kernel_shape": [2]}
    assert attribute_defaults(_node("Gelu", 20)) == {"approximate": "none"}


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_default_axis_is_what_onnxruntime_computes(opset: int) -> None:
    model = make_model([helper.make_node("Softmax", ["x"], ["y"])], {"x": [2, 3, 4]}, {"y": [2, 3, 4]}, opset=opset)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    axis = attribute_defaults(load_model(model).graph.nodes[0])["axis"]
    if opset < 13:  # coerced to 2-D at axis, as the opset-11 definition says
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        want = (np.exp(flat) / np.exp(flat).sum(axis=1, keepdims=True)).reshape(x.shape)
    else:
        want = np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(run_onnxruntime(model, {"x": x})[0], want, rtol=1e-5)


def test_custom_domain_without_schema_keeps_only_node_attributes() -> None:
    assert attribute_defaults(_node("MyOp", 17, domain="com.example", gain=2.0)) == {"gain": 2.0}


def test_unknown_standard_op_is_refused_with_its_name() -> None:
    from onnxplug.ir import Node

    with pytest.raises(errors.UnknownOpError, match="'Relux'.*'ai.onnx' at opset 17"):
        attribute_defaults(Node("Relux", ["x"], ["y"], name="bad", opset=17))


# --- conv and pool shapes against onnxruntime ------------------------------------------------------------

_WINDOWS = [(size, k, s, d) for size, k, s, d in itertools.product([5, 6, 9], [1, 2, 3], [1, 2, 3], [1, 2])
            if (k - 1) * d + 1 <= size]


def _conv_model(size: int, k: int, attrs: dict) -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.random.default_rng(size * 10 + k).standard_normal((2, 1, k, k))
                                     .astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
    return make_model([node], {"x": [1, 1, size, size + 1]}, {"y": ["n", "m", "h", "w"]}, initializers=[weight])


def _onnx_inferred_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output[0]
    return tuple(d.dim_value for d in inferred.type.tensor_type.shape.dim)


def _same_pad_is_negative(size: int, k: int, s: int) -> bool:
    return (-(-size // s) - 1) * s + k < size


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"])
def test_conv_shapes_and_pads_match_onnxruntime(auto_pad: str) -> None:
    rng = np.random.default_rng(1)
    for size, k, s, d in _WINDOWS:
        attrs: dict = {"strides": [s, s], "dilations": [d, d], "auto_pad": auto_pad}
        pads = [int(p) for p in rng.integers(0, k, 4)] if auto_pad == "NOTSET" else None
        if pads is not None:
            attrs["pads"] = pads
        model = _conv_model(size, k, attrs)
        shape = conv_output_shape((1, 1, size, size + 1), (2, 1, k, k), auto_pad, [s, s], [d, d], pads)
        assert shape == _onnx_inferred_shape(model), (size, k, s, d, auto_pad, pads)
        if auto_pad.startswith("SAME") and d > 1:
            continue  # onnxruntime refuses dilations with SAME_* in Conv
        x = rng.standard_normal((1, 1, size, size + 1)).astype(np.float32)
        (got,) = run_onnxruntime(model, {"x": x})
        assert shape == got.shape, (size, k, s, d, auto_pad, pads)
        # The explicit pads resolve_pads gives must compute the very same values as auto_pad does.
        begins, ends = resolve_pads(auto_pad, (size, size + 1), (k, k), [s, s], [d, d], pads)
        explicit = {"strides": [s, s], "dilations": [d, d], "pads": [*begins, *ends]}
        (same,) = run_onnxruntime(_conv_model(size, k, explicit), {"x": x})
        np.testing.assert_array_equal(same, got)


@pytest.mark.parametrize("ceil_mode", [0, 1])
@pytest.mark.parametrize("auto_pad", ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
def test_pool_shapes_match_onnxruntime(ceil_mode: int, auto_pad: str) -> None:
    rng = np.random.default_rng(2)
    checked_with_onnxruntime = 0
    for size, k, s, d in _WINDOWS:
        pads = [int(p) for p in rng.integers(0, k, 2)] if auto_pad == "NOTSET" else None
        attrs: dict = {"kernel_shape": [k], "strides": [s], "dilations": [d], "ceil_mode": ceil_mode,
                       "auto_pad": auto_pad}
        if pads is not None:
            attrs["pads"] = pads
        model = make_model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], {"x": [1, 2, size]}, {"y": ["n", "c", "l"]},
                           opset=12)
        shape = pool_output_shape((1, 2, size), [k], auto_pad, [s], [d], pads, ceil_mode)
        if auto_pad.startswith("SAME"):
            # ONNX says ceil(in / stride); its shape inference adds one more with ceil_mode when
            # stride > window (a window wholly in the padding), so compare only where the pads are real.
            if not (ceil_mode and _same_pad_is_negative(size, (k - 1) * d + 1, s)):
                assert shape == _onnx_inferred_shape(model), (size, k, s, d, auto_pad, ceil_mode)
            if d > 1 or _same_pad_is_negative(size, k, s):
                continue  # onnxruntime ignores dilations under SAME_*, and fails on stride > kernel
        (got,) = run_onnxruntime(model, {"x": rng.standard_normal((1, 2, size)).astype(np.float32)})
        assert shape == got.shape, (size, k, s, d, auto_pad, pads, ceil_mode)
        checked_with_onnxruntime += 1
    assert checked_with_onnxruntime >= 20


def test_symbolic_dims_pass_through_and_bad_attributes_are_named() -> None:
    assert conv_output_shape(("N", 3, "H", 8), (4, 3, 3, 3)) == ("N", 4, None, 6)
    with pytest.raises(ShapeError, match=r"strides \[1\] has 1 entries, expected 2"):
        conv_output_shape((1, 3, 8, 8), (4, 3, 3, 3), strides=[1])
    with pytest.raises(ShapeError, match="auto_pad 'SAME'"):
        resolve_pads("SAME", (8,), (3,))
    with pytest.raises(ShapeError, match="larger than the padded input"):
        pool_output_shape((1, 1, 2), [5])


# --- types --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint16, np.int64, np.bool_,
                                   ml_dtypes.bfloat16])
def test_onnx_type_name_matches_onnxruntime_nodearg_type(dtype: type) -> None:
    import onnxruntime

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], {"x": [1]}, {"y": [1]}, elem_type=elem)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert onnx_type_name(dtype) == session.get_inputs()[0].type == onnx_type_name(elem)


def _inference_model() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.array([0, -1, 4], np.int64), "shape"),
             numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "k"),
             numpy_helper.from_array(np.array([1, 3], np.int64), "starts"),
             numpy_helper.from_array(np.array([4, 7], np.int64), "ends"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "axes")]
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),  # depends on a constant input
        helper.make_node("MatMul", ["r", "w"], ["m"]),
        helper.make_node("Transpose", ["m"], ["t"], perm=[2, 0, 1]),
        helper.make_node("Concat", ["t", "t"], ["c"], axis=1),
        helper.make_node("Conv", ["img", "k"], ["conv"], strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Slice", ["conv", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("ReduceMean", ["sl"], ["red"], axes=[3], keepdims=0),
        helper.make_node("Cast", ["red"], ["cast"], to=TensorProto.DOUBLE),
        helper.make_node("Shape", ["c"], ["shp"]),
        # Identity copies as graph outputs, so the oracle's types of c, cast, shp are inferred, not declared.
        helper.make_node("Identity", ["c"], ["c_out"]),
        helper.make_node("Identity", ["cast"], ["cast_out"]),
        helper.make_node("Identity", ["shp"], ["shp_out"]),
    ]
    graph = helper.make_graph(
        nodes, "infer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, ["batch", 2, 9, 11])],
        [helper.make_tensor_value_info("c_out", TensorProto.FLOAT, ["c0", "c1", "c2"]),
         helper.make_tensor_value_info("cast_out", TensorProto.DOUBLE, ["d0", "d1", "d2"]),
         helper.make_tensor_value_info("shp_out", TensorProto.INT64, [3])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_infer_output_types_matches_onnx_shape_inference_and_onnxruntime() -> None:
    model = _inference_model()
    oracle = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    want = {vi.name: ValueType.from_proto(vi.type) for vi in [*oracle.graph.value_info, *oracle.graph.output]}
    graph = load_model(model).graph
    for node in graph.nodes:
        if node.op_type == "Identity":
            continue
        # Hide the node's own output types, so a fallback to declared types cannot pass for inference.
        hidden = set(node.outputs)
        blind = dataclasses.replace(
            graph, value_info={k: v for k, v in graph.value_info.items() if k not in hidden},
            outputs=[ValueInfo(vi.name) if vi.name in hidden else vi for vi in graph.outputs])
        (got,) = infer_output_types(node, GraphView(blind, blind.nodes))
        assert got == want[node.outputs[0]], node.describe()
    # And the concrete shapes onnxruntime produces agree with the inferred ones.
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((2, 6, 4)).astype(np.float32),
             "img": rng.standard_normal((3, 2, 9, 11)).astype(np.float32)}
    for vi, value in zip(model.graph.output, run_onnxruntime(model, feeds)):
        inferred = want[vi.name.removesuffix("_out")]
        assert inferred.dtype == value.dtype
        assert all(d == s or isinstance(d, str) for d, s in zip(inferred.shape, value.shape))


def test_inconsistent_known_types_raise_naming_the_node() -> None:
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                       {"a": [2, 3], "b": [4, 5]}, {"y": ["i", "j"]})
    proto_graph = model.graph  # the loader's checker would reject the model, so build the IR by hand
    from onnxplug.ir import Graph, Node

    g = Graph("g", [Node("MatMul", ["a", "b"], ["y"], name="mm", opset=17)],
              [ValueInfo(vi.name, ValueType.from_proto(vi.type)) for vi in proto_graph.input], [ValueInfo("y")],
              opsets={"": 17})
    with pytest.raises(ShapeError, match=r"node 'mm' \(ai.onnx::MatMul, opset 17\): shape inference failed"):
        infer_output_types(g.nodes[0], GraphView(g, g.nodes))
    g.inputs[1] = ValueInfo("b")  # one input type unknown: fall back to what is declared (nothing)
    assert infer_output_types(g.nodes[0], GraphView(g, g.nodes)) == [None]


def test_what_single_node_inference_leaves_open_is_filled_from_declared_types() -> None:
    from onnxplug.ir import Graph, Node

    def graph(declared: ValueType | None) -> Graph:
        return Graph("g", [Node("Unsqueeze", ["x", "axes"], ["y"], name="u", opset=17)],
                     [ValueInfo("x", ValueType.tensor(TensorProto.FLOAT, (3,))),
                      ValueInfo("axes", ValueType.tensor(TensorProto.INT64, (1,)))],  # fed: not a constant
                     [ValueInfo("y", declared)], opsets={"": 17})

    bare = graph(None)
    (alone,) = infer_output_types(bare.nodes[0], GraphView(bare, bare.nodes))
    assert alone == ValueType.tensor(TensorProto.FLOAT, None)  # the rank depends on the axes' value
    hinted = graph(ValueType.tensor(TensorProto.FLOAT, ("one", 3)))
    (filled,) = infer_output_types(hinted.nodes[0], GraphView(hinted, hinted.nodes))
    assert filled == ValueType.tensor(TensorProto.FLOAT, ("one", 3))
