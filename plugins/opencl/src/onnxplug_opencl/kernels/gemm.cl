// Tiled GEMM: C[b] = act(alpha * op(A[b]) @ op(B[b]) + beta * bias + residual[b]).
//
// A work-group computes a TM x (TN*NT) block of C. For each chunk of KC values of k it packs the
// A rows into local memory as RM-row micro-panels (Ap[TM/RM][KC][RM]) and, for each of its NT
// column tiles, the B columns as 16-column micro-panels (Bp[TN/16][KC][16]); zero padding at the
// edges makes the inner loop branch-free. Each work-item then runs the register-blocked
// micro-kernel: RM x 16 accumulators held in 2*RM REAL8 vectors, one broadcast of A and two vector
// loads of B per k step (BLIS's scheme). Partial sums over k chunks are kept in C; the epilogue runs
// on the last chunk. NWI work-items cooperate on packing and split the micro-tiles; on CPU devices
// (PoCL) NWI = 1 is fastest: one work-item per group avoids work-item loops around the micro-kernel.
//
// PACKED_A: A is already in micro-panel layout in global memory, chunk by chunk, as
// [ceil(M/TM)][ceil(K/KC)][TM/RM][KC][RM], zero padded (constant weights, packed once at session
// creation). Work-groups then skip packing A and the micro-kernel reads its panels from global memory.
//
// Build options: -DREAL=float|double -DTM -DTN -DNT -DKC -DRM (4 or 6) -DNWI, and optionally
// -DTRANS_A -DTRANS_B -DPACKED_A -DHAS_BIAS -DHAS_RESIDUAL -DACT_RELU -DACT_CLIP.

#include "real8.h"

#define RN 16

#ifdef TRANS_A
#define A_AT(m, k) A[(k) * lda + (m)]
#else
#define A_AT(m, k) A[(m) * lda + (k)]
#endif
#ifdef TRANS_B
#define B_AT(k, n) B[(n) * ldb + (k)]
#else
#define B_AT(k, n) B[(k) * ldb + (n)]
#endif

#ifdef PACKED_A
#define A_PANEL __global const REAL
#else
#define A_PANEL __local const REAL
#endif
#define B_PANEL __local const REAL8

#define ACC(r) REAL8 c##r##0 = (REAL8)0, c##r##1 = (REAL8)0;
#define MAC(r) { const REAL a = ap[r]; c##r##0 += a * b0; c##r##1 += a * b1; }
#define STORE_ROW(r) store_row(C, ldc, m + (r), n, M, N, c##r##0, c##r##1, last, first, alpha, beta, \
                               bias, bsm, bsn, residual, act_lo, act_hi)

inline REAL epilogue(REAL v, const int m, const int n, const REAL alpha, const REAL beta,
                     __global const REAL* bias, const int bsm, const int bsn,
                     __global const REAL* residual, const int ldc, const REAL act_lo, const REAL act_hi) {
    v *= alpha;
#ifdef HAS_BIAS
    v += beta * bias[m * bsm + n * bsn];
#endif
#ifdef HAS_RESIDUAL
    v += residual[m * ldc + n];
#endif
#ifdef ACT_RELU
    v = v > (REAL)0 ? v : (REAL)0;
#endif
#ifdef ACT_CLIP
    v = v < act_lo ? act_lo : (v > act_hi ? act_hi : v);
#endif
    return v;
}

inline void store_row(__global REAL* C, const int ldc, const int m, const int n, const int M, const int N,
                      REAL8 v0, REAL8 v1, const int last, const int first, const REAL alpha, const REAL beta,
                      __global const REAL* bias, const int bsm, const int bsn,
                      __global const REAL* residual, const REAL act_lo, const REAL act_hi) {
    if (m >= M) return;
    __global REAL* cp = C + m * ldc + n;
    if (n + RN <= N) {  // a full 16-wide row: partial sums and the epilogue in vector registers
        if (!first) { v0 += LOAD8(cp); v1 += LOAD8(cp + 8); }
        if (last) {
            v0 *= alpha;
            v1 *= alpha;
#ifdef HAS_BIAS
            if (bsn == 0) {  // one bias per row (convolution channels, a scalar)
                const REAL b = beta * bias[m * bsm];
                v0 += b;
                v1 += b;
            } else {  // bsn == 1: a bias row
                __global const REAL* bp = bias + m * bsm + n;
                v0 += beta * LOAD8(bp);
                v1 += beta * LOAD8(bp + 8);
            }
#endif
#ifdef HAS_RESIDUAL
            v0 += LOAD8(residual + m * ldc + n);
            v1 += LOAD8(residual + m * ldc + n + 8);
#endif
#ifdef ACT_RELU
            v0 = FMAX8(v0, (REAL8)0);
            v1 = FMAX8(v1, (REAL8)0);
#endif
#ifdef ACT_CLIP
            v0 = FMIN8(FMAX8(v0, (REAL8)act_lo), (REAL8)act_hi);
            v1 = FMIN8(FMAX8(v1, (REAL8)act_lo), (REAL8)act_hi);
#endif
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
        cp[j] = last ? epilogue(v, m, n + j, alpha, beta, bias, bsm, bsn, residual, ldc, act_lo, act_hi) : v;
    }
}

__kernel __attribute__((reqd_work_group_size(NWI, 1, 1)))
void gemm(const int M, const int N, const int K,
          __global const REAL* restrict A, const int a_off, const int lda, const int sa1, const int sa2,
          __global const REAL* restrict B, const int b_off, const int ldb, const int sb1, const int sb2,
          __global REAL* restrict C, const int c_off, const int ldc, const int sc1, const int sc2,
          const int nb2, const REAL alpha, const REAL beta,
          __global const REAL* restrict bias, const int bias_off, const int bsm, const int bsn, const int bs2,
          __global const REAL* restrict residual, const int r_off,
          const REAL act_lo, const REAL act_hi)
{
#ifndef PACKED_A
    __local REAL Ap[KC * TM];
#endif
    __local REAL8 Bp[KC * TN / 8];

    const int lid = get_local_id(0);
    const int batch = get_group_id(2), b1 = batch / nb2, b2 = batch % nb2;
    A += a_off + b1 * sa1 + b2 * sa2;
    B += b_off + b1 * sb1 + b2 * sb2;
    C += c_off + b1 * sc1 + b2 * sc2;
#ifdef HAS_BIAS
    bias += bias_off + b2 * bs2;  // grouped convolution: each group has its own bias slice
#endif
#ifdef HAS_RESIDUAL
    residual += r_off + b1 * sc1 + b2 * sc2;
#endif
    const int m0 = get_group_id(1) * TM;
    const int nb0 = get_group_id(0) * TN * NT;
    const int nkc = (K + KC - 1) / KC;  // k chunks: the packed operands' second index

    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = min(KC, K - k0);
        const int first = k0 == 0, last = k0 + KC >= K;

#ifdef PACKED_A
        A_PANEL* a_base = A + (get_group_id(1) * nkc + k0 / KC) * (TM * KC);
#else
        __local const REAL* a_base = Ap;
        // Pack A[m0:m0+TM, k0:k0+kc] into RM-row micro-panels, zero rows past M.
#ifdef TRANS_A
        for (int kk = lid; kk < kc; kk += NWI)
            for (int mm = 0; mm < TM; mm++)
                Ap[(mm / RM) * (KC * RM) + kk * RM + mm % RM] = m0 + mm < M ? A_AT(m0 + mm, k0 + kk) : (REAL)0;
#else
        for (int mm = lid; mm < TM; mm += NWI) {
            __local REAL* dst = Ap + (mm / RM) * (KC * RM) + mm % RM;
            if (m0 + mm < M) {
                __global const REAL* row = A + (m0 + mm) * lda + k0;
                for (int kk = 0; kk < kc; kk++) dst[kk * RM] = row[kk];
            } else {
                for (int kk = 0; kk < kc; kk++) dst[kk * RM] = (REAL)0;
            }
        }
#endif
#endif
        for (int nt = 0; nt < NT; nt++) {
            const int n0 = nb0 + nt * TN;
            if (n0 >= N) break;
            barrier(CLK_LOCAL_MEM_FENCE);  // Bp of the previous tile is no longer read

            __local const REAL8* b_base = Bp;
            // Pack B[k0:k0+kc, n0:n0+TN] into 16-column micro-panels, zero columns past N.
            __local REAL* bps = (__local REAL*)Bp;
#ifdef TRANS_B
            for (int nn = lid; nn < TN; nn += NWI) {
                __local REAL* dst = bps + (nn / RN) * (KC * RN) + nn % RN;
                if (n0 + nn < N) {
                    __global const REAL* col = B + (n0 + nn) * ldb + k0;
                    for (int kk = 0; kk < kc; kk++) dst[kk * RN] = col[kk];
                } else {
                    for (int kk = 0; kk < kc; kk++) dst[kk * RN] = (REAL)0;
                }
            }
#else
            if (n0 + TN <= N) {
                for (int kk = lid; kk < kc; kk += NWI) {
                    __global const REAL* row = B + (k0 + kk) * ldb + n0;
                    for (int v = 0; v < TN / 8; v++)
                        Bp[(v / 2) * (KC * 2) + kk * 2 + (v & 1)] = LOAD8(row + 8 * v);
                }
            } else {
                for (int kk = lid; kk < kc; kk += NWI)
                    for (int nn = 0; nn < TN; nn++)
                        bps[(nn / RN) * (KC * RN) + kk * RN + nn % RN] =
                            n0 + nn < N ? B_AT(k0 + kk, n0 + nn) : (REAL)0;
            }
#endif
            barrier(CLK_LOCAL_MEM_FENCE);

            for (int t = lid; t < (TM / RM) * (TN / RN); t += NWI) {
                const int jr = t / (TM / RM), ir = t % (TM / RM);
                const int m = m0 + ir * RM, n = n0 + jr * RN;
                if (n >= N || m >= M) continue;
                ACC(0) ACC(1) ACC(2) ACC(3)
#if RM > 4
                ACC(4) ACC(5)
#endif
                A_PANEL* ap = a_base + ir * (KC * RM);
                B_PANEL* bp = b_base + jr * (KC * 2);
                for (int kk = 0; kk < kc; kk++) {
                    const REAL8 b0 = bp[0], b1 = bp[1];
                    MAC(0) MAC(1) MAC(2) MAC(3)
#if RM > 4
                    MAC(4) MAC(5)
#endif
                    ap += RM;
                    bp += 2;
                }
                STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
#if RM > 4
                STORE_ROW(4); STORE_ROW(5);
#endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // Ap is repacked for the next chunk
    }
}
