// Direct depthwise convolution (one input channel per group, MG output channels per group):
// out[n][m][oh][ow] = act(bias[m] + sum_ij x[n][m / MG][oh*SH - PH + i*DH][ow*SW - PW + j*DW] * w[m][i][j]
//                          + residual[n][m][oh][ow]).
// One work-item computes one output row (fixed n, m, oh): its KH x KW weights (compile-time size,
// so the window loops unroll) stay in registers across the row. A GEMM with one row per group
// would waste its tiles on these tiny windows.

__kernel void dwconv(const int rows, __global const REAL* restrict x, const int x_off,
                     __global const REAL* restrict w, const int w_off,
                     __global const REAL* restrict bias, const int bias_off,
                     __global const REAL* restrict residual, const int r_off,
                     __global REAL* restrict out,
                     const int C, const int H, const int W, const int M, const int MG, const int OH, const int OW,
                     const int SH, const int SW, const int PH, const int PW, const int DH, const int DW,
                     const REAL lo, const REAL hi)
{
    const int row = get_global_id(0);  // over N * M * OH
    if (row >= rows) return;
    const int oh = row % OH;
    const int m = (row / OH) % M;
    const int n = row / (OH * M);
    const int c = m / MG;
    __global const REAL* xp = x + x_off + (long)(n * C + c) * H * W;
    REAL k[KH * KW];
    for (int t = 0; t < KH * KW; t++) k[t] = w[w_off + m * KH * KW + t];
#ifdef HAS_BIAS
    const REAL b = bias[bias_off + m];
#else
    const REAL b = (REAL)0;
#endif
    const long base = (long)row * OW;
    for (int ow = 0; ow < OW; ow++) {
        REAL acc = b;
        #pragma unroll
        for (int i = 0; i < KH; i++) {
            const int h = oh * SH - PH + i * DH;
            if (h < 0 || h >= H) continue;
            #pragma unroll
            for (int j = 0; j < KW; j++) {
                const int ww = ow * SW - PW + j * DW;
                if (ww >= 0 && ww < W) acc += xp[h * W + ww] * k[i * KW + j];
            }
        }
#ifdef HAS_RESIDUAL
        acc += residual[r_off + base + ow];
#endif
#ifdef ACT_RELU
        acc = acc > (REAL)0 ? acc : (REAL)0;
#endif
#ifdef ACT_CLIP
        acc = acc < lo ? lo : (acc > hi ? hi : acc);
#endif
        out[base + ow] = acc;
    }
}
