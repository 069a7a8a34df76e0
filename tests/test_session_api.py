"""onnxruntime's Python API: NodeArgs, metadata, options, providers, profiling, optimized model saving."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug import errors
from tests.conftest import make_model


def _typed_model():
    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64, name="cast"),
         helper.make_node("SequenceConstruct", ["x"], ["seq"], name="seqc")],
        "typed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 3, None]), seq])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests",
                              doc_string="a doc", model_version=3)
    helper.set_model_props(model, {"author": "onnxplug"})
    model.ir_version = 8
    return model


def test_node_args_match_onnxruntime():
    model = _typed_model()
    ours = ort.InferenceSession(model, providers=["numpy"])
    theirs = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for mine, ref in zip(ours.get_inputs() + ours.get_outputs(), theirs.get_inputs() + theirs.get_outputs()):
        assert (mine.name, mine.type, mine.shape) == (ref.name, ref.type, ref.shape)


def test_modelmeta_matches_onnxruntime():
    model = _typed_model()
    mine = ort.InferenceSession(model, providers=["numpy"]).get_modelmeta()
    ref = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).get_modelmeta()
    for field in ("producer_name", "graph_name", "domain", "description", "version", "custom_metadata_map"):
        assert getattr(mine, field) == getattr(ref, field), field


def test_sequence_output_and_output_selection():
    sess = ort.InferenceSession(_typed_model(), providers=["numpy"])
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    y, seq = sess.run(None, {"x": x})
    assert y.dtype == np.int64 and isinstance(seq, list) and len(seq) == 1
    np.testing.assert_array_equal(seq[0], x)
    (only,) = sess.run(["y"], {"x": x})
    np.testing.assert_array_equal(only, x.astype(np.int64))


def test_provider_aliases_and_lists(add_relu_model):
    sess = ort.InferenceSession(add_relu_model, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["numpy"]
    assert "numpy" in ort.get_all_providers()
    assert ort.get_available_providers()[-1] == "numpy"
    with pytest.raises(errors.UnknownProviderError, match="'warp-drive'"):
        ort.InferenceSession(add_relu_model, providers=["warp-drive"])


def test_set_providers_replans(add_relu_model):
    sess = ort.InferenceSession(add_relu_model, providers=["numpy"])
    sess.set_providers(["CPUExecutionProvider"])
    assert sess.get_providers() == ["numpy"]
    assert sess.run(None, {"x": np.zeros((1, 4), np.float32)})[0].tolist() == [[1, 0, 2, 0]]


def test_unimplemented_options_are_refused_not_ignored(add_relu_model):
    so = ort.SessionOptions()
    with pytest.raises(errors.UnsupportedOptionError, match="enable_quantum"):
        so.enable_quantum = True
    # an entry that would change results: refused, except at the value that is our behaviour
    with pytest.raises(errors.UnsupportedOptionError, match="session.set_denormal_as_zero"):
        so.add_session_config_entry("session.set_denormal_as_zero", "1")
    so.add_session_config_entry("session.set_denormal_as_zero", "0")
    with pytest.raises(errors.UnsupportedOptionError, match="disabled_optimizers"):
        ort.InferenceSession(add_relu_model, providers=["numpy"], disabled_optimizers=["x"])
    ro = ort.RunOptions()
    with pytest.raises(errors.UnsupportedOptionError, match="run.no_such_entry"):
        ro.add_run_config_entry("run.no_such_entry", "1")
    # onnxruntime's methods we lack are refused when called, with a typed error naming them
    with pytest.raises(errors.UnsupportedOptionError, match=r"add_free_dimension_override_by_denotation\(\)"):
        so.add_free_dimension_override_by_denotation("DATA_BATCH", 1)
    with pytest.raises(errors.UnsupportedOptionError, match=r"register_custom_ops_library\(\)"):
        so.register_custom_ops_library("libcustom.so")


def test_inter_op_threads_are_kept_and_tune_nothing(add_relu_model):
    # common in onnxruntime scripts; nodes run one after another on the calling thread whatever the count
    so = ort.SessionOptions()
    assert so.inter_op_num_threads == 0
    so.inter_op_num_threads = 1
    assert so.inter_op_num_threads == 1
    assert ort.SessionOptions().inter_op_num_threads == 0  # per instance, not shared
    sess = ort.InferenceSession(add_relu_model, so, providers=["numpy"])
    assert sess.run(None, {"x": np.zeros((1, 4), np.float32)})[0].tolist() == [[1, 0, 2, 0]]
    so.inter_op_num_threads = 4  # only tunes onnxruntime's inter-op pool: accepted
    assert so.inter_op_num_threads == 4
    with pytest.raises(errors.OptionValueError, match=r"inter_op_num_threads .* -1"):
        so.inter_op_num_threads = -1
    assert so.inter_op_num_threads == 4  # a refused value leaves the option as it was


def test_graph_optimization_level_enum_values_match_onnxruntime():
    for name in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
        assert int(getattr(ort.GraphOptimizationLevel, name)) == int(getattr(onnxruntime.GraphOptimizationLevel, name))


def test_profiling_writes_chrome_trace(tmp_path, add_relu_model):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = ort.InferenceSession(add_relu_model, so, providers=["numpy"])
    sess.run(None, {"x": np.ones((2, 4), np.float32)})
    path = sess.end_profiling()
    events = [e for e in json.loads(open(path).read()) if e["cat"] == "Node"]
    assert [e["name"] for e in events] == ["add_kernel_time", "relu_kernel_time"]
    assert [e["args"]["op_name"] for e in events] == ["Add", "Relu"]  # the key onnxruntime's profiles use
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["args"]["provider"] == "numpy" for e in events)


def test_optimized_model_is_saved_and_loads_in_onnxruntime(tmp_path, add_relu_model):
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(add_relu_model, so, providers=["numpy"])
    saved = onnx.load(so.optimized_model_filepath)
    onnx.checker.check_model(saved)
    x = np.array([[-5, 5, -5, 5]], np.float32)
    ref = onnxruntime.InferenceSession(saved.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(ref.run(None, {"x": x})[0], [[0, 4, 0, 3]])


def test_overridable_initializer_defaults_and_overrides():
    w = onnx.numpy_helper.from_array(np.array([1, 2], np.float32), "w")
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                       [("x", TensorProto.FLOAT, [2]), ("w", TensorProto.FLOAT, [2])],
                       [("y", TensorProto.FLOAT, [2])], [w])
    sess = ort.InferenceSession(model, providers=["numpy"])
    assert [a.name for a in sess.get_inputs()] == ["x"]
    assert [a.name for a in sess.get_overridable_initializers()] == ["w"]
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], [1, 2])
    np.testing.assert_array_equal(sess.run(None, {"x": x, "w": np.array([5, 6], np.float32)})[0], [5, 6])


def test_path_bytes_and_proto_load_the_same(tmp_path, add_relu_model):
    path = tmp_path / "m.onnx"
    onnx.save_model(add_relu_model, path)
    x = np.array([[1, 2, 3, 4]], np.float32)
    outs = [ort.InferenceSession(src, providers=["numpy"]).run(None, {"x": x})[0]
            for src in (str(path), path, path.read_bytes(), add_relu_model)]
    for out in outs:
        np.testing.assert_array_equal(out, [[2, 1, 5, 2]])


def test_output_of_unknown_rank_is_accepted_and_inferred():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["z"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model, providers=["numpy"])
    assert sess.get_outputs()[0].shape == ["N", 3]  # filled in by shape inference
    np.testing.assert_array_equal(sess.run(None, {"x": -np.ones((2, 3), np.float32)})[0], np.zeros((2, 3)))


def test_outputs_never_alias_feeds_or_weights():
    w = onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    model = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="view_of_input"),
                        helper.make_node("Identity", ["w"], ["z"], name="weight_out"),
                        helper.make_node("Flatten", ["w2"], ["v"], name="view_of_weight")],
                       [("x", TensorProto.FLOAT, [4]), ("shape", TensorProto.INT64, [2])],
                       [("y", TensorProto.FLOAT, [2, 2]), ("z", TensorProto.FLOAT, [4]),
                        ("v", TensorProto.FLOAT, [4, 1])],
                       [w, onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "w2")])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["numpy"])
    x = np.zeros(4, np.float32)
    y, z, v = sess.run(None, {"x": x, "shape": np.array([2, 2], np.int64)})
    y[...] = 7
    z[...] = 7
    v[...] = 7
    assert not x.any()
    y2, z2, v2 = sess.run(None, {"x": x, "shape": np.array([2, 2], np.int64)})
    np.testing.assert_array_equal(z2, np.arange(4))
    np.testing.assert_array_equal(v2, np.arange(4).reshape(4, 1))


def test_set_providers_starts_from_the_loaded_model():
    from onnxplug.testing.model_suite import build, sample_inputs

    model = build("transformer_encoder")
    feeds = sample_inputs("transformer_encoder")
    sess = ort.InferenceSession(model, providers=["numpy"])
    first = sess.run(None, feeds)
    ops = [a.op_type for a in sess.get_node_assignments()]
    sess.set_providers(["numpy"])
    assert [a.op_type for a in sess.get_node_assignments()] == ops
    np.testing.assert_array_equal(sess.run(None, feeds)[0], first[0])


def test_free_dimension_override_fixes_input_shapes_as_onnxruntime():
    from onnxplug.testing.model_suite import build, sample_inputs

    model = build("loop_model")  # input [seq, batch, 32]; the Loop body's types use both names
    so, oracle_so = ort.SessionOptions(), onnxruntime.SessionOptions()
    for options in (so, oracle_so):
        options.add_free_dimension_override_by_name("batch", 2)
    assert so.free_dimension_overrides == {"batch": 2}
    sess = ort.InferenceSession(model, so, providers=["numpy"])
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), oracle_so, providers=["CPUExecutionProvider"])
    assert [i.shape for i in sess.get_inputs()] == [i.shape for i in oracle.get_inputs()] == [["seq", 2, 32]]
    assert sess.get_outputs()[0].shape == [2, 10]
    feeds = sample_inputs("loop_model", batch=2)
    np.testing.assert_allclose(sess.run(None, feeds)[0], oracle.run(None, feeds)[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(errors.InputShapeError, match=r"'input' expects dimension 1 to be 2"):
        sess.run(None, sample_inputs("loop_model", batch=3))


def test_free_dimension_override_errors_name_the_culprit(add_relu_model):
    so = ort.SessionOptions()
    with pytest.raises(errors.OptionValueError, match="non-negative integer"):
        so.add_free_dimension_override_by_name("N", -1)
    with pytest.raises(errors.OptionValueError, match="non-negative integer"):
        so.add_free_dimension_override_by_name("N", "8")
    so.add_free_dimension_override_by_name("batch_size", np.int64(1))  # the model calls it N
    with pytest.raises(errors.OptionValueError, match=r"'batch_size', which no input of the model has; .*: N"):
        ort.InferenceSession(add_relu_model, so, providers=["numpy"])
