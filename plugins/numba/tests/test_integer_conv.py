"""ConvInteger, QLinearConv, QLinearAdd and QLinearGlobalAveragePool on the numba provider against
onnxruntime (bitwise): 8-bit type combinations, zero points, per-channel scales, bias, pads,
strides, dilations, auto_pad, groups and depthwise, 1-D, batches, both integer kernels (VNNI and
int16) and the thread split."""

from __future__ import annotations

import numpy as np
import onnxplug as ort
import pytest
from numba_test_helpers import (
    assert_node_on_numba_matches,
    node_model,
    run_numba,
    run_onnxruntime,
)
from onnxplug_numba.kernels import int_conv as kic
from onnxplug_numba.kernels import vnni
from onnxplug_numba.ops import op_integer_conv
from onnxplug_numba.threads import ThreadControl

MS = "com.microsoft"


@pytest.fixture(params=["vnni", "int16"])
def kernel(request, monkeypatch):  # type: ignore[no-untyped-def]
    """Each test runs on both integer kernels (VNNI only where the CPU has it); the kernels that
    ran are recorded, and convs must have run on the chosen one (narrow groups take int16)."""
    if request.param == "vnni" and not vnni.AVAILABLE:
        pytest.skip("the CPU has no AVX-512 VNNI")
    monkeypatch.setattr(op_integer_conv, "USE_VNNI", request.param == "vnni")
    monkeypatch.setattr(op_integer_conv, "LEAVE_WITHOUT_VNNI", False)  # claimed on any CPU
    ran: set[str] = set()
    for name in ("conv_vnni", "conv_int16"):
        compiled = getattr(kic, name)

        def spy(*args, _compiled=compiled, _name=name):  # type: ignore[no-untyped-def]
            ran.add(_name)
            return _compiled(*args)

        monkeypatch.setattr(kic, name, spy)
    yield request.param
    assert ran, "no integer conv kernel ran"
    if request.param == "int16":
        assert ran == {"conv_int16"}


def _q(rng, dtype, shape):  # type: ignore[no-untyped-def]
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _conv_integer(rng, xt, wt, x_shape, w_shape, threads=0, **attrs):  # type: ignore[no-untyped-def]
    x, w = _q(rng, xt, x_shape), _q(rng, wt, w_shape)
    inits = {"w": w, "xz": _q(rng, xt, ()), "wz": _q(rng, wt, ())}
    model = node_model("ConvInteger", {"x": x}, initializers=inits, opset=10, **attrs)
    return assert_node_on_numba_matches(model, {"x": x}, "ConvInteger", threads=threads)


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.uint8), (np.int8, np.int8)])
def test_conv_integer_types(kernel, xt, wt) -> None:
    rng = np.random.default_rng(1)
    _conv_integer(rng, xt, wt, (2, 5, 9, 11), (16, 5, 3, 3), pads=[1, 0, 2, 1], strides=[2, 1])


@pytest.mark.parametrize("attrs,w_shape,x_shape", [
    ({"pads": [1, 1, 1, 1]}, (24, 8, 3, 3), (1, 8, 7, 13)),
    ({"dilations": [2, 3], "pads": [2, 3, 2, 3]}, (9, 3, 3, 3), (1, 3, 10, 12)),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (12, 4, 3, 2), (1, 4, 9, 8)),
    ({"auto_pad": "SAME_LOWER", "strides": [1, 2]}, (12, 4, 2, 3), (1, 4, 6, 7)),
    ({"auto_pad": "VALID"}, (70, 6, 1, 1), (3, 6, 5, 5)),
    ({"group": 2, "pads": [1, 1, 1, 1]}, (32, 3, 3, 3), (2, 6, 8, 8)),
    ({"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}, (8, 1, 3, 3), (1, 8, 9, 9)),
    ({"pads": [2, 1], "strides": [3]}, (16, 4, 5), (2, 4, 17)),
    ({}, (20, 7, 1, 1), (1, 7, 6, 6)),
])
def test_conv_integer_geometry(kernel, attrs, w_shape, x_shape) -> None:
    _conv_integer(np.random.default_rng(2), np.uint8, np.uint8, x_shape, w_shape, **attrs)


@pytest.fixture
def pool_runs(monkeypatch):  # type: ignore[no-untyped-def]
    """The item counts of the work handed to the session's threads."""
    calls: list[int] = []
    run = ThreadControl.run

    def spy(self, work, total, grain=1, spread=False):  # type: ignore[no-untyped-def]
        calls.append(total)
        return run(self, work, total, grain, spread)

    monkeypatch.setattr(ThreadControl, "run", spy)
    return calls


@pytest.fixture
def shared(monkeypatch, pool_runs):  # type: ignore[no-untyped-def]
    """Every conv is split over the threads; returns the item counts the pool was given."""
    monkeypatch.setattr(op_integer_conv, "SHARE_MIN_MACS", 0)
    return pool_runs


def test_conv_integer_split_over_threads(kernel, shared) -> None:
    """A conv split into (image, pixel band) items over two threads."""
    rng = np.random.default_rng(3)
    _conv_integer(rng, np.uint8, np.uint8, (2, 32, 20, 20), (64, 32, 3, 3), threads=2, pads=[1, 1, 1, 1])
    assert 8 in shared  # two images of 400 pixels, in bands of 128


def test_conv_integer_fed_weights_and_no_zero_points(kernel) -> None:
    """W as a graph input (prepared on each call, not kept) and both zero points omitted."""
    rng = np.random.default_rng(4)
    x, w = _q(rng, np.uint8, (1, 4, 6, 6)), _q(rng, np.uint8, (10, 4, 3, 3))
    model = node_model("ConvInteger", {"x": x, "w": w}, opset=10)
    assert_node_on_numba_matches(model, {"x": x, "w": w}, "ConvInteger")
    w2 = _q(rng, np.uint8, (10, 4, 3, 3))  # a second call with other weights
    got, _ = run_numba(model, {"x": x, "w": w2}, fallback=True)
    model_c = node_model("ConvInteger", {"x": x}, initializers={"w": w2}, opset=10)
    np.testing.assert_array_equal(got[0], assert_node_on_numba_matches(model_c, {"x": x}, "ConvInteger")[0])


def test_qlinear_conv_shapes_change_between_runs(kernel) -> None:
    """One session, inputs of several shapes (a call plan per shape), each as onnxruntime."""
    rng = np.random.default_rng(12)
    w = _q(rng, np.int8, (16, 3, 3, 3))
    inits = {"xs": np.array(0.02, np.float32), "xz": np.array(120, np.uint8), "w": w,
             "ws": np.array(0.01, np.float32), "wz": np.array(0, np.int8), "ys": np.array(0.3, np.float32),
             "yz": np.array(128, np.uint8)}
    x0 = _q(rng, np.uint8, (1, 3, 8, 8))
    model = node_model("QLinearConv", {"x": x0}, initializers=inits, opset=10, pads=[1, 1, 1, 1])
    for axis, name in enumerate("nchw"):
        if axis != 1:
            model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = name
    session = ort.InferenceSession(model.SerializeToString(), providers=["numba"])
    assert {a.provider for a in session.get_node_assignments()} == {"numba"}
    for shape in [(1, 3, 8, 8), (2, 3, 5, 9), (1, 3, 8, 8), (3, 3, 12, 4)]:
        x = _q(rng, np.uint8, shape)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


def test_without_vnni_wide_convs_are_left_to_the_numpy_provider(monkeypatch) -> None:
    """Without VNNI only narrow groups (depthwise) are claimed; the others fall back."""
    monkeypatch.setattr(op_integer_conv, "LEAVE_WITHOUT_VNNI", True)
    rng = np.random.default_rng(14)
    x = _q(rng, np.uint8, (1, 8, 6, 6))
    for w_shape, group, claimed in [((16, 8, 3, 3), 1, False), ((8, 1, 3, 3), 8, True)]:
        model = node_model("ConvInteger", {"x": x}, initializers={"w": _q(rng, np.uint8, w_shape)}, opset=10,
                           group=group, pads=[1, 1, 1, 1])
        got, session = run_numba(model, {"x": x}, fallback=True)
        assert (session.get_node_assignments()[0].provider == "numba") == claimed
        np.testing.assert_array_equal(got[0], run_onnxruntime(model, {"x": x})[0])


def test_conv_integer_per_channel_weight_zero_point(kernel) -> None:
    """onnxruntime refuses a per-channel W zero point; the exact integer conv is the reference."""
    rng = np.random.default_rng(5)
    x, w, wz = _q(rng, np.uint8, (1, 3, 5, 6)), _q(rng, np.uint8, (12, 3, 3, 3)), _q(rng, np.uint8, (12,))
    model = node_model("ConvInteger", {"x": x}, initializers={"w": w, "xz": np.array(7, np.uint8), "wz": wz},
                       opset=10, pads=[1, 1, 1, 1])
    got, _ = run_numba(model, {"x": x})
    xc = np.pad(x.astype(np.int64) - 7, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wc = w.astype(np.int64) - wz.astype(np.int64)[:, None, None, None]
    windows = np.lib.stride_tricks.sliding_window_view(xc, (3, 3), axis=(2, 3))  # (1, 3, 5, 6, 3, 3)
    expected = np.einsum("nchwij,mcij->nmhw", windows, wc).astype(np.int32)
    np.testing.assert_array_equal(got[0], expected)


def _qlinear_conv(rng, xt, wt, yt, x_shape, w_shape, per_channel, bias, domain="", threads=0, **attrs):  # type: ignore[no-untyped-def]
    x, w = _q(rng, xt, x_shape), _q(rng, wt, w_shape)
    m, k = w_shape[0], int(np.prod(w_shape[1:]))
    ws = (rng.random(m if per_channel else ()) * 0.02 + 0.005).astype(np.float32)
    # (uint8 weights centered near their zero point, as quantizers make them)
    wz = np.zeros(m if per_channel else (), wt) if wt == np.int8 else \
        rng.integers(118, 139, m if per_channel else ()).astype(wt)
    xs = np.array(0.03, np.float32)
    # the output scale puts most results inside the range, a few saturated
    ys = np.array(float(xs) * float(np.mean(ws)) * np.sqrt(k) * 74 * 74 / 40, np.float32)
    inits = {"xs": xs, "xz": _q(rng, xt, ()), "w": w, "ws": ws, "wz": wz, "ys": ys, "yz": _q(rng, yt, ())}
    if bias:
        inits["b"] = rng.integers(-20000, 20000, m).astype(np.int32)
    model = node_model("QLinearConv", {"x": x}, initializers=inits, opset=10, domain=domain, **attrs)
    got = assert_node_on_numba_matches(model, {"x": x}, "QLinearConv", threads=threads)[0]
    lo, hi = np.iinfo(yt).min, np.iinfo(yt).max
    assert np.mean((got > lo) & (got < hi)) > 0.3  # requantization is exercised, not just saturation
    return got


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(kernel, xt, wt, per_channel) -> None:
    rng = np.random.default_rng(6)
    _qlinear_conv(rng, xt, wt, xt, (2, 6, 9, 10), (16, 6, 3, 3), per_channel, True, pads=[1, 1, 1, 1])


@pytest.mark.parametrize("attrs,w_shape,x_shape", [
    ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, (32, 16, 3, 3), (1, 16, 11, 12)),
    ({"group": 4, "pads": [0, 1, 0, 1]}, (8, 2, 3, 3), (3, 8, 5, 7)),
    ({"group": 6, "pads": [1, 1, 1, 1]}, (6, 1, 3, 3), (1, 6, 7, 7)),
    ({"auto_pad": "SAME_UPPER"}, (20, 5, 4), (2, 5, 13)),
    ({}, (72, 24, 1, 1), (1, 24, 5, 5)),
])
def test_qlinear_conv_geometry(kernel, attrs, w_shape, x_shape) -> None:
    _qlinear_conv(np.random.default_rng(7), np.uint8, np.int8, np.uint8, x_shape, w_shape, True, False, **attrs)


def test_qlinear_conv_split_over_threads(kernel, shared) -> None:
    _qlinear_conv(np.random.default_rng(8), np.uint8, np.int8, np.uint8, (2, 32, 24, 20), (48, 32, 3, 3), False,
                  True, threads=2, pads=[1, 1, 1, 1])
    assert shared


def test_qlinear_conv_contrib(kernel) -> None:
    """com.microsoft QLinearConv: NCHW, and N...C with channels_last."""
    rng = np.random.default_rng(9)
    _qlinear_conv(rng, np.uint8, np.int8, np.uint8, (1, 4, 7, 6), (16, 4, 3, 3), False, True, domain=MS,
                  pads=[1, 1, 1, 1])
    _qlinear_conv(rng, np.uint8, np.int8, np.uint8, (1, 7, 6, 4), (16, 4, 3, 3), False, True, domain=MS,
                  pads=[1, 1, 1, 1], channels_last=1)


def _params(rng, dtype, *names):  # type: ignore[no-untyped-def]
    out = {}
    for n in names:
        out[n + "s"] = np.array(rng.random() * 0.05 + 0.01, np.float32)
        out[n + "z"] = _q(rng, dtype, ())
    return out


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("a_shape,b_shape", [((2, 16, 30, 31), (2, 16, 30, 31)), ((2, 3, 50, 40), (3, 1, 1)),
                                             ((3, 1, 1), (2, 3, 50, 40)), ((1,), (7, 301)), ((7, 301), (1,)),
                                             ((4, 1, 9), (4, 300, 9))])
@pytest.mark.parametrize("seed", [10, 11])
def test_qlinear_add(dtype, a_shape, b_shape, seed) -> None:
    """Large enough for the rounding of onnxruntime's fused multiply-adds to show, in each way its
    broadcast splits the work (both spans, B or A one value per span)."""
    rng = np.random.default_rng(seed)
    a, b = _q(rng, dtype, a_shape), _q(rng, dtype, b_shape)
    p = _params(rng, dtype, "a", "b", "c")
    p["cs"] = np.array(float(p["as"] + p["bs"]) * 0.8, np.float32)
    inputs = {"a": a, "as": p["as"], "az": p["az"], "b": b, "bs": p["bs"], "bz": p["bz"], "cs": p["cs"],
              "cz": p["cz"]}
    model = node_model("QLinearAdd", inputs, domain=MS)
    assert_node_on_numba_matches(model, inputs, "QLinearAdd")


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last,shape", [(0, (2, 16, 7, 9)), (1, (2, 7, 9, 16)), (0, (3, 5, 11)),
                                                 (1, (1, 2, 3, 4, 6))])
def test_qlinear_global_average_pool(dtype, channels_last, shape) -> None:
    rng = np.random.default_rng(11)
    x = _q(rng, dtype, shape)
    p = _params(rng, dtype, "x", "y")
    p["ys"] = np.array(float(p["xs"]) * 0.3, np.float32)
    inputs = {"x": x, "xs": p["xs"], "xz": p["xz"], "ys": p["ys"], "yz": p["yz"]}
    model = node_model("QLinearGlobalAveragePool", inputs, domain=MS, channels_last=channels_last)
    assert_node_on_numba_matches(model, inputs, "QLinearGlobalAveragePool")


@pytest.mark.parametrize("op,shapes", [("QLinearAdd", ((3, 200_000), (3, 200_000))),
                                       ("QLinearGlobalAveragePool", ((8, 1024, 8, 8),))])
def test_qlinear_elementwise_split_over_threads(pool_runs, op, shapes) -> None:
    """Inputs large enough to be split over two threads."""
    rng = np.random.default_rng(13)
    data = [_q(rng, np.uint8, s) for s in shapes]
    if op == "QLinearAdd":
        p = _params(rng, np.uint8, "a", "b", "c")
        inputs = {"a": data[0], "as": p["as"], "az": p["az"], "b": data[1], "bs": p["bs"], "bz": p["bz"],
                  "cs": np.array(float(p["as"] + p["bs"]), np.float32), "cz": p["cz"]}
    else:
        p = _params(rng, np.uint8, "x", "y")
        inputs = {"x": data[0], "xs": p["xs"], "xz": p["xz"], "ys": np.array(float(p["xs"]) * 0.3, np.float32),
                  "yz": p["yz"]}
    assert_node_on_numba_matches(node_model(op, inputs, domain=MS), inputs, op, threads=2)
    assert pool_runs


@pytest.mark.skipif(not vnni.AVAILABLE, reason="the CPU has no AVX-512 VNNI")
@pytest.mark.parametrize("columns", [16, 32, 64])
@pytest.mark.parametrize("rows,k,n", [(1, 4, 5), (9, 27, 16), (7, 36, 40), (4, 64, 70)])
def test_vnni_products_by_packing_width(columns, rows, k, n) -> None:
    """Each packing width's product is the exact int32 product of uint8 rows and int8 weights."""
    from numba import njit

    if columns == 64:
        @njit
        def run(q, packed, acc):  # type: ignore[no-untyped-def]
            vnni.product(q, packed, acc)
    else:
        vectors = columns // 16

        @njit
        def run(q, packed, acc):  # type: ignore[no-untyped-def]
            vnni.product_narrow(q, packed, acc, vectors)

    rng = np.random.default_rng(15)
    a = rng.integers(0, 256, (rows, k)).astype(np.uint8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    packed, colsum = vnni.pack(b, columns)
    q = np.zeros((rows, packed.shape[1] * 4), np.uint8)
    q[:, :k] = a
    acc = np.zeros((rows, packed.shape[0] * columns), np.int32)
    run(q, packed, acc)
    np.testing.assert_array_equal(acc[:, :n], a.astype(np.int64) @ b.astype(np.int64))
    np.testing.assert_array_equal(colsum[:n], b.sum(axis=0, dtype=np.int64))
