// Template of generated elementwise kernels, vectorised: one work-item computes ${width} consecutive
// elements with ${width}-wide vector types (8, or 4 for doubles; vector builtins such as exp run 3-4x
// faster than scalar calls on CPU devices). Used when every operand is dense (offset + index), a
// scalar, or a row broadcast along the outer axis (offset + index % inner, with inner a multiple of
// the width); the last partial group runs the scalar statements. Python fills the fields.
${pragmas}

#if defined(__clang__)
#define VLOAD(T, p) (*(const __global T##${width} __attribute__((aligned(sizeof(T))))*)(p))
#define VSTORE(T, v, p) (*(__global T##${width} __attribute__((aligned(sizeof(T))))*)(p) = (v))
#else
#define VLOAD(T, p) vload${width}(0, p)
#define VSTORE(T, v, p) vstore${width}(v, 0, p)
#endif

__kernel void ${name}(const int n, const int inner${params})
{
    const int base = get_global_id(0) * ${width};
    if (base >= n) return;
    if (base + ${width} <= n) {
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
