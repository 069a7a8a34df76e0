"""onnxplug.geometry against onnxruntime: output shapes, and the values of naive pools, convs and
transposed convs laid out by the module's pads (onnx.reference where onnxruntime refuses the case),
over a grid of sizes, strides, dilations, pads,
auto_pad and ceil_mode. Inputs are small integers, so every sum is exact and values match bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from onnxplug.geometry import (
    ShapeError,
    conv_transpose_pads,
    decode_auto_pad,
    output_size,
    resolve_pads,
    slice_bounds,
    window_geometry,
)


def _ort(op: str, inputs: dict[str, np.ndarray], reference: bool = False, **attrs) -> np.ndarray:
    """The op's output from onnxruntime, or with ``reference`` from onnx.reference."""
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                                            for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    if reference:
        return ReferenceEvaluator(model).run(None, inputs)[0]
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def _ints(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, size=shape).astype(np.float32)


def _taps(g, position: tuple[int, ...]):
    """Input positions of the window at output ``position`` (may lie in the padding)."""
    for tap in itertools.product(*(range(k) for k in g.kernel)):
        yield tuple(o * s + t * d - b for o, s, t, d, b in zip(position, g.strides, tap, g.dilations, g.begin))


def _inside(index: tuple[int, ...], sizes) -> bool:
    return all(0 <= i < n for i, n in zip(index, sizes))


def _max_pool(x: np.ndarray, g) -> np.ndarray:
    y = np.empty(x.shape[:2] + g.out, np.float32)
    for position in np.ndindex(*g.out):
        taps = [t for t in _taps(g, position) if _inside(t, x.shape[2:])]
        y[(Ellipsis, *position)] = np.max(np.stack([x[(Ellipsis, *t)] for t in taps]), axis=0)
    return y


_POOL_CASES = [
    (size, k, s, d, pads, ceil)
    for size in (5, 7, 8)
    for k, s, d in ((1, 1, 1), (2, 2, 1), (3, 1, 1), (3, 2, 1), (3, 3, 1), (2, 1, 2), (3, 2, 2))
    for pads in ((0, 0), (1, 0), (0, 1), (1, 1))
    if max(pads) < k
    for ceil in (0, 1)
]


@pytest.mark.parametrize("size,k,s,d,pads,ceil", _POOL_CASES)
def test_pool_notset_matches_onnxruntime(size, k, s, d, pads, ceil):
    x = _ints((1, 2, size, size + 1), size + k + s)
    kernel, strides, dilations, flat = [k, k], [s, s], [d, d], [pads[0], pads[0], pads[1], pads[1]]
    expected = _ort("MaxPool", {"x": x}, kernel_shape=kernel, strides=strides, dilations=dilations, pads=flat,
                    ceil_mode=ceil)
    g = window_geometry(x.shape[2:], kernel, strides, dilations, "NOTSET", flat, bool(ceil))
    assert expected.shape[2:] == g.out
    np.testing.assert_array_equal(_max_pool(x, g), expected)


@pytest.mark.parametrize("auto_pad", ["VALID", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("size,k,s", [(5, 2, 1), (5, 3, 2), (6, 3, 2), (7, 2, 3), (8, 4, 3), (4, 3, 1)])
def test_pool_auto_pad_matches_onnxruntime(auto_pad, size, k, s):
    x = _ints((1, 1, size), size * k + s)
    expected = _ort("MaxPool", {"x": x}, kernel_shape=[k], strides=[s], auto_pad=auto_pad)
    g = window_geometry([size], [k], [s], None, auto_pad)
    assert expected.shape[2:] == g.out
    np.testing.assert_array_equal(_max_pool(x, g), expected)


@pytest.mark.parametrize("size,k,s,pads", [(8, 3, 2, (0, 0)), (6, 2, 2, (0, 1)), (5, 2, 2, (0, 1)),
                                         (9, 3, 3, (1, 2)), (4, 3, 3, (2, 2))])
def test_ceil_mode_windows_and_tail_padding(size, k, s, pads):
    """The count (a last window starting in the end padding is dropped, onnxruntime's shape) and
    the tail padding ``extra`` that lets the last window fit."""
    x = _ints((1, 1, size), size)
    expected = _ort("MaxPool", {"x": x}, kernel_shape=[k], strides=[s], pads=list(pads), ceil_mode=1)
    assert output_size(size, k, s, 1, *pads, ceil_mode=True) == expected.shape[2]
    g = window_geometry([size], [k], [s], None, "NOTSET", list(pads), True)
    last_reach = (g.out[0] - 1) * s + k
    assert g.extra[0] == max(0, last_reach - (size + sum(pads)))


def test_average_pool_tap_counts_match_onnxruntime():
    x = np.ones((1, 1, 6, 5), np.float32)
    for include in (0, 1):
        kw = dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1)
        sums = _ort("AveragePool", {"x": x}, **kw, count_include_pad=include)
        g = window_geometry(x.shape[2:], [3, 2], [2, 2], None, "NOTSET", [1, 0, 1, 1], True)
        # over ones, each output is (taps in the input) / (taps counted)
        inside = g.tap_counts(False)
        np.testing.assert_allclose(inside / np.maximum(g.tap_counts(bool(include)), 1), sums[0, 0], rtol=1e-6)


def _conv(x: np.ndarray, w: np.ndarray, g) -> np.ndarray:
    y = np.zeros((x.shape[0], w.shape[0]) + g.out, np.float64)
    for position in np.ndindex(*g.out):
        for tap_index, t in zip(itertools.product(*(range(k) for k in g.kernel)), _taps(g, position)):
            if _inside(t, x.shape[2:]):
                y[(Ellipsis, *position)] += x[(Ellipsis, *t)] @ w[(slice(None), slice(None), *tap_index)].T
    return y.astype(np.float32)


@pytest.mark.parametrize("auto_pad", ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("size,k,s,d", [(5, 3, 1, 1), (6, 3, 2, 1), (7, 2, 2, 2), (8, 3, 3, 2), (5, 4, 2, 1),
                                        (9, 3, 2, 3)])
def test_conv_matches_onnxruntime(auto_pad, size, k, s, d):
    x, w = _ints((1, 2, size, size - 1), size), _ints((3, 2, k, k), k)
    kw = dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], auto_pad=auto_pad)
    pads = [1, 0, 0, 1] if auto_pad == "NOTSET" else None
    if pads:
        kw["pads"] = pads
    # onnxruntime refuses dilated SAME convolutions: the ONNX reference is the oracle there
    expected = _ort("Conv", {"x": x, "w": w}, d > 1 and auto_pad.startswith("SAME"), **kw)
    begin, end = resolve_pads(auto_pad, x.shape[2:], [k, k], [s, s], [d, d], pads)
    g = window_geometry(x.shape[2:], [k, k], [s, s], [d, d], auto_pad, pads)
    assert (g.begin, g.end) == (begin, end)
    assert expected.shape[2:] == g.out
    np.testing.assert_array_equal(_conv(x, w, g), expected)


def _conv_transpose(x: np.ndarray, w: np.ndarray, strides, dilations, begin, out) -> np.ndarray:
    full = [s * (i - 1) + (k - 1) * d + 1 for s, i, k, d in zip(strides, x.shape[2:], w.shape[2:], dilations)]
    canvas = np.zeros((x.shape[0], w.shape[1]) + tuple(max(f, b + o) for f, b, o in zip(full, begin, out)))
    for pos in np.ndindex(*x.shape[2:]):
        for tap in np.ndindex(*w.shape[2:]):
            target = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, dilations))
            canvas[(Ellipsis, *target)] += x[(Ellipsis, *pos)] @ w[(slice(None), slice(None), *tap)]
    return canvas[(Ellipsis, *(slice(b, b + o) for b, o in zip(begin, out)))].astype(np.float32)


_TRANSPOSE_CASES = [
    dict(),
    dict(strides=[2], pads=[1, 0]),
    dict(strides=[3], dilations=[2], pads=[0, 2]),
    dict(strides=[2], output_padding=[1]),
    dict(strides=[2], auto_pad="SAME_UPPER"),
    dict(strides=[2], auto_pad="SAME_LOWER"),
    dict(strides=[3], auto_pad="SAME_UPPER", dilations=[2]),
    dict(strides=[2], output_shape=[12]),
    dict(strides=[2], output_shape=[11], pads=[0, 0]),
    dict(strides=[3], output_shape=[14], auto_pad="SAME_UPPER"),
]


@pytest.mark.parametrize("attrs", _TRANSPOSE_CASES, ids=[str(sorted(c.items())) for c in _TRANSPOSE_CASES])
def test_conv_transpose_matches_onnxruntime(attrs):
    x, w = _ints((1, 2, 5), 1), _ints((2, 3, 3), 2)
    expected = _ort("ConvTranspose", {"x": x, "w": w}, **attrs)
    strides, dilations = attrs.get("strides", [1]), attrs.get("dilations", [1])
    begin, end, out = conv_transpose_pads(x.shape[2:], [3], strides, dilations, attrs.get("output_padding"),
                                          attrs.get("auto_pad", "NOTSET"), attrs.get("pads"),
                                          attrs.get("output_shape"))
    assert expected.shape[2:] == out
    np.testing.assert_array_equal(_conv_transpose(x, w, strides, dilations, begin, out), expected)


def test_a_window_larger_than_the_padded_input_is_refused_as_by_onnxruntime():
    x = _ints((1, 1, 2), 0)
    with pytest.raises(Exception, match="negative"):
        _ort("MaxPool", {"x": x}, kernel_shape=[4])
    g = window_geometry([2], [4])
    assert g.out == (0,)
    with pytest.raises(ShapeError, match="node 'p': window 4 .* padded input size 2"):
        g.require_windows("node 'p'")
    # with ceil_mode one window still starts inside the input: onnxruntime computes it
    g = window_geometry([2], [4], [2], None, "NOTSET", [0, 1], True)
    assert g.out == _ort("MaxPool", {"x": x}, kernel_shape=[4], strides=[2], pads=[0, 1], ceil_mode=1).shape[2:]
    g.require_windows("node 'p'")


def test_bad_attributes_raise_shape_error_naming_them():
    with pytest.raises(ShapeError, match="auto_pad 'SAME'"):
        resolve_pads("SAME", [4], [2])
    with pytest.raises(ShapeError, match="strides"):
        window_geometry([4, 4], [2, 2], [1])
    with pytest.raises(ShapeError, match="pads"):
        resolve_pads("NOTSET", [4], [2], pads=[1, 1, 1])
    assert decode_auto_pad(b"SAME_LOWER") == "SAME_LOWER" and decode_auto_pad(None) == "NOTSET"


def test_slice_bounds_match_onnxruntime():
    """Every start/end/step combination around and past the ends of short axes, as one Slice model
    with the bounds fed, against ``x[slice_bounds(...)]``. Where onnxruntime 1.32 and onnx.reference
    disagree (98 of the 1,728 cases, all with negative steps) the result is one of theirs."""
    g = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.INT64, ["n"]),
                           *(helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in "seat")],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = ReferenceEvaluator(m)
    bounds = [-2**63, -9, -6, -5, -1, 0, 1, 4, 5, 6, 9, 2**63 - 1]
    one = lambda v: np.array([v], np.int64)  # noqa: E731
    agreed = 0
    for dim in (0, 1, 5):
        x = np.arange(dim, dtype=np.int64)
        for start, end, step in itertools.product(bounds, bounds, (-3, -1, 1, 2)):
            feeds = {"x": x, "s": one(start), "e": one(end), "a": one(0), "t": one(step)}
            ours = x[slice_bounds(start, end, step, dim)].tolist()
            theirs = sess.run(None, feeds)[0].tolist(), reference.run(None, feeds)[0].tolist()
            agreed += theirs[0] == theirs[1]
            assert ours in theirs, f"dim {dim}, start {start}, end {end}, step {step}: {ours} not in {theirs}"
    assert agreed == 1630  # the oracles themselves disagree on the other 98
