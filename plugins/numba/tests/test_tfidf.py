"""TfIdfVectorizer on the numba provider against onnxruntime: TF, IDF and TFIDF with and without
weights, n-gram ranges and skips, int32 / int64 / string input, 1-D and 2-D, empty rows, random
pools and token streams, and the zoo's TF-IDF text classifier pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import assert_node_on_numba_matches
from onnx import TensorProto as T
from onnx import helper

INPUTS = {
    "int32_2d": np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32),
    "int64_1d": np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], np.int64),
    "string_2d": np.array([["a", "b", "c", "a"], ["c", "a", "b", "x"]], dtype=object),
    "string_1d": np.array(["a", "b", "b", "c", "a"], dtype=object),
    "empty_rows": np.zeros((2, 0), np.int64),
}
ELEM = {np.dtype(np.int32): T.INT32, np.dtype(np.int64): T.INT64, np.dtype(object): T.STRING}


def _model(x: np.ndarray, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", ELEM[x.dtype], list(x.shape))],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("mode,weighted", [("TF", False), ("IDF", True), ("IDF", False), ("TFIDF", True),
                                           ("TFIDF", False)])
@pytest.mark.parametrize("grams", [(1, 1, 0), (2, 2, 0), (1, 2, 0), (2, 2, 1), (1, 2, 3)])
def test_matches_onnxruntime(name, mode, weighted, grams):
    x = INPUTS[name]
    attrs = dict(mode=mode, min_gram_length=grams[0], max_gram_length=grams[1], max_skip_count=grams[2])
    if x.dtype == object:
        attrs.update(pool_strings=["a", "b", "c", "a", "b", "b", "c"], ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4])
    else:
        attrs.update(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7], ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6])
    if weighted:
        attrs["weights"] = [0.5 + i for i in range(len(attrs["ngram_indexes"]))]
    (y,) = assert_node_on_numba_matches(_model(x, **attrs), {"x": x}, "TfIdfVectorizer")
    # one row per input row (a 1-D input is one row), one column per output index
    assert y.shape == ((x.shape[0],) if x.ndim == 2 else ()) + (max(attrs["ngram_indexes"]) + 1,)


@pytest.mark.parametrize("seed", range(6))
def test_random_pools_and_tokens(seed):
    """Pools of distinct uni-, bi- and trigrams over a small vocabulary (shared prefixes, shuffled
    output indexes), long rows with unknown tokens, every gram range and skips up to 2."""
    rng = np.random.default_rng(seed)
    vocab = 6

    def distinct(n: int, k: int) -> np.ndarray:
        every = np.stack(np.meshgrid(*[np.arange(vocab)] * n, indexing="ij"), -1).reshape(-1, n)
        return every[rng.choice(len(every), k, replace=False)]

    grams = [distinct(n, k) for n, k in ((1, 4), (2, 8), (3, 6))]
    pool = np.concatenate([g.reshape(-1) for g in grams]).tolist()
    counts = [0, 4, 4 + 16]
    total = 4 + 8 + 6
    lo = int(rng.integers(1, 4))
    hi = int(rng.integers(lo, 4))
    attrs = dict(mode=str(rng.choice(["TF", "IDF", "TFIDF"])), min_gram_length=lo, max_gram_length=hi,
                 max_skip_count=int(rng.integers(0, 3)), ngram_counts=counts,
                 ngram_indexes=rng.permutation(total).tolist(), weights=rng.random(total).round(3).tolist())
    x = rng.integers(0, vocab + 2, (5, 30)).astype(np.int64)
    (counted,) = assert_node_on_numba_matches(_model(x, pool_int64s=pool, **attrs), {"x": x}, "TfIdfVectorizer")
    words = np.array([f"w{i}" for i in range(vocab + 2)], dtype=object)
    (by_string,) = assert_node_on_numba_matches(_model(words[x], pool_strings=[f"w{v}" for v in pool], **attrs),
                                                {"x": words[x]}, "TfIdfVectorizer")
    # the same tokens spelled as strings count the same n-grams
    np.testing.assert_array_equal(by_string, counted)


def test_zoo_text_pipeline():
    """StringNormalizer, Tokenizer, TfIdfVectorizer, Normalizer and LinearClassifier as skl2onnx
    converts a TfidfVectorizer + LogisticRegression pipeline."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(1)
    words = ["red", "green", "blue", "cat", "dog", "runs", "fast", "slow", "the", "a"]
    text = np.array([" ".join(rng.choice(words, rng.integers(2, 9))) for _ in range(80)], dtype=object)
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression()).fit(text, rng.integers(0, 2, 80))
    model = to_onnx(pipe, initial_types=[("text", StringTensorType([None, 1]))], options={"zipmap": False},
                    target_opset={"": 17, "ai.onnx.ml": 1})
    for node in model.graph.node:  # onnxruntime's StringNormalizer needs a locale this host has
        if node.op_type == "StringNormalizer":
            kept = [a for a in node.attribute if a.name != "locale"]
            del node.attribute[:]
            node.attribute.extend(kept + [helper.make_attribute("locale", "C")])
    assert_node_on_numba_matches(model, {"text": text[:20].reshape(-1, 1)}, "TfIdfVectorizer")
    labels, probabilities = assert_node_on_numba_matches(model, {"text": text[:20].reshape(-1, 1)}, "LinearClassifier")
    assert labels.shape == (20,) and probabilities.shape == (20, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)
