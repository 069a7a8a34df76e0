"""Plans run as one generated function: same results as its instrumented (profiling) variant, liveness,
errors naming nodes."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug import errors
from onnxplug.executor import RunStats, run_plan
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs
from tests.conftest import make_model

F = TensorProto.FLOAT


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_generated_function_matches_step_loop_bit_for_bit(name):
    sess = ort.InferenceSession(build(name), providers=["numpy"])
    feeds = sample_inputs(name, batch=2)
    compiled = run_plan(sess.engine.plan, feeds)
    stepped = run_plan(sess.engine.plan, feeds, None, RunStats())  # the profiling path: the instrumented function
    assert list(compiled) == list(stepped)
    for key in compiled:
        np.testing.assert_array_equal(compiled[key], stepped[key], err_msg=key)


def test_intermediates_are_freed_after_their_last_reader():
    length, side = 16, 512
    nodes = [helper.make_node("Neg", [f"v{i}"], [f"v{i + 1}"], name=f"neg{i}") for i in range(length)]
    model = make_model(nodes, [("v0", F, [side, side])], [(f"v{length}", F, [side, side])])
    sess = ort.InferenceSession(model, providers=["numpy"])
    x = np.ones((side, side), np.float32)
    sess.run(None, {"v0": x})  # build the generated function outside the measurement
    tracemalloc.start()
    try:
        (y,) = sess.run(None, {"v0": x})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(y, x)  # an even number of negations
    # Keeping every intermediate would peak at 16 buffers; liveness holds two, plus the returned copy.
    assert peak <= 4 * x.nbytes, peak / x.nbytes


def _if_model_with_bad_reshape():
    shape = numpy_helper.from_array(np.array([7], np.int64), "shape")
    then_branch = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["t"], name="inner_bad_reshape")],
        "then", [], [helper.make_tensor_value_info("t", F, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"], name="inner_identity")],
        "else", [], [helper.make_tensor_value_info("e", F, None)])
    return make_model(
        [helper.make_node("If", ["c"], ["y"], name="outer_if", then_branch=then_branch,
                          else_branch=else_branch)],
        [("c", TensorProto.BOOL, []), ("x", F, ["N"])], [("y", F, None)], [shape])


def test_failure_inside_a_subgraph_names_the_inner_node():
    sess = ort.InferenceSession(_if_model_with_bad_reshape(), providers=["numpy"])
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(sess.run(None, {"c": np.array(False), "x": x})[0], x)
    with pytest.raises(errors.KernelError, match="inner_bad_reshape") as info:
        sess.run(None, {"c": np.array(True), "x": x})
    assert "outer_if" not in str(info.value)  # the inner error is raised as is, not re-wrapped


def test_missing_outer_value_is_not_blamed_on_a_kernel():
    sess = ort.InferenceSession(_if_model_with_bad_reshape(), providers=["numpy"])
    runner = sess.engine._compile_subgraph(sess.engine.model.graph.nodes[0].attr("else_branch"))
    with pytest.raises(KeyError, match="'x'"):
        runner([], {})


class _Recorder:
    """A kernel stand-in for a hand-built plan: records what it is called with."""

    wants_scope = False

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def compute(self, *args):
        self.calls.append(args)
        return self.result(*args) if self.result else None


def test_a_step_without_outputs_still_runs():
    from onnxplug.executor import Plan, Step

    provider = ort.InferenceSession(_if_model_with_bad_reshape(), providers=["numpy"]).engine.providers[0]
    double, watch = _Recorder(lambda x: x * 2), _Recorder()
    steps = [Step("double", "node", provider, ["x"], ["y"], double),
             Step("watch", "fused", provider, ["y"], [], watch)]
    plan = Plan(steps, {}, ["x"], {"y": "y"}, [])
    x = np.arange(3.0)
    np.testing.assert_array_equal(run_plan(plan, {"x": x})["y"], 2 * x)
    assert len(watch.calls) == 1
    np.testing.assert_array_equal(watch.calls[0][0], 2 * x)
