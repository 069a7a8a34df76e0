"""Layout transformation: a provider asking for channels-last gets NHWC ops, with Transposes only
at the boundaries of each NHWC region."""

from __future__ import annotations

import onnx
import pytest

import onnxplug as ort
from onnxplug.ir import load_model
from onnxplug.optimizer import optimize_model
from onnxplug.plugins import get_catalog
from onnxplug.providers.numpy import NumpyProvider
from tests.optimizer.providers import ChannelsLastProvider
from tests.optimizer.util import F, assert_close, model, node, op_types, ort_run, rand


def _conv_net() -> onnx.ModelProto:
    inits = {"w1": rand(4, 3, 3, 3), "w2": rand(4, 4, 3, 3, seed=1), "b2": rand(4, seed=2), "k": rand(1, 4, 1, 1, seed=3)}
    return model([node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
                  node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
                  node("Add", ["c2", "r1"], ["s"]),  # a residual in the middle of the region
                  node("Mul", ["s", "k"], ["sk"]),  # a per-channel constant: permuted with the data
                  node("Relu", ["sk"], ["r2"]), node("GlobalAveragePool", ["r2"], ["y"])],
                 [("x", F, ["n", 3, 8, 8])], [("y", F, ["n", 4, 1, 1])], inits)


@pytest.fixture
def nhwc_provider():
    get_catalog().register(ChannelsLastProvider, "tests")
    yield
    get_catalog().providers.pop("nhwc_test", None)


def test_transposes_only_at_region_boundaries():
    m = load_model(_conv_net())
    reports = {r.name: r for r in optimize_model(m, 99, [ChannelsLastProvider(), NumpyProvider()])}
    counts = op_types(m)
    assert counts["com.onnxplug.nhwc:Conv"] == 2
    assert counts["Transpose"] == 2  # into NHWC before the first Conv, back before GlobalAveragePool
    assert reports["LayoutTransform"].counts == {"nhwc": 2}
    assert reports["TransposeOptimization"].counts["cancelled"] >= 1
    first, last = m.graph.nodes[0], [n for n in m.graph.nodes if n.op_type == "Transpose"][-1]
    assert first.op_type == "Transpose" and first.inputs == ["x"]
    assert m.graph.nodes[-1].op_type == "GlobalAveragePool" and m.graph.nodes[-1].inputs == last.outputs


def test_channels_last_model_runs_on_the_provider_and_saves_portably(nhwc_provider, tmp_path):
    proto = _conv_net()
    feeds = {"x": rand(2, 3, 8, 8, seed=9)}
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "nhwc.onnx")
    sess = ort.InferenceSession(proto, so, providers=["nhwc_test"])
    on_provider = [(a.op_type, a.provider) for a in sess.get_node_assignments() if a.provider == "nhwc_test"]
    assert on_provider == [("Conv", "nhwc_test")] * 2
    expected = ort_run(proto, feeds)
    assert_close(sess.run(None, feeds), expected)
    assert_close(ort_run(onnx.load(str(tmp_path / "nhwc.onnx")), feeds), expected)


def test_no_layout_change_without_a_provider_asking():
    """The numpy provider asks channels-last only around depthwise convolutions: none here."""
    m = load_model(_conv_net())
    optimize_model(m, 99, [NumpyProvider()])
    assert not any(n.domain == "com.onnxplug.nhwc" or n.op_type == "Transpose" for n in m.graph.nodes)


def test_layout_level_is_needed():
    m = load_model(_conv_net())
    optimize_model(m, int(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED), [ChannelsLastProvider(), NumpyProvider()])
    assert "com.onnxplug.nhwc:Conv" not in op_types(m)


def test_transpose_pairs_cancel_merge_or_stay():
    from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
    from onnxplug.optimizer.passes.transpose_optimization import TransposeOptimization
    from tests.optimizer.util import assert_equivalent, run_passes

    proto = model([node("Transpose", ["x"], ["t1"], perm=[0, 2, 3, 1]), node("Relu", ["t1"], ["r"]),
                   node("Transpose", ["r"], ["a"], perm=[0, 3, 1, 2]),  # inverse after Relu: cancels
                   node("Transpose", ["x"], ["t2"], perm=[1, 0, 2, 3]),
                   node("Transpose", ["t2"], ["b"], perm=[0, 2, 1, 3]),  # not inverse: merged into one
                   node("Transpose", ["x"], ["t3"], perm=[0, 2, 3, 1]), node("Neg", ["t3"], ["c"]),
                   node("Sigmoid", ["t3"], ["d"])],  # t3 read twice: not pushed
                  [("x", F, [1, 2, 3, 4])],
                  [("a", F, [1, 2, 3, 4]), ("b", F, [3, 2, 1, 4]), ("c", F, [1, 3, 4, 2]), ("d", F, [1, 3, 4, 2])])
    m, reports = run_passes(proto, TransposeOptimization, DeadNodeElimination)
    counts = reports["TransposeOptimization"].counts
    assert counts["cancelled"] == 1 and counts["merged"] == 1
    assert op_types(m) == {"Relu": 1, "Transpose": 2, "Neg": 1, "Sigmoid": 1}
    assert_equivalent(proto, m, {"x": rand(1, 2, 3, 4)})
