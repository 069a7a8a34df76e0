"""The onnx.reference adapter (the numpy provider's last resort), the op table, and kernel errors."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxplug
from onnxplug.ir import load_model
from onnxplug.kernel import KernelContext
from onnxplug.providers.numpy import op_table
from onnxplug.providers.numpy.provider import NumpyProvider
from onnxplug.providers.numpy.reference_adapter import (CONTEXT_FUNCTION, FUNCTION, IMPLEMENTED, ReferenceKernel,
                                                         reference_kernel, reference_support)
from tests.numpy_provider.single_node_oracle import assert_same, node_model

RNG = np.random.default_rng(2)


def adapter_kernel(model: onnx.ModelProto):
    """The reference-adapter kernel of the model's only node, bypassing any native kernel."""
    node = load_model(model).graph.nodes[0]
    cls = reference_kernel(node)
    assert cls is not None and issubclass(cls, ReferenceKernel)
    return cls(node, KernelContext(provider=NumpyProvider()))


@pytest.mark.parametrize("op,kind", [("TfIdfVectorizer", IMPLEMENTED), ("Mish", FUNCTION), ("Gelu", CONTEXT_FUNCTION)])
def test_support_kinds(op, kind):
    assert reference_support("", op, 20) == kind


def test_unknown_or_unimplemented_ops_have_no_adapter():
    assert reference_support("", "NoSuchOp", 20) is None
    assert reference_support("com.example", "Relu", 1) is None
    assert reference_support("ai.onnx.preview.training", "Gradient", 1) is None


@pytest.mark.parametrize("op,attrs", [("Mish", {}), ("Gelu", {"approximate": "tanh"}), ("HardSwish", {})])
def test_function_bodies_match_the_reference_evaluator(op, attrs):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    model = node_model(op, {"x": x}, opset=20, **attrs)
    kernel = adapter_kernel(model)
    (ours,) = kernel.compute(x)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert_same(ours, expected, where=op)
    # a second input type builds (and caches) another context-dependent body
    (ours64,) = kernel.compute(x.astype(np.float64))
    assert ours64.dtype == np.float64


def test_rare_op_runs_through_a_session_and_is_assigned_to_numpy():
    x = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32)
    model = node_model("TfIdfVectorizer", {"x": x}, opset=9, mode="TF", min_gram_length=2, max_gram_length=2,
                       max_skip_count=0, ngram_counts=[0, 0], ngram_indexes=[0, 1],
                       pool_int64s=[7, 8, 6, 7])
    options = onnxplug.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = onnxplug.InferenceSession(model.SerializeToString(), options, providers=["numpy"])
    assert [a.provider for a in session.get_node_assignments()] == ["numpy"]
    (ours,) = session.run(None, {"x": x})
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert_same(ours, expected, where="TfIdfVectorizer")


def test_subgraph_op_reads_outer_scope_through_scope():
    # If has a native kernel; the adapter must still serve subgraph ops (outer-scope reads via scope=)
    then = helper.make_graph([helper.make_node("Add", ["x", "outer"], ["r"])], "then", [],
                             [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Sub", ["x", "outer"], ["r2"])], "else", [],
                              [helper.make_tensor_value_info("r2", TensorProto.FLOAT, [2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                            helper.make_tensor_value_info("outer", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    kernel = adapter_kernel(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert kernel.wants_scope
    scope = {"x": np.array([1, 2], np.float32), "outer": np.array([10, 20], np.float32)}
    (yes,) = kernel.compute(np.array(True), scope=scope)
    (no,) = kernel.compute(np.array(False), scope=scope)
    np.testing.assert_array_equal(yes, [11, 22])
    np.testing.assert_array_equal(no, [-9, -18])


def test_string_outputs_become_object_arrays():
    kernel = adapter_kernel(node_model("Identity", {"x": np.array(["a"], dtype=object)}, opset=20))
    (y,) = kernel.compute(np.array(["a", "bc"], dtype=np.str_))
    assert y.dtype == object and y.tolist() == ["a", "bc"]


def test_adapter_kernel_is_stateless_across_threads():
    x = RNG.standard_normal((64, 8)).astype(np.float32)
    kernel = adapter_kernel(node_model("Gelu", {"x": x}, opset=20))
    inputs = [x * k for k in range(16)]
    expected = [kernel.compute(v)[0] for v in inputs]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda v: kernel.compute(v)[0], inputs * 4))
    for got, want in zip(results, expected * 4):
        np.testing.assert_array_equal(got, want)


def test_kernel_failure_is_a_kernel_error_naming_node_and_provider():
    x = RNG.standard_normal((1, 8, 1)).astype(np.float32)
    model = node_model("DFT", {"x": x, "len": np.array(8, np.int64), "axis": np.array(5, np.int64)}, opset=20)
    model.graph.node[0].name = "my_dft"
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1, 8, 2]))
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"])
    with pytest.raises(onnxplug.errors.KernelError, match=r"node 'my_dft' \(ai.onnx::DFT, opset 20\) failed on provider 'numpy'"):
        session.run(None, {"x": x, "len": np.array(8, np.int64), "axis": np.array(5, np.int64)})


def test_op_table_lists_every_default_and_ml_op_with_how_it_runs():
    out = io.StringIO()
    op_table.write_markdown(out)
    text = out.getvalue()
    assert "| Conv |" in text and "| TreeEnsembleClassifier |" in text and "| TfIdfVectorizer |" in text
    statuses = op_table.op_statuses()
    assert statuses[""]["Relu"][-1].how == op_table.NATIVE
    assert statuses[""]["TfIdfVectorizer"][-1].how == op_table.REFERENCE
    assert statuses["ai.onnx.preview.training"]["Gradient"][-1].how == op_table.MISSING
    all_ops = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx.ml")}
    assert all_ops <= set(statuses[""]) | set(statuses["ai.onnx.ml"])
