"""The tiled GEMM kernel against numpy: tile edges, transposes, batches, epilogue, both tile layouts."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug_opencl.engine.gemm import CPU_TILES, GPU_TILES, Epilogue, Operand, gemm, pick_tiles

SHAPES = [(1, 1, 1), (5, 7, 3), (6, 16, 256), (7, 17, 257), (97, 130, 300), (64, 3136, 576), (300, 17, 1000),
          (193, 129, 513)]


def _run(rt, a, b, *, trans_a=False, trans_b=False, batch=1, epi=None, tiles=None):
    m = a.shape[-1] if trans_a else a.shape[-2]
    k = a.shape[-2] if trans_a else a.shape[-1]
    n = b.shape[-2] if trans_b else b.shape[-1]
    out = rt.empty((batch, m, n), a.dtype)
    gemm(rt, m, n, k, Operand(rt.to_device(a), 0, a.shape[-1], 0, m * k),
         Operand(rt.to_device(b), 0, b.shape[-1], 0, k * n), Operand(out, 0, n, 0, m * n),
         trans_a=trans_a, trans_b=trans_b, batch=(1, batch), epilogue=epi, tiles=tiles)
    return out.get()


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_shapes_not_multiple_of_tiles(rt, rng, m, n, k):
    a = rng.standard_normal((1, m, k), dtype=np.float32)
    b = rng.standard_normal((1, k, n), dtype=np.float32)
    np.testing.assert_allclose(_run(rt, a, b), a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
def test_transposed_operands(rt, rng, trans_a, trans_b):
    a = rng.standard_normal((1, 70, 50) if trans_a else (1, 50, 70), dtype=np.float32)
    b = rng.standard_normal((1, 90, 70) if trans_b else (1, 70, 90), dtype=np.float32)
    want = (a.transpose(0, 2, 1) if trans_a else a) @ (b.transpose(0, 2, 1) if trans_b else b)
    np.testing.assert_allclose(_run(rt, a, b, trans_a=trans_a, trans_b=trans_b), want, rtol=1e-4, atol=1e-3)


def test_batched_with_bias_residual_and_relu(rt, rng):
    a = rng.standard_normal((3, 33, 40), dtype=np.float32)
    b = rng.standard_normal((3, 40, 21), dtype=np.float32)
    bias = rng.standard_normal((33, 1), dtype=np.float32)
    res = rng.standard_normal((3, 33, 21), dtype=np.float32)
    epi = Epilogue(alpha=0.5, beta=2.0, bias=rt.to_device(bias), bias_sm=1, bias_sn=0,
                   residual=rt.to_device(res), activation="relu")
    want = np.maximum(0.5 * (a @ b) + 2.0 * bias + res, 0)
    np.testing.assert_allclose(_run(rt, a, b, batch=3, epi=epi), want, rtol=1e-4, atol=1e-4)


def test_clip_epilogue_and_row_bias(rt, rng):
    a = rng.standard_normal((1, 20, 30), dtype=np.float32)
    b = rng.standard_normal((1, 30, 50), dtype=np.float32)
    bias = rng.standard_normal((50,), dtype=np.float32)
    epi = Epilogue(bias=rt.to_device(bias), bias_sm=0, bias_sn=1, activation="clip", clip=(-0.5, 6.0))
    np.testing.assert_allclose(_run(rt, a, b, epi=epi), np.clip(a @ b + bias, -0.5, 6.0), rtol=1e-4, atol=1e-4)


def test_double_precision(rt, rng):
    if not rt.entry.fp64:
        pytest.skip("device has no fp64")
    a = rng.standard_normal((1, 45, 67))
    b = rng.standard_normal((1, 67, 29))
    np.testing.assert_allclose(_run(rt, a, b), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tiles", GPU_TILES)
def test_cooperative_work_group_variant(rt, rng, tiles):
    """The many-work-item layout meant for GPUs computes the same product (barriers, shared packing)."""
    a = rng.standard_normal((1, 100, 77), dtype=np.float32)
    b = rng.standard_normal((1, 77, 140), dtype=np.float32)
    np.testing.assert_allclose(_run(rt, a, b, tiles=tiles), a @ b, rtol=1e-4, atol=1e-3)


def test_zero_depth_gives_bias_only(rt, rng):
    a = np.zeros((1, 4, 0), np.float32)
    b = np.zeros((1, 0, 5), np.float32)
    bias = rng.standard_normal((4, 1), dtype=np.float32)
    epi = Epilogue(bias=rt.to_device(bias), bias_sm=1, bias_sn=0)
    np.testing.assert_allclose(_run(rt, a, b, epi=epi), np.broadcast_to(bias, (1, 4, 5)))


def test_tile_choice_keeps_both_cores_busy(rt):
    if rt.entry.kind != "cpu":
        pytest.skip("tile heuristics checked on CPU devices")
    big = pick_tiles(rt, 1024, 1024, 1)
    assert big == CPU_TILES[0]
    short = pick_tiles(rt, 64, 3136, 1)
    assert short.tm == 66  # 64 rows rounded up to the 6-row micro-tile, not a 96-row tile


@pytest.mark.parametrize("m,n,k,groups", [(64, 300, 576, 1), (7, 33, 600, 3), (200, 50, 90, 2)])
def test_prepacked_weights(rt, rng, m, n, k, groups):
    """Weights packed once on the host in panel layout give the same grouped product."""
    from onnxplug_opencl.engine.gemm import cpu_tile_height, pack_a

    if rt.entry.kind != "cpu":
        pytest.skip("weights are pre-packed on CPU devices")
    a = rng.standard_normal((groups, m, k), dtype=np.float32)
    b = rng.standard_normal((groups, k, n), dtype=np.float32)
    tm = cpu_tile_height(m)
    packed = pack_a(a, tm, CPU_TILES[0].kc, CPU_TILES[0].rm)
    out = rt.empty((groups, m, n), np.float32)
    cfg = pick_tiles(rt, m, n, groups, tm=tm)
    gemm(rt, m, n, k, Operand(rt.to_device(packed), 0, 0, 0, packed.shape[1], packed=True),
         Operand(rt.to_device(b), 0, n, 0, k * n), Operand(out, 0, n, 0, m * n), batch=(1, groups), tiles=cfg)
    np.testing.assert_allclose(out.get(), a @ b, rtol=1e-4, atol=1e-3)
