"""CuPy, the CUDA device and memory: probing availability, the backend kernels run on, transfers."""
