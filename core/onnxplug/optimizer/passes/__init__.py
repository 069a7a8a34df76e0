"""Built-in passes: one module per pass, each exporting ``PASSES``."""
