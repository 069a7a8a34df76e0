"""The provider's single-node kernels; each ``op_*.py`` module registers its kernels on import."""
