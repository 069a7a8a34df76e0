"""The numpy provider's channels-last region: depthwise convolutions and the 1x1 convolutions and
pools around them run as com.onnxplug.nhwc ops (ops/channels_last.py, layout.py). Every value is
checked against onnxruntime on the original NCHW model."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.providers.numpy.passes import InvertedBottleneckFusion
from onnxplug.providers.numpy.kernels.conv import channels_last
from onnxplug.testing.model_suite import build, sample_inputs
from tests.numpy_provider.test_depthwise_conv import CASES

RNG = np.random.default_rng(7)
F = TensorProto.FLOAT


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


def _model(nodes, x_shape, out_shape, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "channels_last", [helper.make_tensor_value_info("x", F, x_shape)],
                              [helper.make_tensor_value_info("y", F, out_shape)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _out_shape(x_shape, w_shape, attrs) -> list:
    """ONNX Conv output shape via onnxruntime-independent shape inference."""
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], group=x_shape[1], **attrs)], x_shape, None,
               {"w": np.zeros(w_shape, np.float32)})
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]


def _run_both(proto: onnx.ModelProto, feeds, tmp_path, **numpy_options: str) -> tuple[list, list, Counter]:
    """(ours at the default optimization level with the numpy provider options, onnxruntime's, op
    counts of our optimized model)."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ours = ort.InferenceSession(proto.SerializeToString(), so, providers=[("numpy", numpy_options)]).run(None, feeds)
    expected = onnxruntime.InferenceSession(proto.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, feeds)
    saved = onnx.load(so.optimized_model_filepath)
    return ours, expected, Counter(f"{n.domain}:{n.op_type}" for n in saved.graph.node)


def _block(x_shape, w_shape, attrs, bias: bool, epilogue: str):
    """Depthwise Conv [+ bias] then: nothing, Relu6, or a residual Add of the input (when the
    shapes allow) then Relu."""
    c = x_shape[1]
    inits = {"w": f32(*w_shape)}
    inputs = ["x", "w"] + (["b"] if bias else [])
    if bias:
        inits["b"] = f32(w_shape[0])
    out_shape = _out_shape(x_shape, w_shape, attrs)
    nodes = [helper.make_node("Conv", inputs, ["c"], group=c, **attrs)]
    if epilogue == "relu6":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
        inits["lo"], inits["hi"] = np.array(0, np.float32), np.array(6, np.float32)
    elif epilogue == "residual" and out_shape == list(x_shape):
        nodes += [helper.make_node("Add", ["c", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    else:
        nodes[0].output[0] = "y"
    return _model(nodes, x_shape, out_shape, inits)


def _assert_close(ours, expected) -> None:
    for a, e in zip(ours, expected):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,xs,ws,attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("bias,epilogue", [(False, "none"), (True, "relu6"), (True, "residual")],
                         ids=["plain", "bias relu6", "bias residual"])
def test_depthwise_layers_match_onnxruntime(tmp_path, name, xs, ws, attrs, bias, epilogue):
    """Every depthwise geometry of the NCHW kernel's tests: 2-D ones with one weight per channel
    run channels-last (fast path or, for a dilation with a stride, the NCHW kernel between
    transposes); the others stay NCHW."""
    proto = _block(xs, ws, attrs, bias, epilogue)
    ours, expected, counts = _run_both(proto, {"x": f32(*xs)}, tmp_path)
    _assert_close(ours, expected)
    channels_last = sum(n for op, n in counts.items() if op.startswith("com.onnxplug.nhwc:"))
    assert channels_last == (1 if len(xs) == 4 and ws[0] == xs[1] else 0), counts


def _separable(x_shape, expand: int, stride: int, pointwise_attrs: dict, pool: bool) -> onnx.ModelProto:
    """1x1 expand + Relu -> depthwise 3x3 (stride) + Relu6 -> 1x1 project [-> GlobalAveragePool]."""
    n, c, h, w = x_shape
    wide = c * expand
    inits = {"we": f32(wide, c, 1, 1), "be": f32(wide), "wd": f32(wide, 1, 3, 3), "bd": f32(wide),
             "wp": f32(c, wide, 1, 1), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    nodes = [helper.make_node("Conv", ["x", "we", "be"], ["e"]), helper.make_node("Relu", ["e"], ["er"]),
             helper.make_node("Conv", ["er", "wd", "bd"], ["d"], group=wide, strides=[stride, stride], pads=[1] * 4),
             helper.make_node("Clip", ["d", "lo", "hi"], ["dr"]),
             helper.make_node("Conv", ["dr", "wp"], ["p"], **pointwise_attrs)]
    oh = (h - 1) // stride + 1
    ow = (w - 1) // stride + 1
    ps, pp = pointwise_attrs.get("strides", [1, 1]), pointwise_attrs.get("pads", [0] * 4)
    oh, ow = (oh + pp[0] + pp[2] - 1) // ps[0] + 1, (ow + pp[1] + pp[3] - 1) // ps[1] + 1
    if pool:
        nodes.append(helper.make_node("GlobalAveragePool", ["p"], ["y"]))
        out = [n, c, 1, 1]
    else:
        nodes[-1].output[0] = "y"
        out = [n, c, oh, ow]
    return _model(nodes, x_shape, out, inits)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("pointwise_attrs,fast", [({}, True), ({"strides": [2, 2]}, True),
                                                  ({"pads": [1, 0, 0, 1]}, False)],
                         ids=["1x1", "1x1 stride 2", "1x1 with pads"])
@pytest.mark.parametrize("pool", [False, True], ids=["conv out", "pooled"])
def test_separable_block_runs_channels_last_and_matches(tmp_path, monkeypatch, stride, pointwise_attrs, fast, pool):
    """A MobileNet block: one channels-last region from the first 1x1 to the pool, one Transpose
    at each end. A padded 1x1 (no fast path) runs the NCHW kernel between transposes. (The three
    convolutions as separate kernels: test_inverted_bottleneck.py covers them fused.)"""
    monkeypatch.setattr(InvertedBottleneckFusion, "rewrite", lambda self, index, context: {})
    fast_calls = []
    real = channels_last.conv_1x1_nhwc
    monkeypatch.setattr("onnxplug.providers.numpy.ops.com_onnxplug.op_nhwc_conv.conv_1x1_nhwc",
                        lambda *a: fast_calls.append(a[5] is not None) or real(*a))
    proto = _separable((2, 8, 13, 11), 3, stride, pointwise_attrs, pool)
    ours, expected, counts = _run_both(proto, {"x": f32(2, 8, 13, 11)}, tmp_path)
    _assert_close(ours, expected)
    assert counts[":Transpose"] == 2, counts
    assert counts["com.onnxplug.nhwc:FusedConv"] + counts["com.onnxplug.nhwc:Conv"] == 3, counts
    assert counts["com.onnxplug.nhwc:GlobalAveragePool"] == int(pool), counts
    # the expansion (8 -> 24 channels, its bias in the product), and the projection unless padded
    assert fast_calls == ([True, False] if fast else [True])


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("cin,cout", [(4, 8), (4, 16), (5, 9), (6, 4)])
def test_pointwise_bias_in_the_product_matches(tmp_path, monkeypatch, poisoned_scratch, stride, cin, cout):
    """A 1x1 layer whose input has at most half its output's channels takes its bias in the
    product (a column of ones in scratch, here poisoned with NaN before every use); others add it
    after. Values match onnxruntime either way, with strides too."""
    folded = []
    real = channels_last.conv_1x1_nhwc
    monkeypatch.setattr("onnxplug.providers.numpy.ops.com_onnxplug.op_nhwc_conv.conv_1x1_nhwc",
                        lambda *a: folded.append(a[5] is not None) or real(*a))
    inits = {"wd": f32(cin, 1, 3, 3), "wp": f32(cout, cin, 1, 1), "bp": f32(cout)}
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4),
             helper.make_node("Conv", ["d", "wp", "bp"], ["y"], strides=[stride, stride])]
    out = [2, cout, (9 - 1) // stride + 1, (7 - 1) // stride + 1]
    ours, expected, counts = _run_both(_model(nodes, [2, cin, 9, 7], out, inits), {"x": f32(2, cin, 9, 7)}, tmp_path)
    _assert_close(ours, expected)
    assert counts["com.onnxplug.nhwc:Conv"] == 2, counts
    assert folded == [2 * cin <= cout]


@pytest.mark.parametrize("images", [1, 3])
def test_large_layers_split_over_the_product_threads(tmp_path, monkeypatch, parallel_for_calls, images):
    """Large enough work (here: a wide layer, batch 3) runs images or row blocks on both product
    threads; values still match. (Separate kernels, not the fused block.)"""
    monkeypatch.setattr(InvertedBottleneckFusion, "rewrite", lambda self, index, context: {})
    splits = parallel_for_calls(channels_last)
    proto = _separable((images, 32, 56, 56), 6, 1, {}, False)
    ours, expected, counts = _run_both(proto, {"x": f32(images, 32, 56, 56)}, tmp_path)
    _assert_close(ours, expected)
    assert splits and any(ran for _, ran in splits) == (images > 1), splits


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("cin,cout", [(4, 12), (6, 6)])
def test_pointwise_units_on_the_product_threads_match(tmp_path, monkeypatch, poisoned_scratch, parallel_for_calls,
                                                     stride, cin, cout):
    """A 1x1 layer worth splitting runs in units of output pixels on both product threads, each
    with its own copy, bias (in the product or added) and epilogue, here a residual then Relu:
    bands of an image's rows (9 x 7 images at stride 1) or runs of images (5 x 4 at stride 2),
    with scratch poisoned with NaN. Values match onnxruntime."""
    from onnxplug.providers.numpy.runtime import blas

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    calls = []
    real_conv = channels_last.conv_1x1_nhwc
    monkeypatch.setattr("onnxplug.providers.numpy.ops.com_onnxplug.op_nhwc_conv.conv_1x1_nhwc",
                        lambda *a: calls.append(a[4] is not None and a[4].z is not None) or real_conv(*a))
    shared = parallel_for_calls(channels_last)
    inits = {"wd": f32(cin, 1, 3, 3), "wp": f32(cout, cin, 1, 1), "bp": f32(cout), "wr": f32(cout, cout, 1, 1),
             "br": f32(cout)}
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], group=cin, pads=[1] * 4),
             helper.make_node("Conv", ["d", "wp", "bp"], ["p"], strides=[stride, stride]),
             helper.make_node("Conv", ["p", "wr", "br"], ["r"]),
             helper.make_node("Add", ["r", "p"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    out = [3, cout, (9 - 1) // stride + 1, (7 - 1) // stride + 1]
    ours, expected, counts = _run_both(_model(nodes, [3, cin, 9, 7], out, inits), {"x": f32(3, cin, 9, 7)}, tmp_path,
                                       split_product_macs="1", nhwc_unit_pixels="16")
    _assert_close(ours, expected)
    assert calls == [False, True]  # the second 1x1 takes the residual and the Relu
    units = 3 * 3 if stride == 1 else 3  # 3 bands of 3 rows per image, or one image per unit
    assert shared.count((units, True)) >= 2, shared


def test_reused_scratch_contents_never_reach_outputs(tmp_path, poisoned_scratch):
    """The depthwise scratch is reused across calls and only its padding is zeroed: filled with NaN
    before every use, outputs still match (every stride phase, uneven pads)."""
    for xs, ws, attrs in [((2, 5, 13, 12), (5, 1, 3, 3), dict(strides=[2, 2], pads=[0, 2, 1, 0])),
                          ((1, 4, 11, 14), (4, 1, 4, 3), dict(strides=[3, 2], pads=[2, 1, 1, 2])),
                          ((1, 3, 12, 14), (3, 1, 3, 3), dict(dilations=[2, 2], pads=[2, 2, 2, 2]))]:
        proto = _block(xs, ws, attrs, True, "relu6")
        ours, expected, counts = _run_both(proto, {"x": f32(*xs)}, tmp_path)
        _assert_close(ours, expected)
        assert counts["com.onnxplug.nhwc:FusedConv"] == 1, counts


def test_mobilenet_runs_channels_last_and_resnet_does_not(tmp_path):
    """MobileNetV2: every convolution (the 3-channel stem, the depthwise and 1x1 layers) and the
    pool channels-last, with one Transpose in (before the stem) and one out, each of its 16
    inverted residual blocks one InvertedBottleneck; the saved optimized model (function bodies for
    the nhwc ops) runs in onnxruntime with the same outputs. ResNet-18 has no depthwise layer: all
    NCHW."""
    feeds = sample_inputs("mobilenetv2", batch=2)
    proto = build("mobilenetv2")
    ours, expected, counts = _run_both(proto, feeds, tmp_path)
    _assert_close(ours, expected)
    convs = Counter(n.op_type for n in proto.graph.node)["Conv"]
    assert counts[":Transpose"] == 2, counts
    blocks = counts["com.onnxplug.nhwc:InvertedBottleneck"]
    assert blocks == 16, counts
    assert counts["com.onnxplug.nhwc:FusedConv"] + counts["com.onnxplug.nhwc:Conv"] + 3 * blocks == convs, counts
    assert counts["com.onnxplug.nhwc:GlobalAveragePool"] == 1, counts
    saved = onnxruntime.InferenceSession(str(tmp_path / "optimized.onnx"), providers=["CPUExecutionProvider"])
    _assert_close(saved.run(None, feeds), expected)

    _, _, counts = _run_both(build("resnet18"), sample_inputs("resnet18", batch=1), tmp_path)
    assert not any(op.startswith("com.onnxplug.nhwc:") for op in counts) and counts[":Transpose"] == 0, counts


def test_layout_answers_follow_the_graph_they_are_asked_about():
    """preferred_layout finds a graph's regions once and answers every node from them; a changed
    graph (here: its depthwise layers removed) is looked at again."""
    from onnxplug.ir import load_model
    from onnxplug.providers.numpy import NumpyProvider
    from onnxplug.providers.numpy.layout import channels_last_nodes

    from onnxplug.optimizer import optimize_model

    model = load_model(build("mobilenetv2"))
    provider = NumpyProvider()
    optimize_model(model, int(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED), [provider])  # fused, NCHW
    graph = model.graph
    wanted = channels_last_nodes(graph)
    answers = {id(n): provider.preferred_layout(n, graph) for n in graph.nodes}
    assert {k for k, v in answers.items() if v == "NHWC"} == wanted
    convs = sum(n.op_type in ("Conv", "FusedConv") for n in graph.nodes)
    assert len(wanted) == convs + 1  # every convolution (the stem too), and the pool
    graph.nodes = [n for n in graph.nodes if int(n.attr("group", 1)) == 1]  # no depthwise layer left
    assert all(provider.preferred_layout(n, graph) is None for n in graph.nodes)


def test_mid_size_pointwise_products_take_the_threaded_blas(monkeypatch):
    """A 1x1 layer's single product goes to the threaded BLAS from POINTWISE_THREADED_MACS on,
    below the threaded_product_macs option, and gives numpy's result."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas

    threaded = threaded_blas()
    if threaded is None:
        pytest.skip("no threaded BLAS")
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    calls: list[tuple] = []
    real = type(threaded).gemm
    monkeypatch.setattr(type(threaded), "gemm", lambda self, a, b, out=None: calls.append(a.shape) or real(self, a, b, out))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 28, 28, 32)).astype(np.float32)  # 784 x 32 @ 32 x 192: 4.8M
    wt = rng.standard_normal((32, 192)).astype(np.float32)
    assert channels_last.POINTWISE_THREADED_MACS <= 784 * 32 * 192 < blas.PRODUCT_THREADS.threaded_product_macs
    got = channels_last.conv_1x1_nhwc(x, wt, None, (1, 1), None)
    np.testing.assert_allclose(got, x @ wt, rtol=1e-4, atol=1e-4)
    assert calls == [(784, 32)]


def _stem(x_shape, k: int, kernel, attrs: dict, bias: bool, relu6: bool) -> onnx.ModelProto:
    """A dense Conv on the image [+ bias] [-> Relu6] -> depthwise 3x3, as a MobileNet starts."""
    n, c = x_shape[:2]
    inits = {"w": f32(k, c, *kernel), "wd": f32(k, 1, 3, 3)}
    inputs = ["x", "w"] + (["b"] if bias else [])
    if bias:
        inits["b"] = f32(k)
    nodes = [helper.make_node("Conv", inputs, ["s"], **attrs)]
    if relu6:
        inits["lo"], inits["hi"] = np.array(0, np.float32), np.array(6, np.float32)
        nodes += [helper.make_node("Clip", ["s", "lo", "hi"], ["sr"])]
    nodes.append(helper.make_node("Conv", ["sr" if relu6 else "s", "wd"], ["y"], group=k, pads=[1] * 4))
    probe = _model(nodes, x_shape, None, inits)
    inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=True)
    out = [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    return _model(nodes, x_shape, out, inits)


STEMS = [  # (name, input shape, output channels, kernel, attrs)
    ("3ch 3x3 s2", (1, 3, 17, 16), 8, (3, 3), dict(strides=[2, 2], pads=[1] * 4)),
    ("3ch 3x3 s2 uneven pads", (2, 3, 15, 18), 6, (3, 3), dict(strides=[2, 2], pads=[0, 1, 1, 0])),
    ("1ch 5x3 s1", (1, 1, 12, 9), 4, (5, 3), dict(pads=[2, 1, 2, 1])),
    ("4ch 3x3 dilated", (1, 4, 14, 13), 5, (3, 3), dict(dilations=[2, 2], pads=[2] * 4)),
    ("3ch 4x4 s3 no pads", (2, 3, 20, 22), 7, (4, 4), dict(strides=[3, 2])),
]


@pytest.mark.parametrize("name,xs,k,kernel,attrs", STEMS, ids=[s[0] for s in STEMS])
@pytest.mark.parametrize("bias,relu6", [(False, False), (True, True)], ids=["plain", "bias relu6"])
def test_few_channel_stem_runs_channels_last_and_matches(tmp_path, poisoned_scratch, name, xs, k, kernel, attrs,
                                                        bias, relu6):
    """A dense convolution on at most DENSE_MAX_CHANNELS channels joins the depthwise region: it
    runs channels-last (taps-major im2col in scratch poisoned with NaN), the one Transpose in moves
    its input, and values match onnxruntime."""
    proto = _stem(xs, k, kernel, attrs, bias, relu6)
    ours, expected, counts = _run_both(proto, {"x": f32(*xs)}, tmp_path)
    _assert_close(ours, expected)
    assert counts["com.onnxplug.nhwc:FusedConv"] + counts["com.onnxplug.nhwc:Conv"] == 2, counts
    assert counts[":Transpose"] == 2 and counts[":Conv"] + counts["com.onnxplug:FusedConv"] == 0, counts


@pytest.mark.parametrize("split", [False, True], ids=["one thread", "product threads"])
def test_stem_bands_and_units_match(tmp_path, monkeypatch, poisoned_scratch, parallel_for_calls, split):
    """Columns larger than the nhwc_dense_unit_bytes option go in bands of output rows, and with enough work the
    (image, band) units go to both product threads; each unit's bias and Relu6 stay right."""
    from onnxplug.providers.numpy.runtime import blas

    options = {"nhwc_dense_unit_bytes": "2100"}  # 28 x 9 values a row: 2 rows a band
    if split:
        options["split_product_macs"] = "1"
        monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    shared = parallel_for_calls(channels_last)
    proto = _stem((3, 3, 17, 18), 8, (3, 3), dict(strides=[2, 2], pads=[1] * 4), True, True)
    ours, expected, _ = _run_both(proto, {"x": f32(3, 3, 17, 18)}, tmp_path, **options)
    _assert_close(ours, expected)
    assert (3 * 5, split) in shared, shared  # 9 output rows in bands of 2: 5 bands per image


def test_dense_convolutions_on_more_channels_stay_nchw(tmp_path):
    """Above DENSE_MAX_CHANNELS input channels a dense convolution keeps the NCHW kernel (Winograd,
    im2col over channels): the region starts after it, with its Transpose."""
    cin = channels_last.DENSE_MAX_CHANNELS + 1
    proto = _stem((1, cin, 12, 12), 6, (3, 3), dict(pads=[1] * 4), True, False)
    ours, expected, counts = _run_both(proto, {"x": f32(1, cin, 12, 12)}, tmp_path)
    _assert_close(ours, expected)
    assert counts["com.onnxplug:FusedConv"] + counts[":Conv"] == 1 and counts[":Transpose"] == 2, counts
