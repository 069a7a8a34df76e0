// MaxPool / AveragePool / LpPool over up to 3 spatial axes (1-D and 2-D pools use unit axes).
// One work-item computes one output row (all OW outputs of one [N*C][od][oh]): work-items are
// costly on CPU devices, so each does a run of outputs. Windows skip positions outside the input.
// MODE 0: max (and, with WANT_INDICES, the flat index of the max, row- or column-major as
// storage_order asks), MODE 1: average over the window positions inside the input (or inside
// input + pads when COUNT_PAD), MODE 2: Lp norm with exponent P. T is the element type, ACC the
// accumulation type.

__kernel void pool(const int rows, __global const T* restrict x, const int x_off,
                   __global T* restrict out, __global long* restrict indices,
                   const int D, const int H, const int W, const int OD, const int OH, const int OW,
                   const int KD, const int KH, const int KW, const int SD, const int SH, const int SW,
                   const int PD, const int PH, const int PW, const int ED, const int EH, const int EW,
                   const int DD, const int DH, const int DW, const int storage_order, const ACC p)
{
    const int row = get_global_id(0);  // over N*C * OD * OH
    if (row >= rows) return;
    const int oh = row % OH;
    const int od = (row / OH) % OD;
    const int nc = row / (OH * OD);
    __global const T* xp = x + x_off + (long)nc * D * H * W;
    const int d0 = od * SD - PD, h0 = oh * SH - PH;
    for (int ow = 0; ow < OW; ow++) {
        const int w0 = ow * SW - PW;
#if MODE == 0
        T best = LOWEST;
        int found = 0;
#if WANT_INDICES
        long best_at = 0;
#endif
#else
        ACC acc = (ACC)0;
        int count = 0;
#endif
        for (int a = 0; a < KD; a++) {
            const int d = d0 + a * DD;
            const int d_in = d >= 0 && d < D;
            for (int b = 0; b < KH; b++) {
                const int h = h0 + b * DH;
                const int dh_in = d_in && h >= 0 && h < H;
                __global const T* line = xp + ((long)d * H + h) * W;
                for (int c = 0; c < KW; c++) {
                    const int w = w0 + c * DW;
                    const int inside = dh_in && w >= 0 && w < W;
#if MODE == 0
                    if (inside) {
                        const T v = line[w];
                        if (v > best || !found) {
                            best = v;
                            found = 1;
#if WANT_INDICES
                            best_at = storage_order ? ((long)w * H + h) * D + d : ((long)d * H + h) * W + w;
#endif
                        }
                    }
#else
                    if (inside) {
                        const ACC v = (ACC)line[w];
#if MODE == 1
                        acc += v;
#else
                        acc += pow(fabs(v), p);
#endif
                        count++;
                    }
#ifdef COUNT_PAD
                    else if (d >= -PD && d < D + ED && h >= -PH && h < H + EH && w >= -PW && w < W + EW) count++;
#endif
#endif
                }
            }
        }
        const long at = (long)row * OW + ow;
#if MODE == 0
        out[at] = best;
#if WANT_INDICES
        indices[at] = (long)nc * D * H * W + best_at;
#endif
#elif MODE == 1
        out[at] = (T)(count ? acc / (ACC)count : (ACC)0);
#else
        out[at] = (T)pow(acc, (ACC)1 / p);
#endif
    }
}

#ifdef MAXPOOL2D
// 2-D MaxPool without Indices, window and strides fixed at build time (-DPKH -DPKW -DPSH -DPSW -DPDH -DPDW):
// one work-item per output row; columns whose window lies inside the input take a branch-free
// path. Same results as pool(): the first value in the window seeds the max (a NaN there stays),
// later values replace it only when greater.
__kernel void maxpool2d(const int rows, __global const T* restrict x, const int x_off, __global T* restrict out,
                        const int H, const int W, const int OH, const int OW, const int PH, const int PW)
{
    const int row = get_global_id(0);  // over N*C * OH
    if (row >= rows) return;
    const int oh = row % OH, nc = row / OH;
    __global const T* xp = x + x_off + (long)nc * H * W;
    __global T* op = out + (long)row * OW;
    const int h0 = oh * PSH - PH;
    const int rows_inside = h0 >= 0 && h0 + (PKH - 1) * PDH < H;
    // ow range whose windows lie inside [0, W)
    const int lo = min(OW, max(0, (PW + PSW - 1) / PSW));
    const int span = W - 1 - (PKW - 1) * PDW + PW;  // the last w0 whose window ends inside
    const int hi = span < 0 ? lo : max(lo, min(OW, span / PSW + 1));
    for (int ow = 0; ow < OW; ow++) {
        const int w0 = ow * PSW - PW;
        T best = LOWEST;
        if (rows_inside && ow >= lo && ow < hi) {
            __global const T* base = xp + h0 * W + w0;
            best = base[0];
#pragma unroll
            for (int a = 0; a < PKH; a++)
#pragma unroll
                for (int b = 0; b < PKW; b++) {
                    const T v = base[a * PDH * W + b * PDW];
                    best = v > best ? v : best;
                }
        } else {
            int found = 0;
            for (int a = 0; a < PKH; a++) {
                const int h = h0 + a * PDH;
                if (h < 0 || h >= H) continue;
                for (int b = 0; b < PKW; b++) {
                    const int w = w0 + b * PDW;
                    if (w < 0 || w >= W) continue;
                    const T v = xp[h * W + w];
                    if (v > best || !found) {
                        best = v;
                        found = 1;
                    }
                }
            }
        }
        op[ow] = best;
    }
}
#endif
