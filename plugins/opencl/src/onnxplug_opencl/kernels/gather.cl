// ONNX Gather along one axis: out[o, j, i] = data[o, idx[j], i], data viewed as [outer, axis_dim, inner].
// T is the unsigned type of the element size (a copy moves bytes); I is the index type.
// Negative indices count from the end; out-of-range ones are clamped so a bad index cannot read
// outside the buffer.

__kernel void gather(const int n, const int n_idx, const int inner, const int axis_dim,
                     __global const T* restrict data, const int data_off,
                     __global const I* restrict idx, const int idx_off,
                     __global T* restrict out, const int out_off)
{
    const int gid = get_global_id(0);
    if (gid >= n) return;
    const int i = gid % inner;
    const int rest = gid / inner;
    const int j = rest % n_idx;
    const int o = rest / n_idx;
    long k = (long)idx[idx_off + j];
    if (k < 0) k += axis_dim;
    k = k < 0 ? 0 : (k >= axis_dim ? axis_dim - 1 : k);
    out[out_off + gid] = data[data_off + ((long)o * axis_dim + k) * inner + i];
}
