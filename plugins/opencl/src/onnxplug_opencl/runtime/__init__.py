"""The OpenCL runtime layer: device discovery and selection, contexts and queues, memory, programs."""
