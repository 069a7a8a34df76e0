"""Host side of the tiled GEMM in ``kernels/gemm.cl``: tile choice, build options, launches.

Every matrix product of the provider goes through :func:`gemm`: MatMul (with broadcast batch
dimensions), Gemm, and convolution (im2col or 1x1) with a fused bias/residual/activation epilogue.
Batches are described by two levels of strides, enough for ``[B, H]`` attention batches, a
broadcast operand (stride 0) and ``[N, groups]`` grouped convolutions without copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class TileConfig:
    """Tile sizes of one GEMM build: TM x (TN*NT) per work-group, KC-deep k chunks, RM x 16 per micro-tile."""

    tm: int
    tn: int
    nt: int
    kc: int
    rm: int
    nwi: int

    def options(self) -> list[str]:
        """The ``-D`` build options."""
        return [f"-DTM={self.tm}", f"-DTN={self.tn}", f"-DNT={self.nt}", f"-DKC={self.kc}",
                f"-DRM={self.rm}", f"-DNWI={self.nwi}"]


# Tuned on PoCL (2-core AMD EPYC, AVX2): one work-item per group, 6x16 micro-tiles, 256-deep k
# chunks (packed A 96x256 and B 256x64 fit the 512 KiB L2 together). Listed largest first; the
# first that still gives every compute unit two groups is used.
CPU_TILES = (TileConfig(96, 64, 2, 256, 6, 1), TileConfig(96, 64, 1, 256, 6, 1),
             TileConfig(96, 32, 1, 256, 6, 1), TileConfig(48, 32, 1, 256, 6, 1),
             TileConfig(24, 16, 1, 256, 6, 1))
#: Column tilings tried, widest first, when the tile height is fixed (pre-packed A).
CPU_COLUMNS = ((64, 2), (64, 1), (32, 1), (16, 1))
# Devices with small local memory and many lanes (GPUs): 32 work-items share a 48x64 tile and
# 32-deep k chunks (14 KiB of local memory). Correct everywhere; not tuned on real GPUs.
GPU_TILES = (TileConfig(48, 64, 1, 32, 6, 32), TileConfig(24, 32, 1, 32, 6, 8))


@dataclass
class Operand:
    """A matrix operand: buffer, element offset, leading dimension and two batch strides.

    A ``packed`` A operand is in the kernel's micro-panel layout (see :func:`pack_a`) for the
    tile configuration passed to :func:`gemm`; ``packed`` is only meaningful for A.
    """

    array: Any
    offset: int = 0
    ld: int = 0
    s1: int = 0
    s2: int = 0
    packed: bool = False


def pack_a(a: np.ndarray, tm: int, kc: int, rm: int) -> np.ndarray:
    """Host-side packing of ``a`` [G, M, K] into [G][ceil(M/tm)][ceil(K/kc)][tm/rm][kc][rm] (zero padded)."""
    g, m, k = a.shape
    mt, nkc = -(-m // tm), -(-k // kc)
    padded = np.zeros((g, mt * tm, nkc * kc), dtype=a.dtype)
    padded[:, :m, :k] = a
    panels = padded.reshape(g, mt, tm // rm, rm, nkc, kc).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(panels).reshape(g, -1)


@dataclass
class Epilogue:
    """What is applied to ``alpha * A @ B`` before the store."""

    alpha: float = 1.0
    beta: float = 1.0
    bias: Any = None  # array read at bias_offset + m * bias_sm + n * bias_sn
    bias_offset: int = 0
    bias_sm: int = 0
    bias_sn: int = 0
    bias_s2: int = 0  # bias offset per inner batch index (groups of a convolution)
    residual: Any = None  # array with C's layout, added after the bias
    residual_offset: int = 0
    activation: str = ""  # "", "relu" or "clip"
    clip: tuple[float, float] = field(default=(-np.inf, np.inf))


def cpu_tile_height(m: int) -> int:
    """Tile height on CPUs: 96 rows, or M rounded up to the 6-row micro-tile when shorter."""
    base = CPU_TILES[0]
    return base.tm if m >= base.tm else -(-m // base.rm) * base.rm


def pick_tiles(runtime: ClRuntime, m: int, n: int, batch: int, tm: int | None = None) -> TileConfig:
    """The largest tile that still keeps every compute unit busy with at least two work-groups.

    On CPUs a short M gets a tile height rounded up to the micro-tile (a 64-row product does not
    compute 32 rows of padding); ``tm`` fixes the height (operands packed for it beforehand) and
    only the column tiling is chosen.
    """
    tiles = CPU_TILES if runtime.entry.kind == "cpu" else GPU_TILES
    wanted = 2 * max(1, runtime.entry.compute_units)
    if runtime.entry.kind == "cpu" and (tm is not None or m < tiles[0].tm):
        base = tiles[0]
        height = tm or cpu_tile_height(m)
        rows = -(-m // height)
        for tn, nt in CPU_COLUMNS:
            if rows * -(-n // (tn * nt)) * batch >= wanted:
                return TileConfig(height, tn, nt, base.kc, base.rm, base.nwi)
        tn, nt = CPU_COLUMNS[-1]
        return TileConfig(height, tn, nt, base.kc, base.rm, base.nwi)
    for cfg in tiles:
        groups = -(-m // cfg.tm) * -(-n // (cfg.tn * cfg.nt)) * batch
        if groups >= wanted:
            return cfg
    return tiles[-1]


def _kernel(runtime: ClRuntime, dtype: np.dtype, cfg: TileConfig, trans_a: bool, trans_b: bool,
            epi: Epilogue, packed_a: bool = False) -> Any:
    real = "double" if dtype == np.float64 else "float"
    options = [f"-DREAL={real}", *cfg.options(), "-cl-mad-enable"]
    if real == "double":
        options.append("-DREAL_IS_DOUBLE")
    for flag, on in (("TRANS_A", trans_a), ("TRANS_B", trans_b), ("PACKED_A", packed_a),
                     ("HAS_BIAS", epi.bias is not None),
                     ("HAS_RESIDUAL", epi.residual is not None), ("ACT_RELU", epi.activation == "relu"),
                     ("ACT_CLIP", epi.activation == "clip")):
        if on:
            options.append(f"-D{flag}")
    return runtime.programs.kernel("gemm.cl", kernel_source("gemm.cl"), "gemm", options)


def gemm(runtime: ClRuntime, m: int, n: int, k: int, a: Operand, b: Operand, c: Operand, *,
         trans_a: bool = False, trans_b: bool = False, batch: tuple[int, int] = (1, 1),
         epilogue: Epilogue | None = None, tiles: TileConfig | None = None) -> None:
    """Enqueue ``C[b1, b2] = epilogue(op(A[b1, b2]) @ op(B[b1, b2]))`` for every (b1, b2) in ``batch``.

    Operands are element offsets into their buffers; ``ld`` is the row stride of the stored
    matrix (before the optional transpose) and ``s1``/``s2`` the strides between batch entries.
    ``tiles`` overrides the automatic tile choice (tests use it to run the cooperative variant).
    """
    epi = epilogue or Epilogue()
    dtype = np.dtype(c.array.dtype)
    nb1, nb2 = batch
    if m == 0 or n == 0 or nb1 * nb2 == 0:
        return
    if max(m * n, m * k, n * k, c.array.size, a.array.size, b.array.size) > INT32_MAX:
        raise OverflowError(f"GEMM of {m}x{k} by {k}x{n} exceeds the 32-bit indexing of the OpenCL kernel")
    if epi.bias is not None and epi.bias_sn not in (0, 1):
        raise ValueError(f"GEMM bias column stride must be 0 or 1, got {epi.bias_sn}")
    if k == 0:
        _empty_k(runtime, m, n, c, batch, epi)
        return
    if a.packed and tiles is None:
        raise ValueError("a packed GEMM operand needs the tile configuration it was packed for")
    cfg = tiles or pick_tiles(runtime, m, n, nb1 * nb2)
    kernel = _kernel(runtime, dtype, cfg, trans_a, trans_b, epi, a.packed)
    real = dtype.type
    i32 = np.int32
    bias = epi.bias if epi.bias is not None else c.array
    residual = epi.residual if epi.residual is not None else c.array
    lo, hi = epi.clip
    groups = (-(-n // (cfg.tn * cfg.nt)) * cfg.nwi, -(-m // cfg.tm), nb1 * nb2)
    runtime.launch(kernel, groups, (cfg.nwi, 1, 1),
                   i32(m), i32(n), i32(k),
                   a.array.base_data, i32(a.array.offset // dtype.itemsize + a.offset), i32(a.ld), i32(a.s1), i32(a.s2),
                   b.array.base_data, i32(b.array.offset // dtype.itemsize + b.offset), i32(b.ld), i32(b.s1), i32(b.s2),
                   c.array.base_data, i32(c.array.offset // dtype.itemsize + c.offset), i32(c.ld), i32(c.s1), i32(c.s2),
                   i32(nb2), real(epi.alpha), real(epi.beta),
                   bias.base_data, i32(bias.offset // dtype.itemsize + epi.bias_offset), i32(epi.bias_sm),
                   i32(epi.bias_sn), i32(epi.bias_s2),
                   residual.base_data, i32(residual.offset // dtype.itemsize + epi.residual_offset),
                   real(max(lo, np.finfo(dtype).min)), real(min(hi, np.finfo(dtype).max)),
                   label=f"gemm M={m} N={n} K={k} batch={nb1 * nb2} tile={cfg.tm}x{cfg.tn * cfg.nt}"
                   if runtime.profiling else "")


def _empty_k(runtime: ClRuntime, m: int, n: int, c: Operand, batch: tuple[int, int], epi: Epilogue) -> None:
    """K = 0: the product is zero, so only the epilogue remains (rare; computed on the host)."""
    out = np.zeros((batch[0], batch[1], m, n), dtype=c.array.dtype)
    if epi.bias is not None:
        flat = runtime.to_host(epi.bias).reshape(-1)
        mm, nn = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        out += epi.beta * flat[epi.bias_offset + mm * epi.bias_sm + nn * epi.bias_sn]
    if epi.residual is not None:
        out += runtime.to_host(epi.residual).reshape(out.shape)
    if epi.activation == "relu":
        out = np.maximum(out, 0)
    elif epi.activation == "clip":
        out = np.clip(out, *epi.clip)
    from onnxplug_opencl.engine.elementwise import View
    from onnxplug_opencl.engine.movement import strided_copy

    src = runtime.to_device(np.ascontiguousarray(out, dtype=c.array.dtype))
    shape = out.shape
    strided_copy(runtime, View.of(src), View(c.array, shape, (c.s1, c.s2, c.ld, 1), c.offset), shape)
