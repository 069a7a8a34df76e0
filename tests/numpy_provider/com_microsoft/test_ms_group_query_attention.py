"""com.microsoft GroupQueryAttention against onnxruntime: first prompt, decoding and a later prompt
(one row, as onnxruntime allows) with a KV cache (per-row lengths), packed QKV, grouped heads, local window, softcap, smooth softmax,
scale, rotary embedding (halves and interleaved); inputs of later versions refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import NotImplementedOpError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run

RNG = np.random.default_rng(97)
B, N, NKV, H, MAX = 2, 4, 2, 16, 12  # onnxruntime rotates heads of a multiple of 16 only
OUTS = ["y", "present_key", "present_value"]


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _feeds(seq, past=None, lengths=None, packed=False, rotary=False, batch=B):
    lengths = np.array(lengths if lengths is not None else [seq] * batch)
    total = int(lengths.max())
    angles = RNG.uniform(0, 6, (MAX, H // 2)).astype(np.float32)
    feeds = {"q": _r(batch, seq, (N + 2 * NKV) * H) if packed else _r(batch, seq, N * H),
             "k": None if packed else _r(batch, seq, NKV * H), "v": None if packed else _r(batch, seq, NKV * H),
             "past_key": None if past is None else _r(batch, NKV, past, H),
             "past_value": None if past is None else _r(batch, NKV, past, H),
             "seqlens_k": (lengths - 1).astype(np.int32), "total": np.array(total, np.int32),
             "cos": np.cos(angles) if rotary else None, "sin": np.sin(angles) if rotary else None}
    return feeds


CASES = {
    "first_prompt": dict(seq=5),
    "first_prompt_empty_past": dict(seq=5, past=0),
    "decode": dict(seq=1, past=6, lengths=[7, 4]),
    "later_prompt": dict(seq=3, past=6, lengths=[9], batch=1),  # onnxruntime: one row only
    "later_prompt_static_cache": dict(seq=3, past=10, lengths=[7], batch=1),
    "decode_static_cache": dict(seq=1, past=10, lengths=[7, 4]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("packed", [False, True])
def test_cache_cases(case, packed):
    assert_ms_matches("GroupQueryAttention", _feeds(packed=packed, **CASES[case]), outputs=OUTS,
                      num_heads=N, kv_num_heads=NKV)


@pytest.mark.parametrize("attrs", [{"local_window_size": 2}, {"softcap": 2.0}, {"smooth_softmax": 1},
                                   {"scale": 0.1}])
@pytest.mark.parametrize("case", ["first_prompt", "later_prompt"])
def test_attributes(attrs, case):
    assert_ms_matches("GroupQueryAttention", _feeds(**CASES[case]), outputs=OUTS, num_heads=N, kv_num_heads=NKV,
                      **attrs)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("case", ["first_prompt", "decode", "later_prompt"])
def test_rotary(interleaved, case):
    assert_ms_matches("GroupQueryAttention", _feeds(rotary=True, **CASES[case]), outputs=OUTS, num_heads=N,
                      kv_num_heads=NKV, do_rotary=1, rotary_interleaved=interleaved)


def test_attention_bias_refused_by_name():
    feeds = _feeds(4)
    feeds.update({"position_ids": None, "attention_bias": _r(B, 1, 4, 4)})
    with pytest.raises(NotImplementedOpError, match="attention_bias"):
        ours_run(ms_model("GroupQueryAttention", feeds, outputs=OUTS, num_heads=N, kv_num_heads=NKV), feeds,
                 [_r(B, 4, N * H), _r(B, NKV, 4, H), _r(B, NKV, 4, H)])
