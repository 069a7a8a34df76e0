"""Host-side launchers of the OpenCL kernels: GEMM, convolution, elementwise, reductions, copies."""
