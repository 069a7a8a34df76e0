// im2col for 2-D convolution: cols[n][c*KH*KW + i*KW + j][oh*OW + ow] = x[n][c][oh*SH - PH + i*DH][ow*SW - PW + j*DW]
// (0 outside the input). The rows of one group are contiguous, so cols[n] is the [G][C/G*KH*KW][OH*OW]
// operand the batched GEMM multiplies with the [G][M/G][C/G*KH*KW] weights.
// One work-item fills one output row segment (fixed n, c, i, j, oh): the index arithmetic is paid
// once per OW elements and the inner loop is a strided copy with zero padding at both ends.

__kernel void im2col(const int total, __global const REAL* restrict x, const int x_off,
                     __global REAL* restrict cols,
                     const int C, const int H, const int W, const int OH, const int OW,
                     const int KH, const int KW, const int SH, const int SW,
                     const int PH, const int PW, const int DH, const int DW)
{
    const int gid = get_global_id(0);  // over N * C * KH * KW * OH
    if (gid >= total) return;
    const int oh = gid % OH;
    int rest = gid / OH;
    const int j = rest % KW;
    rest /= KW;
    const int i = rest % KH;
    rest /= KH;  // rest = n * C + c
    __global REAL* dst = cols + (long)gid * OW;
    const int h = oh * SH - PH + i * DH;
    if (h < 0 || h >= H) {
        for (int ow = 0; ow < OW; ow++) dst[ow] = (REAL)0;
        return;
    }
    __global const REAL* src = x + x_off + ((long)rest * H + h) * W;
    const int w0 = j * DW - PW;
    // ow range whose source column w = ow*SW + w0 lies in [0, W)
    const int lo = w0 >= 0 ? 0 : min(OW, (-w0 + SW - 1) / SW);
    const int hi = max(lo, min(OW, (W - 1 - w0) / SW + 1));
    for (int ow = 0; ow < lo; ow++) dst[ow] = (REAL)0;
    if (SW == 1) {
        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow + w0];
    } else {
        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow * SW + w0];
    }
    for (int ow = hi; ow < OW; ow++) dst[ow] = (REAL)0;
}
