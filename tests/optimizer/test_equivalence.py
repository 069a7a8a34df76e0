"""Equivalence at every level: the model suite (against level 0 and onnxruntime) and the ONNX backend
node tests (against their expected outputs, for every case that passes with the optimizer off)."""

from __future__ import annotations

import sys
import warnings
from functools import lru_cache
from pathlib import Path

import pytest

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs
from tests.optimizer.util import assert_close, ort_run

LEVELS = [ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
          ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT, ort.GraphOptimizationLevel.ORT_ENABLE_ALL]


def _session(source, level) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    return ort.InferenceSession(source, so)


@lru_cache(maxsize=None)
def _reference(name: str) -> tuple:
    proto, feeds = build(name), sample_inputs(name, batch=2)
    unoptimized = _session(proto, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    return proto, feeds, unoptimized.run(None, feeds), ort_run(proto, feeds), len(unoptimized.engine.model.graph.nodes)


@pytest.mark.parametrize("level", LEVELS, ids=[lv.name for lv in LEVELS])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_suite_model_gives_same_outputs_at_every_level(name, level):
    proto, feeds, level0, onnxruntime_out, nodes0 = _reference(name)
    sess = _session(proto, level)
    out = sess.run(None, feeds)
    assert_close(out, level0)
    assert_close(out, onnxruntime_out)
    assert len(sess.engine.model.graph.nodes) <= nodes0


def _backend_cases():
    root = Path(__file__).resolve().parents[2] / "conformance" / "src"
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        from onnxplug_conformance.backend_cases import compare_outputs, is_random_op_case, load_cases
    except ImportError as e:  # pragma: no cover - the conformance package is part of the repository
        pytest.skip(f"conformance package not importable: {e}")
    return [c for c in load_cases() if not is_random_op_case(c)], compare_outputs


def _run_case(case, level, compare_outputs) -> int:
    sess = _session(str(case.model_path), level)
    for data in case.data_sets:
        compare_outputs(data.expected_outputs, sess.run(None, data.inputs), case.rtol, case.atol)
    return len(sess.engine.model.graph.nodes)


@pytest.fixture(scope="module")
def passing_backend_cases():
    """The backend cases onnxplug passes with the optimizer off, with their node counts."""
    cases, compare = _backend_cases()
    passing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            try:
                passing.append((case, _run_case(case, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, compare)))
            except Exception:
                continue  # a kernel gap, not the optimizer's business
    assert len(passing) > 1000
    return passing, compare


@pytest.mark.parametrize("level", [LEVELS[0], LEVELS[1], LEVELS[3]], ids=["BASIC", "EXTENDED", "ALL"])
def test_backend_node_tests_give_same_outputs_at_every_level(passing_backend_cases, level):
    passing, compare = passing_backend_cases
    failures, rewritten = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case, nodes0 in passing:
            try:
                rewritten += _run_case(case, level, compare) != nodes0
            except Exception as e:
                failures.append(f"{case.name}: {type(e).__name__}: {str(e)[:300]}")
    assert not failures, "\n".join(failures[:20])
    assert rewritten > 100  # the expanded (function-body) cases give the passes real work


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_saved_suite_model_runs_in_onnxruntime_with_same_outputs(name, tmp_path):
    import onnx

    proto, feeds, _, onnxruntime_out, _ = _reference(name)
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / f"{name}.onnx")
    ort.InferenceSession(proto, so)
    saved = onnx.load(so.optimized_model_filepath)
    onnx.checker.check_model(saved)
    assert_close(ort_run(saved, feeds), onnxruntime_out)
