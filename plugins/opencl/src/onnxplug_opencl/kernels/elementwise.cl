// Template of generated elementwise kernels (single ops, fused chains, strided copies).
//
// One work-item computes one element of the iteration space `dims` (row-major).
// Each operand is either dense over that space (element offset + gid) or strided: its element
// offset is the dot product of the coordinates with its strides (0 on broadcast axes). Python
// fills the fields: parameters, index code, loads, the generated statements and the stores.
${pragmas}

__kernel void ${name}(const int n, const int8 dims${params})
{
    const int gid = get_global_id(0);
    if (gid >= n) return;
${index}
${loads}
${body}
${stores}
}
