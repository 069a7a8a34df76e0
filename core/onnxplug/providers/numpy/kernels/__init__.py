"""Compute engines the numpy provider's op kernels share, below the op level."""
