"""CUDA C source generation: pure functions of the program to compile (testable without a GPU)."""
