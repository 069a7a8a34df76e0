"""What the numpy provider's kernels run on: its helper threads and matrix products (``blas``), the
private threaded BLAS (``threaded_blas``), thread placement (``placement``) and per-thread scratch
memory (``scratch``)."""
