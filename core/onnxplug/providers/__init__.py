"""Providers built into the core. They register through the ``onnxplug.providers`` entry points."""
