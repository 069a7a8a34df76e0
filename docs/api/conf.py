"""Sphinx configuration of the onnxplug provider SDK API reference (built with ``sphinx-build -W``)."""

from __future__ import annotations

import onnxplug_sdk

project = "onnxplug provider SDK"
author = "onnxplug authors"
release = onnxplug_sdk.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.viewcode"]
root_doc = "index"
exclude_patterns = ["_build"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Docstrings name core types by their onnxplug path; those are the same objects the SDK re-exports.
autodoc_type_aliases: dict[str, str] = {}

html_theme = "alabaster"
html_title = f"onnxplug-sdk {release}"
