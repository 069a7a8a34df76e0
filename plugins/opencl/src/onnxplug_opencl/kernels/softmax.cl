// Softmax / LogSoftmax / Hardmax along the middle axis of x viewed as [outer][R][inner].
// One work-item per (outer, inner) line: max, sum of exponentials, then the normalised line.
// MODE 0 softmax, 1 log-softmax, 2 hardmax (1 at the first maximum, 0 elsewhere).

#if defined(__clang__)
#define VLOAD8(p) (*(const __global VEC __attribute__((aligned(sizeof(T))))*)(p))
#define VSTORE8(v, p) (*(__global VEC __attribute__((aligned(sizeof(T))))*)(p) = (v))
#else
#define VLOAD8(p) vload8(0, p)
#define VSTORE8(v, p) vstore8(v, 0, p)
#endif

// Contiguous lines (inner == 1) whose length is a multiple of 8: the same computation on 8-wide
// vectors, so exp runs as one vector builtin per 8 elements (much faster on CPU devices).
__kernel void softmax_rows8(const int lines, const int R, __global const T* restrict x, const int x_off,
                            __global T* restrict y)
{
    const int gid = get_global_id(0);
    if (gid >= lines) return;
    __global const T* p = x + x_off + (long)gid * R;
    __global T* q = y + (long)gid * R;
    VEC m8 = VLOAD8(p);
    for (int r = 8; r < R; r += 8) m8 = fmax(m8, VLOAD8(p + r));
    const T m = fmax(fmax(fmax(m8.s0, m8.s1), fmax(m8.s2, m8.s3)), fmax(fmax(m8.s4, m8.s5), fmax(m8.s6, m8.s7)));
    VEC s8 = (VEC)0;
    for (int r = 0; r < R; r += 8) s8 += exp(VLOAD8(p + r) - m);
    const T s = (s8.s0 + s8.s1) + (s8.s2 + s8.s3) + (s8.s4 + s8.s5) + (s8.s6 + s8.s7);
#if MODE == 0
    const T inv = (T)1 / s;
    for (int r = 0; r < R; r += 8) VSTORE8(exp(VLOAD8(p + r) - m) * inv, q + r);
#else
    const T ls = log(s);
    for (int r = 0; r < R; r += 8) VSTORE8(VLOAD8(p + r) - m - ls, q + r);
#endif
}

__kernel void softmax(const int lines, const int R, const int inner,
                      __global const T* restrict x, const int x_off, __global T* restrict y)
{
    const int gid = get_global_id(0);
    if (gid >= lines) return;
    const int i = gid % inner, o = gid / inner;
    const long base = (long)o * R * inner + i;
    __global const T* p = x + x_off + base;
    __global T* q = y + base;
    T m = p[0];
    int at = 0;
    for (int r = 1; r < R; r++) {
        const T v = p[(long)r * inner];
        if (v > m) { m = v; at = r; }
    }
#if MODE == 2
    for (int r = 0; r < R; r++) q[(long)r * inner] = r == at ? (T)1 : (T)0;
#else
    T s = (T)0;
    for (int r = 0; r < R; r++) s += exp(p[(long)r * inner] - m);
#if MODE == 0
    const T inv = (T)1 / s;
    for (int r = 0; r < R; r++) q[(long)r * inner] = exp(p[(long)r * inner] - m) * inv;
#else
    const T ls = log(s);
    for (int r = 0; r < R; r++) q[(long)r * inner] = p[(long)r * inner] - m - ls;
#endif
#endif
}
