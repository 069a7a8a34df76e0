// GEMM on operands already packed into micro-panels in global memory (CPU devices):
// C[b] = act(A[b] @ B[b] + bias + residual[b]).
//
// A is [ceil(M/RM)][K][RM] (RM-row panels, rows past M zero) and B is [ceil(N/16)][K][16] (16-column
// panels, columns past N zero). Constant weights are packed once at session creation
// (engine/gemm.py: pack_panels) and convolution columns are written in this layout by
// im2col_packed.cl, so no work-group packs anything: each runs BLIS's register-blocked micro-kernel
// (RM x 16 of C in 2*RM REAL8 accumulators; one A broadcast and two B vector loads per k step)
// straight from the panels. The layout does not depend on the tile, so the host picks TM x TN per
// call to balance the work-groups over the compute units.
//
// A work-group computes a TM x TN block of C in KC-deep k chunks (an A panel chunk of RM*KC and a B
// panel chunk of 16*KC stay in L1 while the micro-tiles of the block reuse them); partial sums
// are kept in C and the epilogue runs on the last chunk.
//
// Build options: -DREAL=float|double -DTM -DTN -DKC -DRM (4 or 6), optionally -DHAS_BIAS
// (one value per row, bias_s2 between inner batch entries) or -DHAS_COL_BIAS (one per column: a
// linear layer's bias), -DHAS_RESIDUAL, -DACT_RELU, -DACT_CLIP.
//
// -DA_ROWS: A is an unpacked row-major matrix (row stride lda): activations times packed weights.

#include "real8.h"

#define RN 16

#define ACC(r) REAL8 c##r##0 = (REAL8)0, c##r##1 = (REAL8)0;
#ifdef A_ROWS
// A row-major (lda): the micro-tile's RM rows are read in place, one pointer each (rows past M
// repeat row M-1; their results are never stored).
#define A_AT(r) a##r[kk]
#define A_NEXT
#define A_ROW(r) __global const REAL* a##r = A + (long)min(m + (r), M - 1) * lda + k0;
#else
#define A_AT(r) ap[r]
#define A_NEXT ap += RM;
#define A_ROW(r)
#endif
#define MAC(r) { const REAL a = A_AT(r); c##r##0 += a * b0; c##r##1 += a * b1; }
#define MAC_HALF(r) { c##r##0 += A_AT(r) * b0; }
#define STORE_ROW(r) store_row(C, ldc, m + (r), n, M, N, c##r##0, c##r##1, last, first, bias, residual, \
                               act_lo, act_hi)

inline REAL8 finish(REAL8 v, const REAL b, __global const REAL* col_bias, __global const REAL* residual,
                    const REAL act_lo, const REAL act_hi) {
#ifdef HAS_BIAS
    v += b;
#endif
#ifdef HAS_COL_BIAS
    v += LOAD8(col_bias);
#endif
#ifdef HAS_RESIDUAL
    v += LOAD8(residual);
#endif
#ifdef ACT_RELU
    v = FMAX8(v, (REAL8)0);
#endif
#ifdef ACT_CLIP
    v = FMIN8(FMAX8(v, (REAL8)act_lo), (REAL8)act_hi);
#endif
    return v;
}

inline void store_row(__global REAL* C, const int ldc, const int m, const int n, const int M, const int N,
                      REAL8 v0, REAL8 v1, const int last, const int first, __global const REAL* bias,
                      __global const REAL* residual, const REAL act_lo, const REAL act_hi) {
    if (m >= M) return;
    __global REAL* cp = C + m * ldc + n;
    __global const REAL* rp = residual + m * ldc + n;
#ifdef HAS_BIAS
    const REAL b = bias[m];
#else
    const REAL b = (REAL)0;
#endif
    if (n + RN <= N) {
        if (!first) { v0 += LOAD8(cp); v1 += LOAD8(cp + 8); }
        if (last) {
            v0 = finish(v0, b, bias + n, rp, act_lo, act_hi);
            v1 = finish(v1, b, bias + n + 8, rp + 8, act_lo, act_hi);
        }
        STORE8(v0, cp);
        STORE8(v1, cp + 8);
        return;
    }
    union { REAL8 v[2]; REAL s[RN]; } u;  // the last, partial columns: element by element
    u.v[0] = v0;
    u.v[1] = v1;
    const int count = N - n;
    for (int j = 0; j < count; j++) {
        REAL v = u.s[j];
        if (!first) v += cp[j];
        if (last) {
#ifdef HAS_BIAS
            v += b;
#endif
#ifdef HAS_COL_BIAS
            v += bias[n + j];
#endif
#ifdef HAS_RESIDUAL
            v += rp[j];
#endif
#ifdef ACT_RELU
            v = v > (REAL)0 ? v : (REAL)0;
#endif
#ifdef ACT_CLIP
            v = v < act_lo ? act_lo : (v > act_hi ? act_hi : v);
#endif
        }
        cp[j] = v;
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_packed(const int M, const int N, const int K,
                 __global const REAL* restrict A, const int a_off, const int lda, const int sa1, const int sa2,
                 __global const REAL* restrict B, const int b_off, const int sb1, const int sb2,
                 __global REAL* restrict C, const int c_off, const int ldc, const int sc1, const int sc2,
                 const int nb2, __global const REAL* restrict bias, const int bias_off, const int bs2,
                 __global const REAL* restrict residual, const int r_off, const REAL act_lo, const REAL act_hi)
{
    const int batch = get_group_id(2), b1 = batch / nb2, b2 = batch % nb2;
    A += a_off + b1 * sa1 + b2 * sa2;
    B += b_off + b1 * sb1 + b2 * sb2;
    C += c_off + b1 * sc1 + b2 * sc2;
#if defined(HAS_BIAS) || defined(HAS_COL_BIAS)
    bias += bias_off + b2 * bs2;
#endif
#ifdef HAS_RESIDUAL
    residual += r_off + b1 * sc1 + b2 * sc2;
#endif
    const int m0 = get_group_id(1) * TM;
    const int n0 = get_group_id(0) * TN;
    const int panels_m = min(TM / RM, (M - m0 + RM - 1) / RM);
    const int panels_n = min(TN / RN, (N - n0 + RN - 1) / RN);

    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = min(KC, K - k0);
        const int first = k0 == 0, last = k0 + KC >= K;
        for (int jr = 0; jr < panels_n; jr++) {
            const int n = n0 + jr * RN;
            __global const REAL* bpanel = B + ((long)(n / RN) * K + k0) * RN;
            for (int ir = 0; ir < panels_m; ir++) {
                const int m = m0 + ir * RM;
                __global const REAL* ap = A + ((long)(m / RM) * K + k0) * RM;
                A_ROW(0) A_ROW(1) A_ROW(2) A_ROW(3)
#if RM > 4
                A_ROW(4) A_ROW(5)
#endif
                __global const REAL* bp = bpanel;
                ACC(0) ACC(1) ACC(2) ACC(3)
#if RM > 4
                ACC(4) ACC(5)
#endif
                if (N - n > 8) {
                    for (int kk = 0; kk < kc; kk++) {
                        const REAL8 b0 = LOAD8(bp), b1 = LOAD8(bp + 8);
                        MAC(0) MAC(1) MAC(2) MAC(3)
#if RM > 4
                        MAC(4) MAC(5)
#endif
                        A_NEXT
                        bp += RN;
                    }
                } else {  // a last panel of at most 8 columns (49 = 3*16 + 1): half the multiply-adds
                    for (int kk = 0; kk < kc; kk++) {
                        const REAL8 b0 = LOAD8(bp);
                        MAC_HALF(0) MAC_HALF(1) MAC_HALF(2) MAC_HALF(3)
#if RM > 4
                        MAC_HALF(4) MAC_HALF(5)
#endif
                        A_NEXT
                        bp += RN;
                    }
                }
                STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
#if RM > 4
                STORE_ROW(4); STORE_ROW(5);
#endif
            }
        }
    }
}

