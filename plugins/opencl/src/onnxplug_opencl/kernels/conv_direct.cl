// Stride-1 convolution as an implicit GEMM (CPU devices): no im2col matrix is built.
//
// With the input planes zero padded to Hp x Wp (pad_planes below; skipped when the convolution
// has no padding), output (oh, ow) of channel plane c reads xp[c][oh + i*DH][ow + j*DW]. Indexing
// outputs by the "virtual" column p = oh*Wp + ow turns every im2col row k = (c, i, j) into the
// contiguous run xp[c] + i*DH*Wp + j*DW + p: the micro-kernel loads its 16 columns straight from
// the padded image, across output rows. Columns with ow >= OW (the last KW-1 of each row of Wp)
// are computed and dropped at the store; only NV = (OH-1)*Wp + OW columns exist.
//
// A (the weights) is packed as in gemm_packed.cl: [G][ceil(M/RM)][C/G*KH*KW][RM], k in (c, i, j)
// order. A work-group computes TM x TN of C over chunks of CC channels; sums of the block stay in
// local memory, and a last pass applies bias, residual and activation and stores to [M][OH][OW]
// (kept out of the multiply-add loop: its live values made the compiler spill an accumulator).
//
// Build options: -DREAL -DTM -DTN -DCC -DRM -DKH -DKW, optionally -DHAS_BIAS -DHAS_RESIDUAL
// -DACT_RELU -DACT_CLIP.

#include "real8.h"

#define RN 16

// pad_planes: xp[nc][hp][wp] = x[nc][hp - PT][wp - PL], zero outside; one work-item per padded row.
__kernel void pad_planes(const int rows, __global const REAL* restrict x, const int x_off,
                         __global REAL* restrict xp, const int H, const int W, const int Hp, const int Wp,
                         const int PT, const int PL)
{
    const int row = get_global_id(0);  // over N*C * Hp
    if (row >= rows) return;
    const int hp = row % Hp, nc = row / Hp;
    __global REAL* dst = xp + (long)row * Wp;
    const int h = hp - PT;
    if (h < 0 || h >= H) {
        for (int w = 0; w < Wp; w++) dst[w] = (REAL)0;
        return;
    }
    __global const REAL* src = x + x_off + ((long)nc * H + h) * W;
    const int lo = min(PL, Wp), hi = min(Wp, PL + W);
    for (int w = 0; w < lo; w++) dst[w] = (REAL)0;
    for (int w = lo; w < hi; w++) dst[w] = src[w - PL];
    for (int w = hi; w < Wp; w++) dst[w] = (REAL)0;
}

inline REAL8 finish(REAL8 v, const REAL b, const REAL8 r, const REAL act_lo, const REAL act_hi) {
#ifdef HAS_BIAS
    v += b;
#endif
#ifdef HAS_RESIDUAL
    v += r;
#endif
#ifdef ACT_RELU
    v = FMAX8(v, (REAL8)0);
#endif
#ifdef ACT_CLIP
    v = FMIN8(FMAX8(v, (REAL8)act_lo), (REAL8)act_hi);
#endif
    return v;
}

inline REAL finish1(REAL v, const REAL b, const REAL r, const REAL act_lo, const REAL act_hi) {
#ifdef HAS_BIAS
    v += b;
#endif
#ifdef HAS_RESIDUAL
    v += r;
#endif
#ifdef ACT_RELU
    v = v > (REAL)0 ? v : (REAL)0;
#endif
#ifdef ACT_CLIP
    v = v < act_lo ? act_lo : (v > act_hi ? act_hi : v);
#endif
    return v;
}

// The last, partial panel: lanes at or past `valid` read as zero (they may lie past the buffer).
inline void load_part(__global const REAL* p, const int valid, REAL8* b0, REAL8* b1) {
    union { REAL8 v[2]; REAL s[RN]; } u;
    for (int l = 0; l < RN; l++) u.s[l] = l < valid ? p[l] : (REAL)0;
    *b0 = u.v[0];
    *b1 = u.v[1];
}

// Multiply-adds over the chunk's channels and window positions; LOAD fills b0, b1 from xk.
#if RM > 4
#define MAC_ALL MAC(0) MAC(1) MAC(2) MAC(3) MAC(4) MAC(5)
#else
#define MAC_ALL MAC(0) MAC(1) MAC(2) MAC(3)
#endif
#define K_LOOP(LOAD) \
    for (int c = 0; c < cc; c++) { \
        for (int i = 0; i < KH; i++) { \
            for (int j = 0; j < KW; j++) { \
                __global const REAL* xk = xc + i * DH * Wp + j * DW; \
                REAL8 b0, b1; \
                LOAD; \
                MAC_ALL \
                ap += RM; \
            } \
        } \
        xc += plane; \
    }

#define ACC(r) REAL8 c##r##0, c##r##1;
#define INIT(r) if (first) { c##r##0 = (REAL8)0; c##r##1 = (REAL8)0; } \
                else { c##r##0 = sp[(r) * (TN / 8)]; c##r##1 = sp[(r) * (TN / 8) + 1]; }
#define MAC(r) { const REAL a = ap[r]; c##r##0 += a * b0; c##r##1 += a * b1; }
#define SAVE(r) { sp[(r) * (TN / 8)] = c##r##0; sp[(r) * (TN / 8) + 1] = c##r##1; }

inline void store_row(__global REAL* C, __global const REAL* residual, __global const REAL* bias,
                      const int m, const int M, const int P, REAL8 v0, REAL8 v1, const int contiguous,
                      const int idx0, const int fast, const int* lanes, const REAL act_lo, const REAL act_hi) {
    if (m >= M) return;
#ifdef HAS_BIAS
    const REAL b = bias[m];
#else
    const REAL b = (REAL)0;
#endif
    __global REAL* cp = C + (long)m * P;
    __global const REAL* rp = residual + (long)m * P;
    if (fast) {  // sixteen outputs in a row of C
        REAL8 r0 = (REAL8)0, r1 = (REAL8)0;
#ifdef HAS_RESIDUAL
        r0 = LOAD8(rp + idx0);
        r1 = LOAD8(rp + idx0 + 8);
#endif
        STORE8(finish(v0, b, r0, act_lo, act_hi), cp + idx0);
        STORE8(finish(v1, b, r1, act_lo, act_hi), cp + idx0 + 8);
        return;
    }
    union { REAL8 v[2]; REAL s[RN]; } u;
    u.v[0] = v0;
    u.v[1] = v1;
    for (int l = 0; l < RN; l++) {
        const int at = lanes[l];
        if (at < 0) continue;
#ifdef HAS_RESIDUAL
        const REAL r = rp[at];
#else
        const REAL r = (REAL)0;
#endif
        cp[at] = finish1(u.s[l], b, r, act_lo, act_hi);
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void conv_direct(const int M, const int NV, const int CG, const int Wp, const int plane, const int OW,
                 const int P, const int DH, const int DW,
                 __global const REAL* restrict A, const int a_off, const int sa2,
                 __global const REAL* restrict X, const int x_off, const int sx1, const int sx2,
                 __global REAL* restrict C, const int c_off, const int sc1, const int sc2, const int nb2,
                 __global const REAL* restrict bias, const int bias_off, const int bs2,
                 __global const REAL* restrict residual, const int r_off, const REAL act_lo, const REAL act_hi)
{
    __local REAL8 partial[TM * TN / 8];
    const int batch = get_group_id(2), b1 = batch / nb2, b2 = batch % nb2;
    const int K = CG * KH * KW;
    A += a_off + b2 * sa2;
    X += x_off + b1 * sx1 + b2 * sx2;
    C += c_off + b1 * sc1 + b2 * sc2;
#ifdef HAS_BIAS
    bias += bias_off + b2 * bs2;
#endif
#ifdef HAS_RESIDUAL
    residual += r_off + b1 * sc1 + b2 * sc2;
#endif
    const int m0 = get_group_id(1) * TM;
    const int n0 = get_group_id(0) * TN;
    const int panels_m = min(TM / RM, (M - m0 + RM - 1) / RM);
    const int panels_n = min(TN / RN, (NV - n0 + RN - 1) / RN);
    const int contiguous = Wp == OW;  // virtual columns are the output columns (1x1, no padding)

    for (int c0 = 0; c0 < CG; c0 += CC) {
        const int cc = min(CC, CG - c0);
        const int first = c0 == 0;
        for (int jr = 0; jr < panels_n; jr++) {
            const int n = n0 + jr * RN;
            const int valid = NV - n;
            __global const REAL* xb = X + (long)c0 * plane + n;
            for (int ir = 0; ir < panels_m; ir++) {
                const int m = m0 + ir * RM;
                __local REAL8* sp = partial + (ir * RM * TN + jr * RN) / 8;
                __global const REAL* ap = A + ((long)(m / RM) * K + c0 * KH * KW) * RM;
                ACC(0) ACC(1) ACC(2) ACC(3)
#if RM > 4
                ACC(4) ACC(5)
#endif
                INIT(0) INIT(1) INIT(2) INIT(3)
#if RM > 4
                INIT(4) INIT(5)
#endif
                __global const REAL* xc = xb;
                if (valid >= RN) {
                    K_LOOP(b0 = LOAD8(xk); b1 = LOAD8(xk + 8))
                } else {
                    K_LOOP(load_part(xk, valid, &b0, &b1))
                }
                SAVE(0) SAVE(1) SAVE(2) SAVE(3)
#if RM > 4
                SAVE(4) SAVE(5)
#endif
            }
        }
    }
    for (int jr = 0; jr < panels_n; jr++) {
        const int n = n0 + jr * RN;
        const int valid = NV - n;
        int lanes[RN];
        int oh = n / Wp, ow = n - oh * Wp;
        const int idx0 = contiguous ? n : oh * OW + ow;
        const int fast = valid >= RN && (contiguous || ow + RN <= OW);
        if (!fast) {  // where each of the 16 virtual columns lands in the output (-1: dropped)
            for (int l = 0; l < RN; l++) {
                lanes[l] = (l < valid && ow < OW) ? oh * OW + ow : -1;
                if (++ow == Wp) { ow = 0; oh++; }
            }
        }
        for (int r = 0; r < panels_m * RM; r++) {
            __local const REAL8* sp = partial + (r * TN + jr * RN) / 8;
            store_row(C, residual, bias, m0 + r, M, P, sp[0], sp[1], contiguous, idx0, fast, lanes, act_lo, act_hi);
        }
    }
}
