"""com.onnxplug MultiHeadAttention against onnxruntime's com.microsoft MultiHeadAttention and a float64
numpy reference, including the rows the kernel's shared-shift softmax must hand to its per-row path."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxplug
from tests.numpy_provider.single_node_oracle import kernels_only
from tests.oracle import ort_outputs

RNG = np.random.default_rng(17)
HEADS = 4


def _model(domain: str, feeds: dict, scale: float, positions: list[int] | None = None) -> onnx.ModelProto:
    """One MultiHeadAttention node; ``positions`` places the feeds among the op's inputs."""
    names = list(feeds)
    inputs = names if positions is None else [""] * (max(positions) + 1)
    if positions is not None:
        for name, at in zip(names, positions):
            inputs[at] = name
    elem = TensorProto.DOUBLE if feeds["q"].dtype == np.float64 else TensorProto.FLOAT
    node = helper.make_node("MultiHeadAttention", inputs, ["y"], domain=domain, num_heads=HEADS, scale=scale)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, elem, list(v.shape)) for n, v in feeds.items()],
        [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid(domain, 1)])


def _ours(feeds: dict, scale: float) -> np.ndarray:
    session = onnxplug.InferenceSession(_model("com.onnxplug", feeds, scale).SerializeToString(), kernels_only(),
                                        providers=["numpy"])
    return session.run(None, feeds)[0]


def _reference(feeds: dict, scale: float) -> np.ndarray:
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    batch, seq, width = q.shape
    split = lambda t: t.reshape(t.shape[0], t.shape[1], HEADS, -1).transpose(0, 2, 1, 3)  # noqa: E731
    scores = split(q) @ split(k).transpose(0, 1, 3, 2) * scale
    if "bias" in feeds:
        scores = scores + feeds["bias"].astype(np.float64)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    return (probs @ split(v)).transpose(0, 2, 1, 3).reshape(batch, seq, -1)


def _feeds(batch: int, seq: int, length: int, width: int = 64, dtype=np.float32, spread: float = 1.0) -> dict:
    return {"q": (spread * RNG.standard_normal((batch, seq, width))).astype(dtype),
            "k": RNG.standard_normal((batch, length, width)).astype(dtype),
            "v": RNG.standard_normal((batch, length, width)).astype(dtype)}


@pytest.mark.parametrize("batch,seq,length", [(1, 128, 128), (3, 17, 40), (2, 1, 9)])
def test_padding_mask_matches_onnxruntime(batch, seq, length):
    feeds = _feeds(batch, seq, length)
    lengths = RNG.integers(1, length + 1, size=batch)
    mask = np.where(np.arange(length)[None, :] < lengths[:, None], 0.0, -10000.0).astype(np.float32)
    feeds["bias"] = np.broadcast_to(mask[:, None, None, :], (batch, 1, seq, length)).copy()
    (expected,) = ort_outputs(_model("com.microsoft", feeds, 0.125, positions=[0, 1, 2, 5]), feeds)
    np.testing.assert_allclose(_ours(feeds, 0.125), expected, rtol=1e-4, atol=2e-6)
    feeds["bias"] = mask[:, None, None, :]  # the [B, 1, 1, L] form the optimizer's fusion passes
    np.testing.assert_allclose(_ours(feeds, 0.125), expected, rtol=1e-4, atol=2e-6)


def test_without_bias_and_in_float64():
    feeds = _feeds(2, 30, 50)
    np.testing.assert_allclose(_ours(feeds, 0.25), _reference(feeds, 0.25), rtol=1e-5, atol=2e-6)
    feeds64 = {n: v.astype(np.float64) for n, v in feeds.items()}
    np.testing.assert_allclose(_ours(feeds64, 0.25), _reference(feeds64, 0.25), rtol=1e-11, atol=1e-12)


def test_rows_far_below_the_largest_score_stay_exact():
    # Head 0 of query row 0 gets logits in the thousands, so one shift for the whole tensor would
    # underflow every other row: the kernel must shift row by row instead.
    feeds = _feeds(2, 16, 24)
    feeds["q"][0, 0, :16] *= 400
    feeds["bias"] = np.where(np.arange(24) < 20, 0.0, -10000.0).astype(np.float32)[None, None, None, :]
    np.testing.assert_allclose(_ours(feeds, 0.125), _reference(feeds, 0.125), rtol=1e-4, atol=2e-6)


def test_a_batch_item_with_every_key_masked_matches_onnxruntime():
    # softmax(s - 10000) is softmax(s) up to float32 rounding of s - 10000 (1e-3 at that size),
    # the same rounding onnxruntime makes; a shared shift would leave these rows at 0 / 0.
    feeds = _feeds(2, 16, 24)
    mask = np.zeros((2, 1, 16, 24), np.float32)
    mask[1] = -10000.0
    feeds["bias"] = mask
    (expected,) = ort_outputs(_model("com.microsoft", feeds, 0.125, positions=[0, 1, 2, 5]), feeds)
    ours = _ours(feeds, 0.125)
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours, expected, rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(ours[0], expected[0], rtol=1e-4, atol=2e-6)


def test_minus_infinity_mask_and_nan_stay_in_their_rows():
    feeds = _feeds(1, 8, 12)
    mask = np.zeros((1, 1, 8, 12), np.float32)
    mask[..., 6:] = -np.inf
    feeds["bias"] = mask
    np.testing.assert_allclose(_ours(feeds, 0.5), _reference(feeds, 0.5), rtol=1e-5, atol=2e-6)
    feeds["q"][0, 3, 0] = np.nan  # row 3 of head 0 only
    ours = _ours(feeds, 0.5)
    assert np.isnan(ours[0, 3, :16]).all() and not np.isnan(np.delete(ours[0], 3, axis=0)).any()
    assert not np.isnan(ours[0, 3, 16:]).any()


def test_large_batches_go_image_by_image_over_the_product_threads(monkeypatch, parallel_for_calls):
    """Products worth splitting send each batch image to the product threads with its own softmax
    shift (here one image needs the per-row path, one has every key masked): outputs match
    onnxruntime and the one-pass path taken with a single thread."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops.com_onnxplug import op_fused_attention

    shared = parallel_for_calls(op_fused_attention)
    feeds = _feeds(6, 128, 128, width=256)
    feeds["q"][2, 0, :64] *= 400  # image 2, head 0, row 0: logits in the thousands
    lengths = np.array([128, 100, 60, 1, 128, 7])
    mask = np.where(np.arange(128)[None, :] < lengths[:, None], 0.0, -10000.0).astype(np.float32)
    mask[4] = -10000.0  # every key of image 4 masked
    feeds["bias"] = mask[:, None, None, :]
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    shared_out = _ours(feeds, 0.125)
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 1)
    one_pass = _ours(feeds, 0.125)
    assert shared == [(6, True), (6, False)]
    ort_feeds = dict(feeds, bias=np.broadcast_to(feeds["bias"], (6, 1, 128, 128)).copy())
    (expected,) = ort_outputs(_model("com.microsoft", ort_feeds, 0.125, positions=[0, 1, 2, 5]), ort_feeds)
    unmasked = [0, 1, 2, 3, 5]
    np.testing.assert_allclose(shared_out[unmasked], expected[unmasked], rtol=1e-4, atol=2e-6)
    np.testing.assert_allclose(shared_out[4], expected[4], rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(shared_out[unmasked], one_pass[unmasked], rtol=1e-4, atol=2e-6)
