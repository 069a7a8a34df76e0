// Template of generated elementwise kernels, vectorised: one work-item computes 8 consecutive
// elements with 8-wide vector types (vector builtins such as exp run 3-4x faster than 8 scalar
// calls on CPU devices). Used when every operand is dense (offset + index), a scalar, or a row
// broadcast along the outer axis (offset + index % inner, with inner a multiple of 8); the last
// partial group of 8 runs the scalar statements. Python fills the fields.
${pragmas}

#if defined(__clang__)
#define VLOAD(T, p) (*(const __global T##8 __attribute__((aligned(sizeof(T))))*)(p))
#define VSTORE(T, v, p) (*(__global T##8 __attribute__((aligned(sizeof(T))))*)(p) = (v))
#else
#define VLOAD(T, p) vload8(0, p)
#define VSTORE(T, v, p) vstore8(v, 0, p)
#endif

__kernel void ${name}(const int n, const int inner${params})
{
    const int base = get_global_id(0) * 8;
    if (base >= n) return;
    if (base + 8 <= n) {
${vloads}
${vbody}
${vstores}
    } else {
        for (int gid = base; gid < n; gid++) {
${sloads}
${sbody}
${sstores}
        }
    }
}
