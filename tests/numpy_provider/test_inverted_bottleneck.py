"""MobileNetV2's inverted residual block fused into com.onnxplug.nhwc InvertedBottleneck
(providers/numpy/passes/inverted_bottleneck_fusion.py, ops/bottleneck.py): which chains fuse, and the
fused kernel (in bands of output rows, or as its three kernels on small outputs) against
onnxruntime on the original NCHW model, including the saved optimized model's function body."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.providers.numpy.kernels.conv import bottleneck

RNG = np.random.default_rng(21)
F = TensorProto.FLOAT


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * scale, dtype=np.float32)


def _activation(nodes: list, inits: dict, name: str, value: str, out: str) -> None:
    if name == "relu6":
        inits["lo"], inits["hi"] = np.array(0, np.float32), np.array(6, np.float32)
        nodes.append(helper.make_node("Clip", [value, "lo", "hi"], [out]))
    elif name:
        nodes.append(helper.make_node(name, [value], [out]))
    else:
        nodes.append(helper.make_node("Identity", [value], [out]))


def _block(x_shape, expand: int, out_channels: int, stride: int, acts=("relu6", "relu6", ""),
           biases=(True, True, True), residual: bool = False, kernel: int = 3, pads: int = 1,
           share_expanded: bool = False, dtype=np.float32) -> onnx.ModelProto:
    """1x1 expansion -> kxk depthwise (stride, pads) -> 1x1 projection [+ x] [-> activation], NCHW."""
    n, c, h, w = x_shape
    wide = c * expand
    inits = {"we": f32(wide, c, 1, 1, scale=0.4), "wd": f32(wide, 1, kernel, kernel, scale=0.4),
             "wp": f32(out_channels, wide, 1, 1, scale=0.3)}
    for key, size, present in (("be", wide, biases[0]), ("bd", wide, biases[1]), ("bp", out_channels, biases[2])):
        if present:
            inits[key] = f32(size, scale=0.5)
    nodes = [helper.make_node("Conv", ["x", "we"] + (["be"] if biases[0] else []), ["e"])]
    _activation(nodes, inits, acts[0], "e", "ea")
    nodes.append(helper.make_node("Conv", ["ea", "wd"] + (["bd"] if biases[1] else []), ["d"], group=wide,
                                  strides=[stride, stride], pads=[pads] * 4))
    _activation(nodes, inits, acts[1], "d", "da")
    nodes.append(helper.make_node("Conv", ["da", "wp"] + (["bp"] if biases[2] else []), ["p"]))
    last = "p"
    if residual:
        nodes.append(helper.make_node("Add", ["p", "x"], ["s"]))
        last = "s"
    _activation(nodes, inits, acts[2], last, "y")
    outputs = [helper.make_tensor_value_info("y", F, None)]
    if share_expanded:  # the expanded tensor is also a model output
        outputs.append(helper.make_tensor_value_info("ea", F, None))
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for value in outputs:
        value.type.tensor_type.elem_type = elem
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", elem, list(x_shape))], outputs,
                              [numpy_helper.from_array(v.astype(dtype), k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _run(proto: onnx.ModelProto, x: np.ndarray, tmp_path, **numpy_options: str) -> Counter:
    """Runs ours (default optimization, the optimized model saved, the numpy provider options)
    against onnxruntime on the original model and on the saved one; returns the saved model's op
    counts."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ours = ort.InferenceSession(proto.SerializeToString(), so,
                                providers=[("numpy", numpy_options)]).run(None, {"x": x})
    expected = onnxruntime.InferenceSession(proto.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, {"x": x})
    saved = onnxruntime.InferenceSession(so.optimized_model_filepath,
                                         providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for got, from_saved, want in zip(ours, saved, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(from_saved, want, rtol=1e-4, atol=1e-4)
    return Counter(f"{n.domain}:{n.op_type}" for n in onnx.load(so.optimized_model_filepath).graph.node)


# (x shape, expansion, output channels, stride, activations, biases, residual): outputs of 14 x 14
# and more run in bands, smaller ones as the three kernels
BLOCKS = [
    ((1, 8, 28, 28), 6, 8, 1, ("relu6", "relu6", ""), (True, True, True), True),
    ((2, 8, 28, 28), 6, 12, 2, ("relu6", "relu6", ""), (True, True, True), False),
    ((1, 6, 29, 31), 4, 10, 2, ("Relu", "relu6", "Relu"), (True, False, True), False),  # odd sizes
    ((3, 5, 15, 17), 3, 5, 1, ("", "Relu", ""), (False, True, False), True),
    ((2, 4, 30, 16), 5, 7, 1, ("Sigmoid", "Tanh", "relu6"), (True, True, False), False),
    ((1, 4, 20, 20), 1, 9, 1, ("relu6", "relu6", ""), (True, True, True), False),  # projection widens
    ((2, 8, 9, 9), 6, 8, 1, ("relu6", "relu6", ""), (True, True, True), True),  # 81 outputs: three kernels
    ((1, 8, 10, 12), 6, 16, 2, ("relu6", "relu6", ""), (True, True, True), False),
]


@pytest.mark.parametrize("x_shape,expand,cout,stride,acts,biases,residual", BLOCKS)
def test_fused_block_matches_onnxruntime(tmp_path, poisoned_scratch, x_shape, expand, cout, stride, acts,
                                         biases, residual):
    """Each block becomes one InvertedBottleneck between Transposes (the residual input has its
    own); with NaN-poisoned scratch its values match onnxruntime's, and so do the saved model's
    (the op's function body)."""
    proto = _block(x_shape, expand, cout, stride, acts, biases, residual)
    counts = _run(proto, f32(*x_shape), tmp_path)
    assert counts["com.onnxplug.nhwc:InvertedBottleneck"] == 1, counts
    assert counts[":Transpose"] == 2 + residual and sum(counts.values()) == 3 + residual, counts


@pytest.mark.parametrize("x_shape,stride", [((2, 4, 18, 15), 1), ((1, 4, 30, 29), 2)])
def test_double_blocks_match_the_onnx_reference(x_shape, stride):
    """float64 blocks fuse and run in bands too (onnxruntime has no double Conv: onnx.reference is
    the oracle)."""
    from onnx.reference import ReferenceEvaluator

    proto = _block(x_shape, 4, 4, stride, residual=stride == 1, dtype=np.float64)
    x = RNG.standard_normal(x_shape)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["numpy"])
    assert [a.op_type for a in sess.get_node_assignments()].count("InvertedBottleneck") == 1
    (got,) = sess.run(None, {"x": x})
    (want,) = ReferenceEvaluator(proto).run(None, {"x": x})
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("band_bytes", [1, 20_000, 1 << 30])
@pytest.mark.parametrize("images", [1, 2, 5, 8])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("band_per_thread", [True, False])
@pytest.mark.parametrize("images_per_unit", [1, 4])
def test_bands_and_units_cover_the_output(tmp_path, monkeypatch, parallel_for_calls, band_bytes, images, stride,
                                          band_per_thread, images_per_unit):
    """Bands of one output row, of a few rows and of the whole image, in units of one band (one
    image), of a whole image (enough images for both threads) or of several whole images (small
    ones, option bottleneck_images_per_unit), shared over two product threads once the work is large;
    a single image in one band per thread (bottleneck_band_per_thread): every output row matches
    onnxruntime."""
    from onnxplug.providers.numpy.runtime import blas

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    shared = parallel_for_calls(bottleneck)
    x_shape = (images, 6, 30, 28)
    proto = _block(x_shape, 4, 6, stride, residual=stride == 1)
    _run(proto, f32(*x_shape), tmp_path, split_product_macs="100000", bottleneck_band_bytes=str(band_bytes),
         bottleneck_band_per_thread=str(int(band_per_thread)), bottleneck_images_per_unit=str(images_per_unit))
    out_rows = (30 - 1) // stride + 1
    rows = max(1, min(out_rows, band_bytes // (stride * 28 * 24 * 4)))
    if band_per_thread and images == 1:
        rows = -(-out_rows // 2)
    bands = -(-out_rows // rows)
    units = images if images >= 4 else images * bands
    if images >= 4 and bands == 1:
        units = -(-images // bottleneck._images_per_unit(images, 2, band_bytes // (out_rows * stride * 28 * 24 * 4),
                                                          images_per_unit))
    assert shared == [(units, units > 1)], shared


@pytest.mark.parametrize("change", ["5x5 depthwise", "no pads", "expanded tensor is an output", "stride 3"])
def test_other_chains_stay_three_convolutions(tmp_path, change):
    """Chains the fused kernel does not implement stay separate channels-last convolutions."""
    kwargs = {"5x5 depthwise": dict(kernel=5, pads=2), "no pads": dict(pads=0),
              "expanded tensor is an output": dict(share_expanded=True), "stride 3": dict(stride=3)}[change]
    args = dict(x_shape=(1, 4, 20, 20), expand=4, out_channels=4, stride=1) | kwargs
    counts = _run(_block(**args), f32(1, 4, 20, 20), tmp_path)
    assert counts["com.onnxplug.nhwc:InvertedBottleneck"] == 0, counts
    assert counts["com.onnxplug.nhwc:FusedConv"] + counts["com.onnxplug.nhwc:Conv"] == 3, counts


def test_the_fusion_switch_leaves_the_chain_alone(tmp_path, monkeypatch):
    from onnxplug.providers.numpy.passes import InvertedBottleneckFusion

    monkeypatch.setattr(InvertedBottleneckFusion, "rewrite", lambda self, index, context: {})
    counts = _run(_block((1, 4, 20, 20), 4, 4, 1), f32(1, 4, 20, 20), tmp_path)
    assert counts["com.onnxplug.nhwc:InvertedBottleneck"] == 0, counts


def test_concurrent_runs_of_one_session_equal_serial_ones():
    """Four threads running one session (banded blocks, units on the product threads, per-thread
    scratch) get, bit for bit, what serial runs got."""
    import threading

    proto = _block((3, 8, 28, 28), 6, 8, 1, residual=True)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["numpy"])
    inputs = [f32(3, 8, 28, 28) for _ in range(4)]
    serial = [sess.run(None, {"x": x})[0] for x in inputs]
    mismatches: list[int] = []

    def work(k: int) -> None:
        for _ in range(10):
            if not np.array_equal(sess.run(None, {"x": inputs[k]})[0], serial[k]):
                mismatches.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not mismatches


@pytest.mark.parametrize("n, threads, fit, expected", [
    (8, 2, 3, 2), (8, 2, 4, 4), (8, 2, 100, 4), (8, 2, 1, 1), (8, 2, 0, 1), (5, 2, 100, 1), (7, 2, 2, 1),
    (9, 2, 100, 1), (6, 3, 100, 2), (2, 2, 100, 1), (12, 2, 100, 3), (16, 2, 100, 4)])
def test_images_per_unit_leave_every_thread_as_many_units(n, threads, fit, expected):
    assert bottleneck._images_per_unit(n, threads, fit, 4) == expected

