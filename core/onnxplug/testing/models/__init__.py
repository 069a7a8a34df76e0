"""One module per model of the suite; `onnxplug.testing.model_suite` is the public entry."""
