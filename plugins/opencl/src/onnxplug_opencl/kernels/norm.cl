// Layer and instance normalisation of x viewed as [outer][R]: one work-item per row computes the
// mean and variance (two passes, in ACC precision), then y = (x - mean) * rsqrt(var + eps) * scale + bias.
// PER_ROW_SCALE (instance norm): scale/bias are indexed by the row's channel (row % channels);
// otherwise (layer norm) by the position r within the row. Mean and 1/stddev are written when asked.

__kernel void norm(const int rows, const int R, const int channels, const ACC eps,
                   __global const T* restrict x, const int x_off,
                   __global const T* restrict scale, const int s_off,
                   __global const T* restrict bias, const int b_off,
                   __global T* restrict y, __global T* restrict mean_out, __global T* restrict inv_out)
{
    const int row = get_global_id(0);
    if (row >= rows) return;
    __global const T* p = x + x_off + (long)row * R;
    __global T* q = y + (long)row * R;
    ACC mean = (ACC)0;
    for (int r = 0; r < R; r++) mean += (ACC)p[r];
    mean /= (ACC)R;
    ACC var = (ACC)0;
    for (int r = 0; r < R; r++) { const ACC d = (ACC)p[r] - mean; var += d * d; }
    var /= (ACC)R;
    const ACC inv = (ACC)1 / sqrt(var + eps);
#ifdef PER_ROW_SCALE
    const int c = row % channels;
    const ACC a = (ACC)scale[s_off + c] * inv;
    const ACC b = HAS_BIAS ? (ACC)bias[b_off + c] : (ACC)0;
    for (int r = 0; r < R; r++) q[r] = (T)(((ACC)p[r] - mean) * a + b);
#else
    for (int r = 0; r < R; r++) {
        ACC v = ((ACC)p[r] - mean) * inv * (ACC)scale[s_off + r];
        if (HAS_BIAS) v += (ACC)bias[b_off + r];
        q[r] = (T)v;
    }
#endif
    if (WANT_STATS) { mean_out[row] = (T)mean; inv_out[row] = (T)inv; }
}
