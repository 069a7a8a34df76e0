// Reductions over the middle axis of x viewed as [outer][R][inner]: one work-item per output.
// OP selects the reduction (see engine/reduce.py); T is the element type, ACC the accumulator,
// OUT the output type (int64 for ArgMax/ArgMin). LAST picks the last index among ties.

#define OP_SUM 0
#define OP_MEAN 1
#define OP_MAX 2
#define OP_MIN 3
#define OP_PROD 4
#define OP_L1 5
#define OP_L2 6
#define OP_LOGSUM 7
#define OP_LOGSUMEXP 8
#define OP_SUMSQUARE 9
#define OP_ARGMAX 10
#define OP_ARGMIN 11

__kernel void reduce(const int total, const int R, const int inner,
                     __global const T* restrict x, const int x_off, __global OUT* restrict out)
{
    const int gid = get_global_id(0);
    if (gid >= total) return;
    const int i = gid % inner, o = gid / inner;
    __global const T* p = x + x_off + (long)o * R * inner + i;
#if OP == OP_ARGMAX || OP == OP_ARGMIN
    T best = p[0];
    long at = 0;
    for (int r = 1; r < R; r++) {
        const T v = p[(long)r * inner];
#if OP == OP_ARGMAX
        const int better = LAST ? v >= best : v > best;
#else
        const int better = LAST ? v <= best : v < best;
#endif
        if (better) { best = v; at = r; }
    }
    out[gid] = at;
#elif OP == OP_LOGSUMEXP
    ACC m = -INFINITY;
    for (int r = 0; r < R; r++) m = fmax(m, (ACC)p[(long)r * inner]);
    ACC s = (ACC)0;
    if (isinf(m)) { out[gid] = (OUT)m; return; }
    for (int r = 0; r < R; r++) s += exp((ACC)p[(long)r * inner] - m);
    out[gid] = (OUT)(log(s) + m);
#else
    ACC acc = INIT;
    for (int r = 0; r < R; r++) {
        const ACC v = (ACC)p[(long)r * inner];
#if OP == OP_SUM || OP == OP_MEAN || OP == OP_LOGSUM
        acc += v;
#elif OP == OP_MAX
        acc = (v > acc || isnan_acc(v)) ? v : acc;
#elif OP == OP_MIN
        acc = (v < acc || isnan_acc(v)) ? v : acc;
#elif OP == OP_PROD
        acc *= v;
#elif OP == OP_L1
        acc += v < 0 ? -v : v;
#elif OP == OP_L2 || OP == OP_SUMSQUARE
        acc += v * v;
#endif
    }
#if OP == OP_MEAN
    acc = acc / (ACC)R;
#elif OP == OP_L2
    acc = sqrt(acc);
#elif OP == OP_LOGSUM
    acc = log(acc);
#endif
    out[gid] = (OUT)acc;
#endif
}
