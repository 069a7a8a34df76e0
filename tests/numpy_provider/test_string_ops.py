"""String kernels of the numpy provider against onnxruntime / onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.single_node_oracle import assert_matches_oracle, node_model, run_ours


def s(*values):
    return np.array(values, dtype=object)


@pytest.mark.parametrize("x,y", [
    (s("a", "bé", ""), s("x", "y", "z")),
    (s("a", "b").reshape(2, 1), s("1", "2", "3")),  # broadcasting
    (np.array("a", dtype=object), np.array("ü", dtype=object)),  # 0-d
])
def test_string_concat(x, y):
    assert_matches_oracle("StringConcat", {"x": x, "y": y}, oracle="ref", opset=20)


@pytest.mark.parametrize("attrs", [{}, {"delimiter": ","}, {"delimiter": "-", "maxsplit": 1}, {"delimiter": ""}])
def test_string_split(attrs):
    x = s("a,b,,c", "  one  two ", "", "x-y-z").reshape(2, 2)
    assert_matches_oracle("StringSplit", {"x": x}, oracle="ref", n_outputs=2, opset=20, **attrs)


@pytest.mark.parametrize("pattern", [r"\w+@\w+\.com", r"a.*", ""])
def test_regex_full_match(pattern):
    assert_matches_oracle("RegexFullMatch", {"x": s("ab@cd.com", "abc", "", "a@b.org").reshape(2, 2)}, oracle="ref",
          opset=20, pattern=pattern)


@pytest.mark.parametrize("attrs", [
    {"case_change_action": "LOWER", "stopwords": ["monday"], "is_case_sensitive": 0},
    {"case_change_action": "UPPER", "stopwords": ["monday"], "is_case_sensitive": 1},
    {"case_change_action": "NONE"},
    {"case_change_action": "LOWER", "stopwords": ["Monday", "tuesday", "WEDNESDAY"]},
])
@pytest.mark.parametrize("two_d", [False, True])
def test_string_normalizer(attrs, two_d):
    x = s("Monday", "tuesday", "Wednesday", "Thursday")
    assert_matches_oracle("StringNormalizer", {"x": x.reshape(1, -1) if two_d else x}, oracle="ort", opset=17, **attrs)


def test_string_normalizer_all_dropped_gives_one_empty_string():
    (y,) = assert_matches_oracle("StringNormalizer", {"x": s("a", "A").reshape(1, 2)}, oracle="ort", opset=17,
                 stopwords=["a", "A"], is_case_sensitive=1)
    assert y.shape == (1, 1) and y[0, 0] == ""


def test_string_normalizer_case_insensitive_stopwords_follow_the_spec():
    # onnxruntime needs an en_US locale here (absent on this machine) and onnx.reference compares
    # words case-sensitively; the spec drops every element equal to a stopword ignoring case.
    model = node_model("StringNormalizer", {"x": s("a", "A", "b")}, opset=17, stopwords=["a"])
    (y,) = run_ours(model, {"x": s("a", "A", "b")}, like=[s("b")])
    assert y.tolist() == ["b"]
