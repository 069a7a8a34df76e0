"""Parallel conv kernels that hand work to other threads without Python: numba ``prange`` regions
(its OpenMP layer, whose idle workers spin briefly before sleeping) calling OpenBLAS's ``sgemm``
directly through ctypes. Handing a chunk to a Python pool thread costs wake-ups and GIL hand-offs
that outweigh most convs of a small model at batch 1; inside a ``prange`` region no thread needs the
GIL, and back-to-back regions find the workers still spinning. Those spinning workers take the core
a Python pool thread would need, so RNN input projections (run next on the pool) stay off this path.

float32 only; OpenBLAS runs one thread per call (the provider pins it), as threads call it at once.
Needs a thread-safe numba threading layer (OpenMP or TBB). GNU OpenMP does not survive ``fork``: a
child forked after a parallel conv must not run one (``spawn``/``forkserver`` are fine).
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from onnxplug_numba.kernels.conv import _finish_row
from onnxplug_numba.kernels.depthwise import depthwise_phased
from onnxplug_numba.threads import numpy_openblas

_ROW_MAJOR, _NO_TRANS = 101, 111


def _find_sgemm() -> str | None:
    """Load numpy's bundled OpenBLAS for the JIT linker; the name of its ``cblas_sgemm`` with 64-bit
    integers, or None."""
    for path, lib in numpy_openblas():
        for symbol in ("scipy_cblas_sgemm64_", "cblas_sgemm64_"):
            if hasattr(lib, symbol):
                # by name, not by address: compiled kernels that call it can then be cached on disk
                llvm.load_library_permanently(path)
                return symbol
    return None


def _threadsafe_layer() -> bool:
    """Whether numba will run prange regions on a layer that allows launches from several threads
    at once (OpenMP or TBB; the fallback "workqueue" aborts the process on concurrent launches)."""
    if numba.config.THREADING_LAYER not in ("default", "safe", "threadsafe", "omp", "tbb"):
        return False
    for module in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
        try:
            __import__(module)
            return True
        except ImportError:
            continue
    return False


_SGEMM = _find_sgemm()
#: Whether prange regions may run here, from any number of Python threads at once.
PRANGE_AVAILABLE = _threadsafe_layer()
#: Whether the parallel kernels can run here: a reachable 64-bit-integer OpenBLAS sgemm and a
#: thread-safe numba threading layer.
AVAILABLE = _SGEMM is not None and PRANGE_AVAILABLE


@intrinsic
def _sgemm(typingctx, m, n, k, a, lda, b, ldb, c, ldc):  # type: ignore[no-untyped-def]
    """cblas_sgemm(RowMajor, NoTrans, NoTrans, m, n, k, 1, a, lda, b, ldb, 0, c, ldc); a, b, c are
    addresses (uintp)."""
    sig = types.void(m, n, k, a, lda, b, ldb, c, ldc)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i32, i64, f32, ptr = ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, ptr, i64, ptr, i64, f32, ptr, i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _SGEMM)
        m_, n_, k_, a_, lda_, b_, ldb_, c_, ldc_ = (
            context.cast(builder, v, t, types.int64) for v, t in zip(args, signature.args))
        builder.call(fn, [ir.Constant(i32, _ROW_MAJOR), ir.Constant(i32, _NO_TRANS), ir.Constant(i32, _NO_TRANS),
                          m_, n_, k_, ir.Constant(f32, 1.0), builder.inttoptr(a_, ptr), lda_,
                          builder.inttoptr(b_, ptr), ldb_, ir.Constant(f32, 0.0), builder.inttoptr(c_, ptr), ldc_])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def sgemm_strided(typingctx, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # type: ignore[no-untyped-def]
    """cblas_sgemm(RowMajor, NoTrans, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc): ``trans_b``
    is CBLAS's code (111 no, 112 transposed); a, b, c are addresses (uintp), so any row pitch works."""
    sig = types.void(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i32, i64, f32, ptr = ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, ptr, i64, ptr, i64, f32, ptr, i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _SGEMM)
        trans, m_, n_, k_ = (context.cast(builder, v, t, types.int64) for v, t in zip(args[:4], signature.args[:4]))
        alpha_ = context.cast(builder, args[4], signature.args[4], types.float32)
        beta_ = context.cast(builder, args[9], signature.args[9], types.float32)
        a_, lda_, b_, ldb_, c_, ldc_ = (context.cast(builder, v, t, types.int64)
                                        for v, t in zip(args[5:9] + args[10:], signature.args[5:9] + signature.args[10:]))
        builder.call(fn, [ir.Constant(i32, _ROW_MAJOR), ir.Constant(i32, _NO_TRANS), builder.trunc(trans, i32),
                          m_, n_, k_, alpha_, builder.inttoptr(a_, ptr), lda_,
                          builder.inttoptr(b_, ptr), ldb_, beta_, builder.inttoptr(c_, ptr), ldc_])
        return context.get_dummy_value()

    return sig, codegen


if AVAILABLE:
    @njit(nogil=True, cache=True)
    def _product_columns(w, x, y, p0, p1):  # type: ignore[no-untyped-def]
        """y[:, p0:p1] = w @ x[:, p0:p1] for C-contiguous float32 w (M, K), x (K, P), y (M, P)."""
        m, k = w.shape
        p = x.shape[1]
        _sgemm(m, p1 - p0, k, w.ctypes.data, k, x.ctypes.data + 4 * p0, p, y.ctypes.data + 4 * p0, p)

    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def pointwise_conv(w, x, bias, residual, has_residual, act, alpha, beta, y, bands):  # type: ignore[no-untyped-def]
        """y[n] = act(w @ x[n] + bias (+ residual[n])) for x (N, K, P), w (M, K), y (N, M, P), as
        N * ``bands`` (image, column band) items spread over the threads; each item runs its
        product and then its epilogue while the band is still in the core's cache."""
        n_img, m_ch, p = y.shape[0], y.shape[1], y.shape[2]
        for item in prange(n_img * bands):
            i = item // bands
            band = item % bands
            p0 = (p * band // bands) // 16 * 16  # BLAS works in panels of 16 columns
            p1 = p if band == bands - 1 else (p * (band + 1) // bands) // 16 * 16
            if p1 <= p0:
                continue
            _product_columns(w, x[i], y[i], p0, p1)
            for m in range(m_ch):
                _finish_row(y[i, m, p0:p1], bias[m], residual[i, m, p0:p1], has_residual, act, alpha, beta)

    @njit(nogil=True, parallel=True, cache=True)
    def depthwise_conv(x, w, bias, residual, has_residual, act, alpha, beta,
                       sh, sw, dh, dw, ph, pw, y, chunks):  # type: ignore[no-untyped-def]
        """The phase-plane depthwise kernel over ``chunks`` slices of the output planes."""
        total = y.shape[0] * y.shape[1]
        for c in prange(chunks):
            depthwise_phased(x, w, bias, residual, has_residual, act, alpha, beta, sh, sw, dh, dw, ph, pw, y,
                             total * c // chunks, total * (c + 1) // chunks)


def use_threads(count: int) -> int:
    """Set how many threads the next ``prange`` region of this thread uses; returns that number
    (at most numba's pool size)."""
    count = max(1, min(count, numba.config.NUMBA_NUM_THREADS))
    if numba.get_num_threads() != count:
        numba.set_num_threads(count)
    return count


if AVAILABLE:
    @njit(inline="always")
    def _pad_band(x, i, r0, ph, pw, padded):  # type: ignore[no-untyped-def]
        """padded (C, hb, wp) = rows r0 - ph ... of image ``i`` of x, zero-padded (rows out of range
        and the margins stay zero)."""
        channels, height, width = x.shape[1], x.shape[2], x.shape[3]
        hb = padded.shape[1]
        for ch in range(channels):
            for t in range(hb):
                src_row = r0 + t - ph
                if 0 <= src_row < height:
                    src = x[i, ch, src_row]
                    dst = padded[ch, t, pw:]
                    for k in range(width):
                        dst[k] = src[k]

    @njit(inline="always")
    def _band_of(item, bands, oh):  # type: ignore[no-untyped-def]
        """(image, first output row, row count) of work item ``item`` of N * ``bands``."""
        band = item % bands
        r0 = oh * band // bands
        return item // bands, r0, oh * (band + 1) // bands - r0

    @njit(inline="always")
    def _padded_band(x, i, r0, rows, kh, dh, ph, pw, wp):  # type: ignore[no-untyped-def]
        """The zero-padded (C, hb, wp) band of image ``i`` that output rows r0 ... r0 + rows read,
        with one slack row: the extra columns of the last row read past it."""
        padded = np.zeros((x.shape[1], rows + (kh - 1) * dh + 1, wp), dtype=x.dtype)
        _pad_band(x, i, r0, ph, pw, padded)
        return padded

    @njit(inline="always")
    def _finish_band(product, y, i, first, r0, rows, wp, bias, residual, has_residual, act, alpha,
                     beta):  # type: ignore[no-untyped-def]
        """Output channels first ... of image ``i``, rows r0 ... r0 + rows = the epilogue of the
        band's product (M, rows * wp), whose rows have the pitch ``wp``."""
        ow = y.shape[3]
        for m in range(product.shape[0]):
            ch = first + m
            for yo in range(rows):
                row = y[i, ch, r0 + yo]
                src = product[m, yo * wp:yo * wp + ow]
                for k in range(ow):
                    row[k] = src[k]
                _finish_row(row, bias[ch], residual[i, ch, r0 + yo], has_residual, act, alpha, beta)

    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def pitched_conv(x, wmat, bias, residual, has_residual, act, alpha, beta,
                     kh, kw, dh, dw, ph, pw, y, bands):  # type: ignore[no-untyped-def]
        """Stride-1 conv as im2col + sgemm over a zero-padded band of rows with the row pitch ``wp``
        (tap (c, i, j) of output element ``e = yo * wp + xo`` is at ``offset(c, i, j) + e``, so each
        im2col row is one contiguous copy), for N * ``bands`` (image, row band) items spread over
        the threads; x (N, C, H, W), wmat (group, M/group, C/group*kh*kw), y (N, M, OH, OW)."""
        n_img, channels, width = x.shape[0], x.shape[1], x.shape[3]
        group, mg, depth = wmat.shape
        cg = channels // group
        oh, ow = y.shape[2], y.shape[3]
        wp = max(width + pw, ow + (kw - 1) * dw)
        taps = kh * kw
        for item in prange(n_img * bands):
            i, r0, rows = _band_of(item, bands, oh)
            if rows <= 0:
                continue
            padded = _padded_band(x, i, r0, rows, kh, dh, ph, pw, wp)
            hb = padded.shape[1]
            flat = padded.ravel()
            count = rows * wp
            cols = np.empty((depth, count), dtype=x.dtype)
            product = np.empty((mg, count), dtype=x.dtype)
            for g in range(group):
                for r in range(depth):
                    ch = g * cg + r // taps
                    off = (ch * hb + ((r % taps) // kw) * dh) * wp + (r % kw) * dw
                    src = flat[off:off + count]
                    dst = cols[r]
                    for e in range(count):
                        dst[e] = src[e]
                _sgemm(mg, count, depth, wmat[g].ctypes.data, depth, cols.ctypes.data, count,
                       product.ctypes.data, count)
                _finish_band(product, y, i, g * mg, r0, rows, wp, bias, residual, has_residual, act, alpha, beta)


if AVAILABLE:
    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def tap_conv(x, wtaps, bias, residual, has_residual, act, alpha, beta,
                 kh, kw, dh, dw, ph, pw, y, bands):  # type: ignore[no-untyped-def]
        """pitched_conv for one group without im2col: in the padded band, tap (i, j) of every input
        channel is a (C, rows * wp) matrix with row pitch hb * wp at offset (i*dh) * wp + j*dw, so
        the output band is kh*kw products accumulated by BLAS (beta = 1) straight from the band;
        wtaps (kh*kw, M, C), y (N, M, OH, OW). Faster than pitched_conv on 3x3 layers: no column
        matrix is written and read."""
        n_img, channels, width = x.shape[0], x.shape[1], x.shape[3]
        taps, m_ch, _ = wtaps.shape
        oh, ow = y.shape[2], y.shape[3]
        wp = max(width + pw, ow + (kw - 1) * dw)
        for item in prange(n_img * bands):
            i, r0, rows = _band_of(item, bands, oh)
            if rows <= 0:
                continue
            padded = _padded_band(x, i, r0, rows, kh, dh, ph, pw, wp)
            hb = padded.shape[1]
            count = rows * wp
            product = np.empty((m_ch, count), dtype=x.dtype)
            for t in range(taps):
                offset = ((t // kw) * dh) * wp + (t % kw) * dw
                sgemm_strided(_NO_TRANS, m_ch, count, channels, 1.0, wtaps[t].ctypes.data, channels,
                              padded.ctypes.data + 4 * offset, hb * wp, 0.0 if t == 0 else 1.0,
                              product.ctypes.data, count)
            _finish_band(product, y, i, 0, r0, rows, wp, bias, residual, has_residual, act, alpha, beta)


if AVAILABLE:
    @njit(nogil=True, cache=True)
    def _product_block(a, b, c, r0, r1, c0, c1):  # type: ignore[no-untyped-def]
        """c[r0:r1, c0:c1] = a[r0:r1] @ b[:, c0:c1] for C-contiguous float32 a (M, K), b (K, N), c (M, N)."""
        k = a.shape[1]
        n = b.shape[1]
        _sgemm(r1 - r0, c1 - c0, k, a.ctypes.data + 4 * r0 * k, k, b.ctypes.data + 4 * c0, n,
               c.ctypes.data + 4 * (r0 * n + c0), n)

    @njit(nogil=True, parallel=True, cache=True)
    def matmul_bias(a, b, bias, has_bias, c, items, by_rows):  # type: ignore[no-untyped-def]
        """c = a @ b (+ bias over the columns) for C-contiguous float32 a (M, K), b (K, N), c (M, N),
        as ``items`` bands of rows (``by_rows``) or of columns (multiples of 16) over the threads;
        each band gets its bias right after its product."""
        m, n = c.shape
        for item in prange(items):
            if by_rows:
                r0, r1 = m * item // items, m * (item + 1) // items
                c0, c1 = 0, n
            else:
                r0, r1 = 0, m
                c0 = (n * item // items) // 16 * 16
                c1 = n if item == items - 1 else (n * (item + 1) // items) // 16 * 16
            if r1 <= r0 or c1 <= c0:
                continue
            _product_block(a, b, c, r0, r1, c0, c1)
            if has_bias:
                for r in range(r0, r1):
                    row = c[r]
                    for j in range(c0, c1):
                        row[j] += bias[j]


if AVAILABLE:
    from onnxplug_numba.kernels.conv import im2col_padded as _im2col_padded

    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def im2col_conv(x, wmat, bias, residual, has_residual, act, alpha, beta,
                    kh, kw, sh, sw, dh, dw, ph, pw, y, bands):  # type: ignore[no-untyped-def]
        """Any 2-D conv as im2col + sgemm, for N * ``bands`` (image, row band) items spread over the
        threads; x (N, C, H, W), wmat (group, M/group, C/group*kh*kw), y (N, M, OH, OW)."""
        n_img, channels = x.shape[0], x.shape[1]
        group, mg, depth = wmat.shape
        cg = channels // group
        oh, ow = y.shape[2], y.shape[3]
        plane = oh * ow
        for item in prange(n_img * bands):
            i = item // bands
            band = item % bands
            r0, r1 = oh * band // bands, oh * (band + 1) // bands
            if r1 <= r0:
                continue
            count = (r1 - r0) * ow
            cols = np.empty((depth, count), dtype=x.dtype)
            out = y[i].reshape(y.shape[1], plane)
            for g in range(group):
                # np.int64: a literal 0 would compile a second specialisation of im2col_padded
                _im2col_padded(x[i], g * cg, (g + 1) * cg, kh, kw, sh, sw, dh, dw, ph, pw, r0, r1 - r0, ow, cols,
                               np.int64(0))
                first = g * mg
                # the product goes straight into y: the group's channels, the band's columns
                _sgemm(mg, count, depth, wmat[g].ctypes.data, depth, cols.ctypes.data, count,
                       out.ctypes.data + 4 * (first * plane + r0 * ow), plane)
                for m in range(first, first + mg):
                    _finish_row(out[m, r0 * ow:r1 * ow], bias[m], residual[i, m].reshape(plane)[r0 * ow:r1 * ow],
                                has_residual, act, alpha, beta)
