"""Element types after onnxruntime's contrib ops and ai.onnx.ml ops, which onnx shape inference
does not (or not fully) type: the values downstream get the type their ops determine, so a provider
that checks element types still takes them, and results keep matching onnxruntime."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxplug
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxplug.explain import declined_nodes
from onnxplug.ir.element_types import fill_element_types
from onnxplug.ir.loader import load_model
from onnxplug.ir.types import elem_type_of

from tests.oracle import assert_close, ort_outputs


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "gamma"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "beta"),
             numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0, 2, -1], np.int64), "shape"),
             numpy_helper.from_array(np.array([1], np.int64), "axes")]
    nodes = [
        helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta"], ["ln"], domain="com.microsoft",
                         epsilon=1e-5),
        helper.make_node("FastGelu", ["ln"], ["act"], domain="com.microsoft"),
        helper.make_node("MatMul", ["act", "w"], ["mm"]),
        helper.make_node("Reshape", ["mm", "shape"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Softmax", ["r"], ["sm"], axis=-1),
        helper.make_node("Unsqueeze", ["sm", "axes"], ["y"]),
        helper.make_node("Greater", ["mm", "skip"], ["g"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, 8])
                                           for n in ("x", "skip")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("s", TensorProto.INT64, None),
                               helper.make_tensor_value_info("g", TensorProto.BOOL, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def test_values_after_contrib_ops_are_typed():
    graph = load_model(_model().SerializeToString()).graph
    assert graph.type_of("ln").elem_type == TensorProto.FLOAT
    assert graph.type_of("act").elem_type == TensorProto.FLOAT
    assert graph.type_of("mm").elem_type == TensorProto.FLOAT
    assert graph.type_of("r").elem_type == TensorProto.FLOAT
    assert graph.type_of("sm").elem_type == TensorProto.FLOAT


def test_providers_take_the_nodes_after_contrib_ops_and_match_onnxruntime():
    model = _model()
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal((2, 3, 8)).astype(np.float32) for n in ("x", "skip")}
    expected = ort_outputs(model, feeds)
    providers = ["numpy"] + (["numba"] if "numba" in onnxplug.get_available_providers() else [])
    for provider in providers:
        sess = onnxplug.InferenceSession(model.SerializeToString(), providers=[provider])
        assert_close(sess.run(None, feeds), expected)
        declined = {d.op_type for d in declined_nodes(sess.engine)}
        assert not declined & {"MatMul", "Reshape", "Shape", "Softmax", "Unsqueeze", "Greater"}, provider


# ai.onnx.ml ops: each output goes through an Identity to an untyped graph output, so onnxruntime
# reports the type it computes and onnxplug must type the intermediate value itself.
_ML = "ai.onnx.ml"
_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], np.float32)
_TREE = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0], nodes_values=[0.0] * 3,
             nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0])
_CLASSES = dict(class_treeids=[0, 0], class_nodeids=[1, 2], class_ids=[0, 1], class_weights=[1.0, 1.0])
_LINEAR = dict(coefficients=[1.0, 2.0, 3.0, -1.0, -2.0, -3.0], intercepts=[0.0, 0.0])
_SVM = dict(kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], rho=[0.0], support_vectors=[1.0, 0, 0, 0, 1.0, 0])


def _tensor(elem):
    return helper.make_tensor_type_proto(elem, None)


def _ml_case(op, n_out, inputs, feeds, ml_opset=1, **attrs):
    outs = [f"o{i}" for i in range(n_out)]
    nodes = [helper.make_node(op, [n for n, _ in inputs], outs, domain=_ML, **attrs)]
    nodes += [helper.make_node("Identity", [o], [f"y{i}"]) for i, o in enumerate(outs)]
    graph = helper.make_graph(nodes, op, [helper.make_value_info(n, t) for n, t in inputs],
                              [helper.make_value_info(f"y{i}", onnx.TypeProto()) for i in range(n_out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_ML, ml_opset)])
    return model, feeds


ML_CASES = {
    "tree_classifier_int_labels": lambda: _ml_case(
        "TreeEnsembleClassifier", 2, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, classlabels_int64s=[3, 7],
        **_CLASSES, **_TREE),
    "tree_classifier_string_labels": lambda: _ml_case(
        "TreeEnsembleClassifier", 2, [("x", _tensor(TensorProto.DOUBLE))], {"x": _X.astype(np.float64)}, ml_opset=3,
        classlabels_strings=["a", "b"], **_CLASSES, **_TREE),
    "tree_regressor_double_input": lambda: _ml_case(
        "TreeEnsembleRegressor", 1, [("x", _tensor(TensorProto.DOUBLE))], {"x": _X.astype(np.float64)}, ml_opset=3,
        n_targets=1, target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[1.0, 2.0],
        **_TREE),
    "linear_classifier_string_labels": lambda: _ml_case(
        "LinearClassifier", 2, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, classlabels_strings=["a", "b"],
        **_LINEAR),
    "linear_classifier_int64_input": lambda: _ml_case(
        "LinearClassifier", 2, [("x", _tensor(TensorProto.INT64))], {"x": _X.astype(np.int64)},
        classlabels_ints=[1, 2], **_LINEAR),
    "linear_regressor": lambda: _ml_case(
        "LinearRegressor", 1, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, coefficients=[1.0, 2.0, 3.0]),
    "svm_classifier": lambda: _ml_case(
        "SVMClassifier", 2, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, classlabels_ints=[0, 1],
        coefficients=[1.0, 2.0, 3.0, -1.0, -2.0, -3.0], vectors_per_class=[1, 1], **_SVM),
    "svm_regressor": lambda: _ml_case(
        "SVMRegressor", 1, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, coefficients=[1.0, 2.0], n_supports=2,
        **_SVM),
    "normalizer_double_input": lambda: _ml_case(
        "Normalizer", 1, [("x", _tensor(TensorProto.DOUBLE))], {"x": _X.astype(np.float64)}, norm="L2"),
    "scaler_int64_input": lambda: _ml_case(
        "Scaler", 1, [("x", _tensor(TensorProto.INT64))], {"x": _X.astype(np.int64)}, offset=[1.0], scale=[2.0]),
    "binarizer": lambda: _ml_case(
        "Binarizer", 1, [("x", _tensor(TensorProto.FLOAT))], {"x": _X}, threshold=0.3),
    "imputer_int64": lambda: _ml_case(
        "Imputer", 1, [("x", _tensor(TensorProto.INT64))], {"x": _X.astype(np.int64)}, imputed_value_int64s=[5],
        replaced_value_int64=0),
    "array_feature_extractor_strings": lambda: _ml_case(
        "ArrayFeatureExtractor", 1, [("x", _tensor(TensorProto.STRING)), ("i", _tensor(TensorProto.INT64))],
        {"x": np.array([["a", "b", "c"]], object), "i": np.array([2, 0], np.int64)}),
    "one_hot_encoder_strings": lambda: _ml_case(
        "OneHotEncoder", 1, [("x", _tensor(TensorProto.STRING))], {"x": np.array([["a", "b"]], object)},
        cats_strings=["a", "b"]),
    "feature_vectorizer_int32": lambda: _ml_case(
        "FeatureVectorizer", 1, [("x", _tensor(TensorProto.INT32)), ("z", _tensor(TensorProto.INT32))],
        {"x": _X.astype(np.int32), "z": _X.astype(np.int32)}, inputdimensions=[3, 3]),
    "label_encoder_1_string_to_int64": lambda: _ml_case(
        "LabelEncoder", 1, [("x", _tensor(TensorProto.STRING))], {"x": np.array(["a", "z", "b"], object)},
        classes_strings=["a", "b"], default_int64=-1),
    "label_encoder_2_to_floats": lambda: _ml_case(
        "LabelEncoder", 1, [("x", _tensor(TensorProto.INT64))], {"x": np.array([1, 2, 3], np.int64)}, ml_opset=2,
        keys_int64s=[1, 2], values_floats=[0.5, 1.5]),
    "label_encoder_4_values_tensor": lambda: _ml_case(
        "LabelEncoder", 1, [("x", _tensor(TensorProto.INT64))], {"x": np.array([1, 2, 3], np.int64)}, ml_opset=4,
        keys_tensor=helper.make_tensor("k", TensorProto.INT64, [2], [1, 2]),
        values_tensor=helper.make_tensor("v", TensorProto.DOUBLE, [2], [4.0, 5.0]),
        default_tensor=helper.make_tensor("d", TensorProto.DOUBLE, [1], [0.0])),
    "category_mapper_int64_to_string": lambda: _ml_case(
        "CategoryMapper", 1, [("x", _tensor(TensorProto.INT64))], {"x": np.array([1, 2, 3], np.int64)},
        cats_int64s=[1, 2], cats_strings=["a", "b"]),
    "cast_map_to_int64": lambda: _ml_case(
        "CastMap", 1, [("x", helper.make_map_type_proto(TensorProto.INT64, _tensor(TensorProto.FLOAT)))],
        {"x": {1: 2.5, 0: 3.0}}, cast_to="TO_INT64"),
    "dict_vectorizer": lambda: _ml_case(
        "DictVectorizer", 1, [("x", helper.make_map_type_proto(TensorProto.STRING, _tensor(TensorProto.FLOAT)))],
        {"x": {"a": 2.5}}, string_vocabulary=["a", "b"]),
}


@pytest.mark.parametrize("case", list(ML_CASES))
@pytest.mark.parametrize("inferred", [True, False], ids=["after_onnx_inference", "without_onnx_inference"])
def test_ml_op_outputs_take_the_element_type_onnxruntime_computes(case, inferred):
    model, feeds = ML_CASES[case]()
    expected = ort_outputs(model, feeds)
    graph = load_model(model.SerializeToString()).graph
    if not inferred:  # only the filler types the outputs
        graph.value_info.clear()
        fill_element_types(graph)
    for i, value in enumerate(expected):
        t = graph.type_of(f"o{i}")
        assert t is not None and t.kind == "tensor", f"output {i} of {case} is untyped"
        assert t.elem_type == elem_type_of(np.asarray(value).dtype), f"output {i} of {case}"


def _after(model: onnx.ModelProto, output: str, op: str) -> onnx.ModelProto:
    """``model`` with a Cast (to float) or a Mul by one between the op making ``output`` and the graph
    output, as exporters such as onnxmltools and skl2onnx write them."""
    for node in model.graph.node:
        node.output[:] = [output + "_raw" if o == output else o for o in node.output]
    if op == "Cast":
        model.graph.node.append(helper.make_node("Cast", [output + "_raw"], [output], to=TensorProto.FLOAT))
    else:
        model.graph.initializer.append(numpy_helper.from_array(np.array([1.0], np.float32), "one"))
        model.graph.node.append(helper.make_node("Mul", [output + "_raw", "one"], [output]))
    return model


def _sklearn_models() -> dict[str, onnx.ModelProto]:
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    x = rng.standard_normal((90, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.8)
    forest = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(x, y)
    logreg = LogisticRegression().fit(x, y)
    with warnings.catch_warnings():  # scikit-learn deprecates probability=True (the zoo's SVC uses it)
        warnings.simplefilter("ignore", FutureWarning)
        svc = SVC(probability=True, random_state=0).fit(x, y)
        svc_model = skl2onnx.to_onnx(svc, x[:1], options={id(svc): {"zipmap": False}},
                                     target_opset={"": 17, "ai.onnx.ml": 3})
    pipeline = make_pipeline(StandardScaler(), LogisticRegression()).fit(x, y)

    def convert(est, final):
        return skl2onnx.to_onnx(est, x[:1], options={id(final): {"zipmap": False}},
                                target_opset={"": 17, "ai.onnx.ml": 3})

    return {"random_forest_cast": _after(convert(forest, forest), "probabilities", "Cast"),
            "logreg_mul": _after(convert(logreg, logreg), "probabilities", "Mul"),
            "scaler_logreg_mul": _after(convert(pipeline, pipeline.steps[-1][1]), "probabilities", "Mul"),
            "svc": svc_model}  # skl2onnx writes a Cast after SVMClassifier's scores


def test_numba_takes_the_nodes_after_sklearn_ml_ops_and_matches_onnxruntime():
    if "numba" not in onnxplug.get_available_providers():
        pytest.skip("the numba provider is not installed")
    feeds = {"X": np.random.default_rng(3).standard_normal((7, 4)).astype(np.float32)}
    for name, model in _sklearn_models().items():
        after_ml = {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}
        assert after_ml, name
        expected = ort_outputs(model, feeds)
        sess = onnxplug.InferenceSession(model.SerializeToString(), providers=["numba"])
        declined = {d.op_type for d in declined_nodes(sess.engine)}
        assert not declined & after_ml, (name, declined)
        assert_close(sess.run(None, feeds), expected)
