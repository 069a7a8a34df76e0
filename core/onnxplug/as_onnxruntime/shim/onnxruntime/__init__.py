"""onnxplug standing in for onnxruntime (``python -m onnxplug.as_onnxruntime``): see
``onnxplug.as_onnxruntime``. This package is found first on ``sys.path``; the installed
onnxruntime, if any, stays installed and unused."""

from onnxplug.as_onnxruntime.namespace import *  # noqa: F403
from onnxplug.as_onnxruntime.namespace import __all__, __author__, __getattr__, __version__  # noqa: F401
