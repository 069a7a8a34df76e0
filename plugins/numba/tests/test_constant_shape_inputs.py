"""Shape ops whose axes, target shape or slice bounds are initializers (read once per kernel) match
onnxruntime, as the same ops with those inputs fed at run time do."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def _both(op, x, consts, **attrs):
    """The op with ``consts`` as initializers and, separately, as feeds."""
    as_inits = node_model(op, {"x": x}, initializers=consts, **attrs)
    as_feeds = node_model(op, {"x": x, **consts}, **attrs)
    for model, feeds in ((as_inits, {"x": x}), (as_feeds, {"x": x, **consts})):
        got, _ = run_numba(model, feeds)
        assert_close(got, run_onnxruntime(model, feeds))


@pytest.mark.parametrize("axes", [[0], [3], [1, 0], [0, 4], [-1], [2, -1]])
def test_unsqueeze(axes):
    _both("Unsqueeze", X, {"axes": np.array(axes, np.int64)})


def test_unsqueeze_attribute_axes_below_opset_13():
    model = node_model("Unsqueeze", {"x": X}, opset=11, axes=[3, 0])
    got, _ = run_numba(model, {"x": X})
    assert_close(got, run_onnxruntime(model, {"x": X}))


def _rank_unknown(op, consts):
    """The op on an input of unknown rank, so shape inference cannot refuse the constants first."""
    model = node_model(op, {"x": X}, initializers=consts)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    del model.graph.value_info[:]
    return model


@pytest.mark.parametrize("axes", [[5], [0, 0]])
def test_unsqueeze_refuses_bad_constant_axes(axes):
    model = _rank_unknown("Unsqueeze", {"axes": np.array(axes, np.int64)})
    with pytest.raises(Exception, match="axes|out of range"):
        run_numba(model, {"x": X})


@pytest.mark.parametrize("shape", [[6, 4], [-1, 2], [0, 12], [2, 0, -1], [24]])
def test_reshape(shape):
    _both("Reshape", X, {"shape": np.array(shape, np.int64)})


def test_reshape_allowzero():
    x = np.zeros((0, 3), np.float32)
    _both("Reshape", x, {"shape": np.array([3, 0], np.int64)}, allowzero=1)


@pytest.mark.parametrize("bounds", [
    ([0], [2], None, None), ([1], [-1], [2], None), ([0, 3], [1, -5], [0, 2], [1, -1]),
    ([-2], [2**31 - 1], [-1], [1]), ([2], [0], [1], [-1])])
def test_slice(bounds):
    starts, ends, axes, steps = bounds
    consts = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
    if axes is not None:
        consts["axes"] = np.array(axes, np.int64)
    if steps is not None:
        consts["steps"] = np.array(steps, np.int64)
    _both("Slice", X, consts)


@pytest.mark.parametrize("x_shape, shape", [((3, 1), [2, 3, 4]), ((2, 3, 4), [1, 1]), ((1,), [3]),
                                            ((2, 1, 4), [1, 5, 1]), ((3, 1), [0, 1, 1]), ((), [2, 2])])
def test_expand(x_shape, shape):
    x = np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    _both("Expand", x, {"shape": np.array(shape, np.int64)})


def test_expand_refuses_shapes_that_do_not_broadcast():
    model = _rank_unknown("Expand", {"shape": np.array([2, 5, 4], np.int64)})
    with pytest.raises(Exception, match="does not broadcast"):
        run_numba(model, {"x": X})


@pytest.mark.parametrize("axis, split", [(0, [1, 1]), (2, [1, 3, 0]), (-1, [2, 2])])
def test_split(axis, split):
    model_inputs = {"split": np.array(split, np.int64)}
    as_inits = node_model("Split", {"x": X}, len(split), initializers=model_inputs, axis=axis)
    as_feeds = node_model("Split", {"x": X, **model_inputs}, len(split), axis=axis)
    for model, feeds in ((as_inits, {"x": X}), (as_feeds, {"x": X, **model_inputs})):
        got, _ = run_numba(model, feeds)
        assert_close(got, run_onnxruntime(model, feeds))
