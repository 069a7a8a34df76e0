"""The zoo's comparison rules: each one, with a case that passes and one that must fail."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug_conformance.zoo.compare import compare_outputs, compare_value

f32 = np.float32


def test_floats_within_rtol_and_atol_match() -> None:
    want = np.array([1.0, -2.0, 0.5, 0.0], dtype=f32)
    got = want * f32(1 + 5e-4) + f32(5e-5)
    assert compare_outputs([got], [want]) == []


def test_floats_beyond_rtol_fail_naming_the_output_and_the_worst_value() -> None:
    want = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=f32)
    got = want.copy()
    got[1, 0] = 3.01
    problems = compare_outputs([got], [want], ["logits"])
    assert len(problems) == 1
    assert "output 'logits'" in problems[0] and "1 of 4 values" in problems[0] and "(1, 0)" in problems[0]


def test_atol_scales_with_the_largest_magnitude() -> None:
    # 0.09 off on a zero: within 1e-4 * 1000 when the output reaches 1000, not when it reaches 1
    assert compare_outputs([np.array([1000.0, 0.09], dtype=f32)], [np.array([1000.0, 0.0], dtype=f32)]) == []
    assert compare_outputs([np.array([1.0, 0.09], dtype=f32)], [np.array([1.0, 0.0], dtype=f32)]) != []
    # below 1 the scale stays 1: 2e-4 off a zero fails
    assert compare_outputs([np.array([0.5, 2e-4], dtype=f32)], [np.array([0.5, 0.0], dtype=f32)]) != []


def test_nan_matches_nan_only_and_infinities_match_themselves() -> None:
    want = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=f32)
    assert compare_outputs([want.copy()], [want]) == []
    assert compare_outputs([np.array([0.0, np.inf, -np.inf, 1.0], dtype=f32)], [want]) != []
    assert compare_outputs([np.array([np.nan, np.inf, -np.inf, np.nan], dtype=f32)], [want]) != []
    assert compare_outputs([np.array([np.nan, -np.inf, -np.inf, 1.0], dtype=f32)], [want]) != []
    # an infinity where the oracle has a finite value fails, however large the output
    assert compare_outputs([np.array([1e30, np.inf], dtype=f32)], [np.array([1e30, 1.0], dtype=f32)]) != []


def test_dtype_and_shape_must_match() -> None:
    want = np.zeros((2, 3), dtype=f32)
    assert "dtype float64, expected float32" in compare_outputs([want.astype(np.float64)], [want])[0]
    assert "shape (3, 2), expected (2, 3)" in compare_outputs([np.zeros((3, 2), dtype=f32)], [want])[0]
    assert "shape (6,)" in compare_outputs([np.zeros(6, dtype=f32)], [want])[0]


def test_output_count_must_match() -> None:
    assert compare_outputs([np.zeros(1)], [np.zeros(1), np.zeros(1)]) == ["1 outputs, expected 2"]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int8])
def test_integers_are_exact(dtype: type) -> None:
    want = np.array([0, 5, 7, 100], dtype=dtype)
    assert compare_outputs([want.copy()], [want]) == []
    got = want.copy()
    got[2] += 1
    problems = compare_outputs([got], [want])
    assert len(problems) == 1 and "(exact)" in problems[0] and "got 8, expected 7" in problems[0]


def test_quantized_integers_may_differ_by_one_not_two() -> None:
    want = np.array([0, 128, 255, 3], dtype=np.uint8)
    off_by_one = np.array([1, 127, 254, 3], dtype=np.uint8)  # across zero, down at the top: no wrap-around
    assert compare_outputs([off_by_one], [want], quantized=True) == []
    assert compare_outputs([off_by_one], [want]) != []
    off_by_two = np.array([0, 130, 255, 3], dtype=np.uint8)
    assert "by more than 1" in compare_outputs([off_by_two], [want], quantized=True)[0]


def test_quantized_models_keep_the_float_rule_for_floats() -> None:
    want = np.array([1.0, 2.0], dtype=f32)
    assert compare_outputs([want + 1], [want], quantized=True) != []


def test_booleans_and_strings_are_exact() -> None:
    flags = np.array([True, False, True])
    assert compare_outputs([flags.copy()], [flags]) == []
    assert compare_outputs([~flags], [flags]) != []
    words = np.array(["red", "green"], dtype=object)
    assert compare_outputs([np.array(["red", "green"], dtype=object)], [words]) == []
    problem = compare_outputs([np.array(["red", "Green"], dtype=object)], [words])[0]
    assert "got 'Green', expected 'green'" in problem
    # numpy's fixed-width strings are not onnxruntime's object arrays
    assert "dtype <U5" in compare_outputs([np.array(["red", "green"])], [words])[0]


def _zipmap_output(probabilities: np.ndarray) -> list[dict[int, float]]:
    """onnxruntime's output of a ZipMap (labels 0, 1, 2) over ``probabilities``: a list of dicts."""
    import onnxruntime
    from onnx import TensorProto, helper

    node = helper.make_node("ZipMap", ["p"], ["m"], domain="ai.onnx.ml", classlabels_int64s=[0, 1, 2])
    out = helper.make_value_info("m", helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))))
    graph = helper.make_graph([node], "zipmap", [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 3])],
                              [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"p": probabilities})[0]


def test_sequences_of_maps_are_compared_element_by_element() -> None:
    probabilities = np.array([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], dtype=f32)
    want = _zipmap_output(probabilities)
    assert isinstance(want, list) and isinstance(want[0], dict)
    assert compare_value(_zipmap_output(probabilities * f32(1 + 1e-4)), want, "output 'p'") == []
    moved = probabilities.copy()
    moved[1, 2] = 0.06
    problems = compare_value(_zipmap_output(moved), want, "output 'p'")
    assert len(problems) == 1 and problems[0].startswith("output 'p'[1][2]")
    assert "map keys differ" in compare_value([{0: 0.2, 1: 0.3, 5: 0.5}, want[1]], want, "o")[0]
    assert "sequence of 1, expected 2" in compare_value(want[:1], want, "o")[0]
    assert "expected a sequence" in compare_value(np.zeros(2), want, "o")[0]
    assert "expected a tensor" in compare_value(want, np.zeros(2, dtype=f32), "o")[0]
