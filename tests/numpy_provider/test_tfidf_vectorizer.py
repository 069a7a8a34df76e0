"""TfIdfVectorizer (onnx.reference's implementation through the adapter) against onnxruntime:
TF, IDF and TFIDF, n-gram ranges and skips, int32 / int64 / string input, 1-D and 2-D, empty rows."""

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
    model = node_model("TfIdfVectorizer", {"x": x}, opset=9, **attrs)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})
    ours = onnxplug.InferenceSession(with_output_types(model, expected).SerializeToString(), kernels_only(),
                                     providers=["numpy"]).run(None, {"x": x})
    assert_same(ours[0], expected[0], where="TfIdfVectorizer")
