"""The ``null`` provider: claims no node, so every node test must come out "not claimed".

It is the suite's own control. Run against it, a correct suite reports zero passes; a suite
that counted a fallback-provider run as a pass would show it at once. It is registered only
for a conformance run (``--provider null``) or the suite's self-tests, never through the
``onnxplug.providers`` entry points, so ordinary sessions never see it.
"""

from __future__ import annotations

from typing import ClassVar

from onnxplug.kernel import KernelRegistry
from onnxplug.provider import Capability, ExecutionProvider, GraphView

NULL_PROVIDER_NAME = "null"


class NullProvider(ExecutionProvider):
    """A host provider with an empty kernel registry that claims nothing."""

    name: ClassVar[str] = NULL_PROVIDER_NAME
    version: ClassVar[str] = "0"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = KernelRegistry(NULL_PROVIDER_NAME)

    @classmethod
    def devices(cls) -> list[str]:
        """The host, where its (never used) allocator lives."""
        return ["cpu (host memory; claims no node)"]

    def get_capability(self, view: GraphView) -> list[Capability]:
        """No claims, whatever the graph."""
        return []
