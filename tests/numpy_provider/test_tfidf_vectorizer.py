"""TfIdfVectorizer (onnx.reference's implementation through the adapter) against onnxruntime:
TF, IDF and TFIDF, n-gram ranges and skips, int32 / int64 / string input, 1-D and 2-D, empty rows;
weights with shuffled ngram_indexes (n-gram g's weight belongs to column ngram_indexes[g])."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import onnxplug
from tests.numpy_provider.single_node_oracle import assert_same, kernels_only, node_model, with_output_types

INPUTS = {
    "int32_2d": np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32),
    "int64_1d": np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], np.int64),
    "string_2d": np.array([["a", "b", "c", "a"], ["c", "a", "b", "x"]], dtype=object),
    "string_1d": np.array(["a", "b", "b", "c", "a"], dtype=object),
    "empty_rows": np.zeros((2, 0), np.int64),
}


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("grams", [(1, 1, 0), (2, 2, 0), (1, 2, 0), (2, 2, 1), (1, 2, 3)])
def test_matches_onnxruntime(name, mode, grams):
    x = INPUTS[name]
    attrs = dict(mode=mode, min_gram_length=grams[0], max_gram_length=grams[1], max_skip_count=grams[2])
    if x.dtype == object:
        attrs.update(pool_strings=["a", "b", "c", "a", "b", "b", "c"], ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4])
    else:
        attrs.update(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7], ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6])
    if mode != "TF":
        attrs["weights"] = [0.5 + i for i in range(len(attrs["ngram_indexes"]))]
    assert_matches_onnxruntime(x, attrs)


def assert_matches_onnxruntime(x, attrs):
    model = node_model("TfIdfVectorizer", {"x": x}, opset=9, **attrs)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})
    ours = onnxplug.InferenceSession(with_output_types(model, expected).SerializeToString(), kernels_only(),
                                     providers=["numpy"]).run(None, {"x": x})
    assert_same(ours[0], expected[0], where="TfIdfVectorizer")


#: Pools whose n-grams map to columns in another order than the pool's (1-grams, then 2-grams).
SHUFFLED = {
    "int64": (np.array([[2, 3, 5, 3, 2, 9], [5, 5, 4, 2, 3, 3]], np.int64),
              dict(pool_int64s=[2, 3, 4, 5, 2, 3, 5, 5, 3, 2], ngram_counts=[0, 4],
                   ngram_indexes=[6, 2, 0, 4, 1, 7, 3, 5])),
    "int32_1d": (np.array([2, 3, 5, 3, 2, 9, 5, 5, 4, 2, 3, 3], np.int32),
                 dict(pool_int64s=[2, 3, 4, 5, 2, 3, 5, 5, 3, 2], ngram_counts=[0, 4],
                      ngram_indexes=[3, 7, 1, 6, 0, 2, 5, 4])),
    "string": (np.array([["b", "a", "c", "a"], ["c", "c", "b", "a"]], dtype=object),
               dict(pool_strings=["a", "b", "c", "b", "a", "c", "a"], ngram_counts=[0, 3],
                    ngram_indexes=[4, 0, 3, 1, 2])),
    "gap_columns": (np.array([[2, 3, 5, 3, 2, 9]], np.int64),  # columns 1 and 4 receive no n-gram
                    dict(pool_int64s=[2, 3, 5, 9], ngram_counts=[0], ngram_indexes=[5, 0, 3, 2])),
}


@pytest.mark.parametrize("name", list(SHUFFLED))
@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("grams", [(1, 1, 0), (1, 2, 0), (2, 2, 1), (1, 2, 2)])
def test_weights_follow_shuffled_ngram_indexes(name, mode, grams):
    x, pool = SHUFFLED[name]
    if grams[1] > len(pool["ngram_counts"]):
        pytest.skip("the pool has no 2-grams")
    attrs = dict(mode=mode, min_gram_length=grams[0], max_gram_length=grams[1], max_skip_count=grams[2], **pool)
    attrs["weights"] = [0.25 + 1.5 * i for i in range(len(pool["ngram_indexes"]))]  # distinct per n-gram
    assert_matches_onnxruntime(x, attrs)


def test_weights_of_another_length_than_ngram_indexes_are_rejected():
    x = np.array([[2, 3, 5]], np.int64)
    model = node_model("TfIdfVectorizer", {"x": x}, opset=9, mode="TFIDF", min_gram_length=1, max_gram_length=1,
                       max_skip_count=0, pool_int64s=[2, 3, 5], ngram_counts=[0], ngram_indexes=[2, 0, 1],
                       weights=[1.0, 2.0])
    with pytest.raises(Exception, match="ngram_indexes"):
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="ngram_indexes"):
        onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"]).run(None, {"x": x})
