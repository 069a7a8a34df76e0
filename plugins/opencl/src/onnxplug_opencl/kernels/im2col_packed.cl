// im2col straight into the B micro-panel layout of gemm_packed.cl. For image n and group g the
// column matrix is cols[k][p] with k = (c*KH + i)*KW + j over the group's C/G channels and
// p = oh*OW + ow; it is stored as [N][G][ceil(P/16)][Kg][16] (P = OH*OW, Kg = C/G*KH*KW), columns
// past P zero, so the GEMM reads 16 consecutive values per k step and nothing is packed twice.
//
// One work-item fills the KH*KW*16 contiguous values of one (n, channel, 16-column panel): the
// source offsets of its 16 columns are computed once, then every (i, j) is a 16-wide gather with
// zeros outside the input. An unpadded 1x1 stride-1 convolution is the plain panel copy of x.

__kernel void im2col_packed(const int total, __global const REAL* restrict x, const int x_off,
                            __global REAL* restrict out,
                            const int C, const int H, const int W, const int OH, const int OW, const int G,
                            const int KH, const int KW, const int SH, const int SW,
                            const int PH, const int PW, const int DH, const int DW)
{
    const int gid = get_global_id(0);  // over N * C * panels
    if (gid >= total) return;
    const int P = OH * OW;
    const int panels = (P + 15) / 16;
    const int q = gid % panels;
    const int nc = gid / panels;  // n * C + c
    const int c = nc % C, n = nc / C;
    const int cg = C / G, g = c / cg, cl = c % cg;
    const int kg = cg * KH * KW;
    __global const REAL* src = x + x_off + (long)nc * H * W;
    __global REAL* dst = out + ((((long)n * G + g) * panels + q) * kg + (long)cl * KH * KW) * 16;

    int h0[16], w0[16];
    for (int l = 0; l < 16; l++) {
        const int p = q * 16 + l;
        const int oh = p / OW, ow = p % OW;
        h0[l] = p < P ? oh * SH - PH : -(1 << 29);  // columns past P read as padding (zero)
        w0[l] = ow * SW - PW;
    }
    for (int i = 0; i < KH; i++) {
        for (int j = 0; j < KW; j++) {
            for (int l = 0; l < 16; l++) {
                const int h = h0[l] + i * DH, w = w0[l] + j * DW;
                const int inside = (uint)h < (uint)H && (uint)w < (uint)W;
                const REAL v = src[inside ? h * W + w : 0];  // branch-free: a gather and a select
                dst[l] = inside ? v : (REAL)0;
            }
            dst += 16;
        }
    }
}
