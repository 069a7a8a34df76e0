"""Choose the opencl tox env's CPU OpenCL device: PoCL when it can build a kernel here, else Intel's
CPU runtime (PoCL 3.0's LLVM 14 cannot build for AMD CPU family 26, docs/providers/opencl.md).

    python .ci/opencl_vendors.py VENDORS_DIR INTEL_LIBRARY

pyopencl finds the PoCL wheel by itself; Intel's runtime is registered only by writing an ICD file
into VENDORS_DIR (the env's OCL_ICD_VENDORS), so leaving it out leaves PoCL as the only device.
"""

from __future__ import annotations

import pathlib
import sys


def pocl_builds_a_kernel() -> str | None:
    """None when PoCL built and ran a kernel, else why not."""
    import numpy as np
    import pyopencl as cl

    pocl = [p for p in cl.get_platforms() if "portable" in p.name.lower() or "pocl" in p.name.lower()]
    if not pocl:
        return "no PoCL platform"
    try:
        ctx = cl.Context(pocl[0].get_devices())
        queue = cl.CommandQueue(ctx)
        program = cl.Program(ctx, "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2; }").build()
        data = np.arange(4, dtype=np.float32)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
        program.twice(queue, data.shape, None, buf)
        cl.enqueue_copy(queue, data, buf)
    except cl.Error as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return None if data.tolist() == [0.0, 2.0, 4.0, 6.0] else f"wrong result {data.tolist()}"


def main() -> int:
    vendors, intel = pathlib.Path(sys.argv[1]), sys.argv[2]
    vendors.mkdir(parents=True, exist_ok=True)
    icd = vendors / "intel-cpu.icd"
    icd.unlink(missing_ok=True)
    why = pocl_builds_a_kernel()
    if why is None:
        print("opencl tests run on PoCL (it builds kernels on this CPU)")
    else:
        icd.write_text(intel + "\n")
        print(f"opencl tests run on Intel's CPU runtime: PoCL cannot be used here ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
