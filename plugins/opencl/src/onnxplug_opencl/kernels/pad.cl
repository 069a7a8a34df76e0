// ONNX Pad for every mode: each work-item maps one output element back to an input element.
// T is the unsigned type of the element size; MODE is 0 constant, 1 reflect, 2 edge, 3 wrap.
// dims/in_dims/pads_begin describe up to 8 axes (row-major, rank RANK).

inline int map_axis(int i, const int n) {
#if MODE == 1
    if (n == 1) return 0;
    const int period = 2 * (n - 1);
    i = i % period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
#elif MODE == 2
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
#elif MODE == 3
    i = i % n;
    return i < 0 ? i + n : i;
#else
    return i;
#endif
}

__kernel void pad(const int total, const int8 dims, const int8 in_dims, const int8 pads_begin,
                  __global const T* restrict in, const int in_off, __global T* restrict out, const int out_off,
                  const T value)
{
    const int gid = get_global_id(0);
    if (gid >= total) return;
    const int od[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
    const int id[8] = {in_dims.s0, in_dims.s1, in_dims.s2, in_dims.s3, in_dims.s4, in_dims.s5, in_dims.s6, in_dims.s7};
    const int pb[8] = {pads_begin.s0, pads_begin.s1, pads_begin.s2, pads_begin.s3,
                       pads_begin.s4, pads_begin.s5, pads_begin.s6, pads_begin.s7};
    int rem = gid, src = 0, stride = 1, inside = 1;
    for (int a = RANK - 1; a >= 0; a--) {
        const int c = rem % od[a];
        rem /= od[a];
        const int i = map_axis(c - pb[a], id[a]);
        inside &= (i >= 0 && i < id[a]);
        src += i * stride;
        stride *= id[a];
    }
    out[out_off + gid] = inside ? in[in_off + src] : value;
}
