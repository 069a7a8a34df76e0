"""com.microsoft Gelu, BiasGelu, FastGelu (with and without bias) and QuickGelu against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(3)


def _x(shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 3).astype(dtype)


@pytest.mark.parametrize("shape", [(2, 5, 16), (3, 1024), (7,)])
def test_gelu_and_bias_gelu(shape):
    x = _x(shape)
    assert_ms_matches("Gelu", {"x": x})
    assert_ms_matches("BiasGelu", {"x": x, "b": _x(shape[-1])})


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("shape", [(2, 5, 16), (4, 300, 64)])
def test_fast_gelu(shape, with_bias):
    feeds = {"x": _x(shape), "b": _x(shape[-1]) if with_bias else None}
    assert_ms_matches("FastGelu", feeds)


def test_fast_gelu_float16():
    x = _x((3, 8), np.float16)
    assert_ms_matches("FastGelu", {"x": x, "b": _x(8, np.float16)}, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("alpha", [None, 1.0, -0.5])
def test_quick_gelu(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    assert_ms_matches("QuickGelu", {"x": _x((2, 3, 40))}, **attrs)
    assert_ms_matches("QuickGelu", {"x": np.array([-100.0, 0.0, 100.0], np.float32)}, **attrs)


def test_bias_gelu_refuses_a_bias_of_the_wrong_length():
    from onnxplug.errors import KernelError
    with pytest.raises(KernelError, match="BiasGelu"):
        from tests.numpy_provider.com_microsoft.ms_oracle import ms_model, ours_run
        x = _x((2, 8))
        ours_run(ms_model("BiasGelu", {"x": x, "b": _x(5)}), {"x": x, "b": _x(5)}, [x])
