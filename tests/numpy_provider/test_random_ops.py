"""Random ops: shape, dtype, value range and distribution moments (values are draws, not fixed)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from tests.numpy_provider.single_node_oracle import node_model, run_ours


def run(op, feeds=None, like=None, **attrs):
    feeds = feeds or {}
    model = node_model(op, feeds, opset=22, **attrs)
    return run_ours(model, feeds, like=like)[0]


@pytest.mark.parametrize("dtype,np_dtype", [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64),
                                            (TensorProto.FLOAT16, np.float16)])
def test_random_normal_moments(dtype, np_dtype):
    y = run("RandomNormal", shape=[200, 100], mean=2.0, scale=3.0, dtype=dtype, like=[np.zeros((200, 100), np_dtype)])
    assert y.dtype == np_dtype and y.shape == (200, 100)
    assert abs(float(y.astype(np.float64).mean()) - 2.0) < 0.1 and abs(float(y.astype(np.float64).std()) - 3.0) < 0.1


def test_random_uniform_range_and_seed_repeats():
    like = [np.zeros((100, 50), np.float32)]
    a = run("RandomUniform", shape=[100, 50], low=-2.0, high=5.0, seed=7.0, like=like)
    b = run("RandomUniform", shape=[100, 50], low=-2.0, high=5.0, seed=7.0, like=like)
    assert a.dtype == np.float32 and a.min() >= -2 and a.max() <= 5 and abs(float(a.mean()) - 1.5) < 0.2
    np.testing.assert_array_equal(a, b)  # a seed gives the same draws, run after run


def test_like_ops_take_input_shape_and_dtype():
    x = np.zeros((3, 4), np.float64)
    assert run("RandomNormalLike", {"x": x}, like=[x]).dtype == np.float64
    y = run("RandomUniformLike", {"x": x}, dtype=TensorProto.FLOAT, like=[x.astype(np.float32)])
    assert y.dtype == np.float32 and y.shape == (3, 4) and (y >= 0).all() and (y <= 1).all()


def test_bernoulli_frequencies():
    p = np.array([0.0, 0.2, 0.9, 1.0], np.float32)[None, :].repeat(5000, axis=0)
    y = run("Bernoulli", {"p": p}, like=[p])
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 1.0}
    np.testing.assert_allclose(y.mean(axis=0), [0.0, 0.2, 0.9, 1.0], atol=0.03)


def test_multinomial_frequencies_and_dtype():
    probs = np.array([[0.1, 0.2, 0.7], [1.0, 0.0, 0.0]], np.float32)
    logits = np.log(np.maximum(probs, 1e-30)).astype(np.float32)
    y = run("Multinomial", {"x": logits}, sample_size=20000, like=[np.zeros((2, 20000), np.int32)])
    assert y.dtype == np.int32 and y.shape == (2, 20000) and y.min() >= 0 and y.max() <= 2
    np.testing.assert_allclose(np.bincount(y[0], minlength=3) / 20000, [0.1, 0.2, 0.7], atol=0.02)
    assert (y[1] == 0).all()
