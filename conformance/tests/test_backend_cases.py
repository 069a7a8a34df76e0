"""Tests of ONNX backend node case generation, caching, loading and comparison.

Oracles: numpy written here (e.g. ``np.abs``), onnx's own serialisation helpers and
``onnx.reference.ReferenceEvaluator``; never the code under test.
"""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from onnxplug_conformance import backend_cases
from onnxplug_conformance.backend_cases import (
    CacheMismatchError,
    CaseGenerationError,
    NodeCase,
    compare_outputs,
    compare_random_outputs,
    ensure_cache,
    generate_cases,
    is_random_op_case,
    load_cases,
)
from onnxplug_conformance.node_case import parse_value

# Small op types covering tensors, sequences, optionals and random draws.
SAMPLE_OP_TYPES = ["Abs", "SequenceInsert", "OptionalHasElement", "Bernoulli", "Dropout"]


def _tree_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="session")
def sample_generation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample") / "cases"
    folder.mkdir()
    generate_cases(folder, SAMPLE_OP_TYPES)
    return folder


@pytest.fixture(scope="session")
def all_cases() -> dict[str, NodeCase]:
    """Every case from the real cache (generated once, ~15 s, then reused)."""
    return {case.name: case for case in load_cases()}


# --- generation ---------------------------------------------------------------------


def test_generation_is_byte_identical_across_runs(
    sample_generation: Path, tmp_path: Path
) -> None:
    second = tmp_path / "second"
    second.mkdir()
    generate_cases(second, SAMPLE_OP_TYPES)
    files = [f for f in _tree_files(sample_generation) if f != "manifest.json"]
    assert files == [f for f in _tree_files(second) if f != "manifest.json"]
    assert any(f.endswith("input_0.pb") for f in files)
    _, mismatch, errors = filecmp.cmpfiles(sample_generation, second, files, shallow=False)
    assert mismatch == [] and errors == []


def test_filtered_generation_matches_full_cache(
    sample_generation: Path, all_cases: dict[str, NodeCase]
) -> None:
    """Generating a few op types gives the same bytes as the full generation."""
    full_root = next(iter(all_cases.values())).model_path.parent.parent
    sample_cases = sorted(p.name for p in sample_generation.iterdir() if p.is_dir())
    assert "test_abs" in sample_cases and "test_bernoulli_expanded" in sample_cases
    for name in sample_cases:
        files = _tree_files(sample_generation / name)
        _, mismatch, errors = filecmp.cmpfiles(
            sample_generation / name, full_root / name, files, shallow=False
        )
        assert (mismatch, errors) == ([], []), name


def test_unknown_op_type_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(CaseGenerationError, match="NoSuchOp"):
        generate_cases(tmp_path, ["NoSuchOp"])


# --- cache --------------------------------------------------------------------------


def test_cache_is_reused_without_regenerating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "onnx-test"
    first = load_cases(cache, op_types=["Abs"])
    manifest_before = (cache / "manifest.json").read_bytes()

    def refuse(*args: object, **kwargs: object) -> int:
        raise AssertionError("cache was regenerated")

    monkeypatch.setattr(backend_cases, "_run_generator", refuse)
    second = load_cases(cache, op_types=["Abs"])
    assert [c.name for c in second] == [c.name for c in first] == ["test_abs"]
    assert (cache / "manifest.json").read_bytes() == manifest_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["onnx-test"]  # no temp leftovers


def test_cache_for_other_op_types_is_not_reused(tmp_path: Path) -> None:
    cache = tmp_path / "onnx-test"
    ensure_cache(cache, op_types=["Abs"])
    with pytest.raises(CacheMismatchError, match="Abs"):
        load_cases(cache)


def test_interrupted_generation_leaves_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(output_dir: Path, op_type: str | None) -> int:
        (output_dir / "test_half_written").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(backend_cases, "_run_generator", crash)
    with pytest.raises(KeyboardInterrupt):
        ensure_cache(tmp_path / "onnx-test", op_types=["Abs"])
    assert list(tmp_path.iterdir()) == []


def test_default_cache_dir_is_keyed_by_onnx_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONNXPLUG_CACHE_DIR", "/somewhere")
    expected = Path("/somewhere/node-tests") / f"onnx-{onnx.__version__}"
    assert backend_cases.default_cache_dir() == expected


# --- loading ------------------------------------------------------------------------


def test_full_cache_holds_all_node_cases(all_cases: dict[str, NodeCase]) -> None:
    assert len(all_cases) > 1800


def test_loaded_case_matches_numpy(all_cases: dict[str, NodeCase]) -> None:
    case = all_cases["test_abs"]
    data = case.data_sets[0]
    x = data.inputs["x"]
    assert x.dtype == np.float32 and x.shape == (3, 4, 5)
    np.testing.assert_array_equal(data.outputs["y"], np.abs(x))
    assert (case.rtol, case.atol) == (1e-3, 1e-7)
    assert case.model_path.name == "model.onnx" and case.model_path.is_file()


def test_sequences_and_optionals_load_as_python_values(all_cases: dict[str, NodeCase]) -> None:
    sequence = all_cases["test_sequence_insert_at_back"].data_sets[0]
    assert isinstance(sequence.inputs["sequence"], list)
    empty = all_cases["test_optional_has_element_empty_optional_input"].data_sets[0]
    assert list(empty.inputs.values()) == [None]
    np.testing.assert_array_equal(empty.expected_outputs[0], np.array(False))


def test_map_values_round_trip() -> None:
    value = {1: np.array(2.5, dtype=np.float32), 7: np.array(-1.0, dtype=np.float32)}
    payload = numpy_helper.from_dict(value, "m").SerializeToString()
    map_type = onnx.helper.make_map_type_proto(
        onnx.TensorProto.INT64, onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [])
    )
    loaded = parse_value(payload, map_type, Path("m.pb"))
    assert sorted(loaded) == [1, 7]
    compare_outputs([value], [loaded], rtol=0, atol=0)


# --- compare_outputs ----------------------------------------------------------------

REF = np.array([1.0, 2.0, np.nan], dtype=np.float32)


def test_accepts_equal_values_with_nan() -> None:
    compare_outputs([REF], [REF.copy()], rtol=1e-3, atol=1e-7)


def test_accepts_difference_within_tolerance() -> None:
    compare_outputs([REF], [REF * np.float32(1.0005)], rtol=1e-3, atol=1e-7)


def test_rejects_wrong_value() -> None:
    actual = np.array([1.0, 2.1, np.nan], dtype=np.float32)
    with pytest.raises(AssertionError, match="output 0: values differ"):
        compare_outputs([REF], [actual], rtol=1e-3, atol=1e-7)


def test_rejects_nan_against_number() -> None:
    actual = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    with pytest.raises(AssertionError, match="output 0"):
        compare_outputs([REF], [actual], rtol=1e-3, atol=1e-7)


def test_rejects_wrong_dtype() -> None:
    with pytest.raises(AssertionError, match="incorrect dtype: expected float32, got float64"):
        compare_outputs([REF], [REF.astype(np.float64)], rtol=1e-3, atol=1e-7)


def test_rejects_wrong_shape() -> None:
    with pytest.raises(AssertionError, match=r"incorrect shape: expected \(3,\), got \(1, 3\)"):
        compare_outputs([REF], [REF.reshape(1, 3)], rtol=1e-3, atol=1e-7)


def test_rejects_wrong_output_count() -> None:
    with pytest.raises(AssertionError, match="expected 2 outputs, got 1"):
        compare_outputs([REF, REF], [REF], rtol=1e-3, atol=1e-7)


def test_integers_bools_and_strings() -> None:
    ints = np.array([1, 5], dtype=np.int64)
    compare_outputs([ints], [ints.copy()], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError):
        compare_outputs([ints], [np.array([1, 6], dtype=np.int64)], rtol=1e-3, atol=1e-7)
    bools = np.array([True, False])
    with pytest.raises(AssertionError):
        compare_outputs([bools], [~bools], rtol=1e-3, atol=1e-7)
    words = np.array(["a", "b"], dtype=object)
    compare_outputs([words], [np.array(["a", "b"], dtype=object)], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError):
        compare_outputs([words], [np.array(["a", "c"], dtype=object)], rtol=1e-3, atol=1e-7)


def test_sequences_and_optionals() -> None:
    items = [np.array([1.0], dtype=np.float32), np.array(3, dtype=np.int64)]
    compare_outputs([items], [[a.copy() for a in items]], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError, match="sequence of 2 items, got 1"):
        compare_outputs([items], [items[:1]], rtol=1e-3, atol=1e-7)
    compare_outputs([None], [None], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError, match="empty optional"):
        compare_outputs([None], [REF], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError, match="empty optional"):
        compare_outputs([REF], [None], rtol=1e-3, atol=1e-7)


def test_ml_dtypes() -> None:
    ref = np.array([1.0, 2.0, np.nan], dtype=ml_dtypes.bfloat16)
    # One bfloat16 ULP at 2.0 is 2**-6 relative: accepted like onnx's runner does.
    near = np.array([1.0, 2.015625, np.nan], dtype=ml_dtypes.bfloat16)
    compare_outputs([ref], [near], rtol=1e-3, atol=1e-7)
    far = np.array([1.0, 2.25, np.nan], dtype=ml_dtypes.bfloat16)
    with pytest.raises(AssertionError):
        compare_outputs([ref], [far], rtol=1e-3, atol=1e-7)
    f8 = np.array([0.5, np.nan], dtype=ml_dtypes.float8_e4m3fn)
    compare_outputs([f8], [f8.copy()], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError):
        compare_outputs([f8], [np.array([0.5625, np.nan], dtype=ml_dtypes.float8_e4m3fn)], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="dtype"):
        compare_outputs([f8], [f8.astype(ml_dtypes.float8_e5m2)], rtol=1e-3, atol=1e-7)
    i4 = np.array([-8, 7], dtype=ml_dtypes.int4)
    compare_outputs([i4], [i4.copy()], rtol=1e-3, atol=1e-7)
    with pytest.raises(AssertionError):
        compare_outputs([i4], [np.array([-8, 6], dtype=ml_dtypes.int4)], rtol=1e-3, atol=1e-7)
    f4 = np.array([0.5, 6.0], dtype=ml_dtypes.float4_e2m1fn)
    with pytest.raises(AssertionError):
        compare_outputs([f4], [np.array([0.5, 4.0], dtype=ml_dtypes.float4_e2m1fn)], 1e-3, 1e-7)


# --- random ops ---------------------------------------------------------------------


def test_random_cases_are_recognised(all_cases: dict[str, NodeCase]) -> None:
    random_names = sorted(name for name, case in all_cases.items() if is_random_op_case(case))
    assert "test_bernoulli_seed_expanded" in random_names
    assert "test_training_dropout_mask" in random_names
    assert "test_training_dropout_zero_ratio" not in random_names  # ratio 0: deterministic
    assert "test_dropout_default" not in random_names  # inference mode
    assert "test_abs" not in random_names


@pytest.mark.parametrize("name", ["test_bernoulli_double", "test_training_dropout_mask"])
def test_random_outputs_checked_by_range(all_cases: dict[str, NodeCase], name: str) -> None:
    from onnx.reference import ReferenceEvaluator

    case = all_cases[name]
    data = case.data_sets[0]
    actual = ReferenceEvaluator(str(case.model_path)).run(None, dict(data.inputs))
    compare_random_outputs(case, data, actual)
    broken = [np.full_like(actual[0], 2.0), *actual[1:]]
    with pytest.raises(AssertionError, match=name):
        compare_random_outputs(case, data, broken)
    with pytest.raises(AssertionError, match="shape"):
        compare_random_outputs(case, data, [actual[0][:1], *actual[1:]])


def test_baseline_outcomes_file_is_json(tmp_path: Path, all_cases: dict[str, NodeCase]) -> None:
    from onnxplug_conformance import baseline

    cases = [all_cases["test_abs"], all_cases["test_scatter_with_axis"]]
    outcomes = {case.name: baseline.run_case(case, baseline.reference_engine) for case in cases}
    path = tmp_path / "outcomes.json"
    baseline.write_outcomes(path, "reference", outcomes)
    document = json.loads(path.read_text())
    assert document["cases"]["test_abs"]["outcome"] == "pass"
    assert document["cases"]["test_scatter_with_axis"]["outcome"] == "error"
    assert document["counts"]["total"] == 2 and document["counts"]["pass"] == 1


def _single_node_case(tmp_path: Path, node: onnx.NodeProto, x: np.ndarray, out_type: int,
                      out_shape: list[int], expected: np.ndarray | None = None) -> NodeCase:
    """A hand-built case for random ops the onnx node suite has no case for.

    The stored expected output is one valid draw (ReferenceEvaluator's unless given).
    """
    from onnxplug_conformance.node_case import DataSet

    graph = onnx.helper.make_graph(
        [node], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
        [onnx.helper.make_tensor_value_info("y", out_type, out_shape)],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 22)])
    model.ir_version = 10
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    from onnx.reference import ReferenceEvaluator

    if expected is None:
        expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    return NodeCase("test_hand_built", path, (DataSet({"x": x}, {"y": expected}),))


def test_random_uniform_like_range(tmp_path: Path) -> None:
    node = onnx.helper.make_node("RandomUniformLike", ["x"], ["y"], low=2.0, high=3.0)
    x = np.zeros((4, 5), dtype=np.float32)
    case = _single_node_case(tmp_path, node, x, onnx.TensorProto.FLOAT, [4, 5])
    assert is_random_op_case(case)
    data = case.data_sets[0]
    compare_random_outputs(case, data, [np.full((4, 5), 2.5, dtype=np.float32)])
    with pytest.raises(AssertionError, match=r"outside \[2.0, 3.0\]"):
        compare_random_outputs(case, data, [np.full((4, 5), 3.5, dtype=np.float32)])


def test_multinomial_range(tmp_path: Path) -> None:
    node = onnx.helper.make_node("Multinomial", ["x"], ["y"], sample_size=6)
    x = np.log(np.full((2, 3), 1 / 3, dtype=np.float32))
    # ReferenceEvaluator has no Multinomial; the spec fixes shape (batch, sample_size)
    # and dtype int32, so any in-range draw serves as the stored expectation.
    draw = np.zeros((2, 6), dtype=np.int32)
    case = _single_node_case(tmp_path, node, x, onnx.TensorProto.INT32, [2, 6], draw)
    data = case.data_sets[0]
    compare_random_outputs(case, data, [np.array([[0, 1, 2] * 2] * 2, dtype=np.int32)])
    with pytest.raises(AssertionError, match=r"outside \[0, 3\)"):
        compare_random_outputs(case, data, [np.full((2, 6), 3, dtype=np.int32)])
