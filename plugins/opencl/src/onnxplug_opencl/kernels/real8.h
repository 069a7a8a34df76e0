// Shared by the GEMM and direct-conv kernels (kernel_source pastes it where a file includes it):
// fp64 when REAL is double, REAL8, and unaligned 8-wide loads and stores.

#if defined(REAL_IS_DOUBLE)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define REAL8 _VEC8(REAL)
#define _VEC8(t) _VEC8_(t)
#define _VEC8_(t) t##8

#if defined(__clang__)
// Clang-based compilers (PoCL, Intel, ROCm) turn this into plain unaligned vector moves, where
// vload8 may stay an out-of-line call.
typedef REAL real8u __attribute__((ext_vector_type(8), aligned(sizeof(REAL))));
#define LOAD8(p) (*(const __global real8u*)(p))
#define STORE8(v, p) (*(__global real8u*)(p) = (v))
#else
#define LOAD8(p) vload8(0, p)
#define STORE8(v, p) vstore8(v, 0, p)
#endif

// fmax/fmin on REAL8. For doubles they go in halves of 4: PoCL 3.0's LLVM 14 crashes (SIGSEGV in
// the X86 backend's TranslateX86CC) compiling an 8-wide double fmax for AVX2 CPUs, which split it.
#if defined(REAL_IS_DOUBLE)
#define FMAX8(a, b) ((REAL8)(fmax((a).lo, (b).lo), fmax((a).hi, (b).hi)))
#define FMIN8(a, b) ((REAL8)(fmin((a).lo, (b).lo), fmin((a).hi, (b).hi)))
#else
#define FMAX8(a, b) fmax(a, b)
#define FMIN8(a, b) fmin(a, b)
#endif
