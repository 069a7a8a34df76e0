"""Classical ML models: scikit-learn estimators converted by skl2onnx, LightGBM and XGBoost by onnxmltools.

Each model is fitted at build time on seeded synthetic data (``make_classification``), so the file is the
same at every build. Opsets are the converters' defaults, pinned so the recorded number stays true.
Classifiers give a label (int64; strings for the ColumnTransformer pipeline) and probabilities, plain
tensors (``zipmap=False``) except on the random forest, which keeps skl2onnx's default ZipMap (a sequence of
maps). The batch axis is dynamic.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

#: skl2onnx 1.20's default target opset (its latest tested) and its ai.onnx.ml opset.
SKL2ONNX_OPSET = {"": 22, "ai.onnx.ml": 3}
#: onnxmltools 1.16's default target opset (``DEFAULT_OPSET_NUMBER``); the files declare less: the LightGBM
#: one ai.onnx 9, the XGBoost one only ai.onnx.ml 1 (it has no ai.onnx node).
ONNXMLTOOLS_OPSET = 15
LIGHTGBM_FILE_OPSET = 9

N_FEATURES = 8
N_CLASSES = 3
BATCHES = (3, 17)

#: Categories of both string columns of the ColumnTransformer pipeline.
CATEGORIES = ("red", "green", "blue", "amber", "violet")
#: Words of the TF-IDF model's documents; the ``text`` generator draws from the same list.
WORDS = ("model", "graph", "tensor", "kernel", "node", "shape", "batch", "layer", "weight", "input",
         "output", "runtime", "provider", "plugin", "float", "integer", "string", "matrix", "vector", "token")


def _features(seed: int) -> tuple[Any, Any]:
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=300, n_features=N_FEATURES, n_informative=5, n_redundant=1,
                               n_classes=N_CLASSES, random_state=seed)
    return x.astype("float32"), y


def _save(onx: Any, path: Path) -> None:
    import onnx

    onnx.save_model(onx, str(path))


@contextmanager
def _int_missing_flags() -> Iterator[None]:
    """skl2onnx 1.20 passes a Python bool as a leaf's ``nodes_missing_value_tracks_true`` (HistGradientBoosting),
    which onnx >= 1.23 refuses in an ints attribute; give it an int while converting."""
    from skl2onnx.common import tree_ensemble

    original = tree_ensemble.add_node

    def add_node(*args: Any, **kwargs: Any) -> Any:
        if "nodes_missing_value_tracks_true" in kwargs:
            kwargs["nodes_missing_value_tracks_true"] = int(kwargs["nodes_missing_value_tracks_true"])
        return original(*args, **kwargs)

    tree_ensemble.add_node = add_node
    try:
        yield
    finally:
        tree_ensemble.add_node = original


def _skl_builder(make: Callable[[int], Any], seed: int, zipmap: bool = False) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        from skl2onnx import to_onnx
        from skl2onnx.common.data_types import FloatTensorType

        x, y = _features(seed)
        model = make(seed).fit(x, y)
        options = None if zipmap else {id(model): {"zipmap": False}}
        with _int_missing_flags():
            onx = to_onnx(model, initial_types=[("X", FloatTensorType([None, N_FEATURES]))],
                          target_opset=SKL2ONNX_OPSET, options=options)
        _save(onx, path)
    return build


def _build_column_transformer(path: Path, seed: int = 0) -> None:
    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    rng = np.random.default_rng(seed)
    n = 300
    num = rng.normal(size=(n, 3)).astype("float32") * [1.0, 5.0, 0.2] + [0.0, 10.0, -1.0]
    cat = rng.choice(CATEGORIES, size=(n, 2))
    # String class labels, so the label output is a string tensor.
    y = np.where(((num[:, 0] > 0).astype(int) + (cat[:, 0] == "red") + (cat[:, 1] == "blue")) % 2, "churn", "stay")
    frame = pd.DataFrame({"n0": num[:, 0], "n1": num[:, 1], "n2": num[:, 2], "c0": cat[:, 0], "c1": cat[:, 1]})
    # Columns by position: skl2onnx maps 0-2 to the float input and 3-4 to the string input.
    pipe = Pipeline([
        ("features", ColumnTransformer([("num", StandardScaler(), [0, 1, 2]),
                                        ("cat", OneHotEncoder(handle_unknown="ignore"), [3, 4])])),
        ("classifier", LogisticRegression(max_iter=500)),
    ]).fit(frame, y)
    onx = to_onnx(pipe, initial_types=[("num", FloatTensorType([None, 3])), ("cat", StringTensorType([None, 2]))],
                  target_opset=SKL2ONNX_OPSET, options={id(pipe): {"zipmap": False}})
    _save(onx, path)


def _build_tfidf(path: Path, seed: int = 0) -> None:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType

    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=rng.integers(3, 12))) for _ in range(400)]
    # The label depends on which words occur, so the classifier's weights are not all noise.
    y = np.array([int(("tensor" in d) ^ ("kernel" in d)) for d in docs])
    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2), min_df=2)),
                     ("classifier", LogisticRegression(max_iter=500))]).fit(docs, y)
    # onnxruntime's StringNormalizer defaults to the en_US.UTF-8 locale, which many machines lack.
    options = {id(pipe): {"zipmap": False}, id(pipe.steps[0][1]): {"locale": "C"}}
    onx = to_onnx(pipe, initial_types=[("text", StringTensorType([None]))], target_opset=SKL2ONNX_OPSET,
                  options=options)
    _save(onx, path)


def _build_lightgbm(path: Path, seed: int = 0) -> None:
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y = _features(seed)
    model = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=15, random_state=seed, verbose=-1).fit(x, y)
    onx = convert_lightgbm(model, initial_types=[("X", FloatTensorType([None, N_FEATURES]))],
                           target_opset=ONNXMLTOOLS_OPSET, zipmap=False)
    _save(onx, path)


def _build_xgboost(path: Path, seed: int = 0) -> None:
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y = _features(seed)
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3, random_state=seed, n_jobs=1).fit(x, y)
    onx = convert_xgboost(model, initial_types=[("X", FloatTensorType([None, N_FEATURES]))],
                          target_opset=ONNXMLTOOLS_OPSET)
    _save(onx, path)


def _logistic(seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(max_iter=500)


def _random_forest(seed: int) -> Any:
    from sklearn.ensemble import RandomForestClassifier
    return RandomForestClassifier(n_estimators=10, max_depth=6, random_state=seed, n_jobs=1)


def _gradient_boosting(seed: int) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier
    return GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=seed)


def _hist_gradient_boosting(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    return HistGradientBoostingClassifier(max_iter=20, max_leaf_nodes=15, random_state=seed)


def _svc(seed: int) -> Any:
    from sklearn.svm import SVC
    return SVC(probability=True, random_state=seed)


def _knn(seed: int) -> Any:
    from sklearn.neighbors import KNeighborsClassifier
    return KNeighborsClassifier(n_neighbors=5)


def _mlp(seed: int) -> Any:
    from sklearn.neural_network import MLPClassifier
    return MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=400, random_state=seed)


_X = (InputSpec("X", "float32", ((BATCHES[0], N_FEATURES), (BATCHES[1], N_FEATURES)), "normal"),)
_SYNTH = f"fitted on make_classification({N_FEATURES} features, {N_CLASSES} classes, random_state=0)"
_SKL_NOTES = "outputs: label (int64), probabilities (float32, zipmap=False)"


def _skl(name: str, estimator: str, make: Callable[[int], Any], *, zipmap: bool = False, tier: str = "full",
         notes: str = _SKL_NOTES) -> ZooModel:
    return ZooModel(name=name, family="sklearn", source_package="scikit-learn",
                    recipe=f"{estimator} {_SYNTH}, skl2onnx.to_onnx", exporter="skl2onnx",
                    opset=SKL2ONNX_OPSET[""], inputs=_X, build=_skl_builder(make, 0, zipmap), tier=tier, notes=notes)


MODELS: list[ZooModel] = [
    _skl("sklearn-logreg", "LogisticRegression()", _logistic, tier="ci"),
    _skl("sklearn-random-forest", "RandomForestClassifier(10 trees, max_depth 6)", _random_forest, zipmap=True,
         notes="outputs: output_label (int64), output_probability (ZipMap: a sequence of int64->float maps)"),
    _skl("sklearn-gradient-boosting", "GradientBoostingClassifier(20 trees, max_depth 3)", _gradient_boosting),
    _skl("sklearn-hist-gradient-boosting", "HistGradientBoostingClassifier(max_iter 20)", _hist_gradient_boosting,
         notes=_SKL_NOTES + "; converted with leaves' missing-value flags given as ints (skl2onnx 1.20 passes a "
                            "bool, which onnx 1.23 refuses)"),
    _skl("sklearn-svc", "SVC(rbf, probability=True)", _svc),
    _skl("sklearn-knn", "KNeighborsClassifier(5)", _knn),
    _skl("sklearn-mlp", "MLPClassifier(32, 16)", _mlp),
    ZooModel(name="sklearn-column-transformer", family="sklearn", source_package="scikit-learn",
             recipe="Pipeline(ColumnTransformer(StandardScaler on 3 float columns, OneHotEncoder on 2 string "
                    "columns), LogisticRegression) fitted on seeded synthetic data, skl2onnx.to_onnx",
             exporter="skl2onnx", opset=SKL2ONNX_OPSET[""],
             inputs=(InputSpec("num", "float32", ((BATCHES[0], 3), (BATCHES[1], 3)), "normal", {"scale": 3.0}),
                     InputSpec("cat", "object", ((BATCHES[0], 2), (BATCHES[1], 2)), "choice",
                               {"values": list(CATEGORIES)})),
             build=_build_column_transformer,
             notes="outputs: label (string: 'churn' or 'stay'), probabilities (float32, zipmap=False)"),
    ZooModel(name="sklearn-tfidf-text", family="sklearn", source_package="scikit-learn",
             recipe="Pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression) fitted on seeded documents "
                    "of 20 words, skl2onnx.to_onnx",
             exporter="skl2onnx", opset=SKL2ONNX_OPSET[""],
             inputs=(InputSpec("text", "object", ((BATCHES[0],), (BATCHES[1],)), "text",
                               {"vocabulary": list(WORDS), "min_words": 3, "max_words": 12}),),
             build=_build_tfidf,
             notes=_SKL_NOTES + "; tokenised by com.microsoft Tokenizer, then TfIdfVectorizer"),
    ZooModel(name="lightgbm-classifier", family="sklearn", source_package="lightgbm",
             recipe=f"LGBMClassifier(20 trees, 15 leaves) {_SYNTH}, onnxmltools.convert_lightgbm",
             exporter="onnxmltools", opset=LIGHTGBM_FILE_OPSET, inputs=_X, build=_build_lightgbm,
             notes=_SKL_NOTES + "; the label output is declared with shape [1] though it has one row per sample"),
    ZooModel(name="xgboost-classifier", family="sklearn", source_package="xgboost",
             recipe=f"XGBClassifier(20 trees, max_depth 3) {_SYNTH}, onnxmltools.convert_xgboost",
             exporter="onnxmltools", opset=None, inputs=_X, build=_build_xgboost,
             notes="outputs: label (int64), probabilities (float32); the file imports only ai.onnx.ml 1"),
]
