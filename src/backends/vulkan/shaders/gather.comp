#version 450
// x viewed as [outer, dim, inner]: y[o, i, r] = x[o, index[i], r] (src/ops/gather.cpp, 4-byte elements
// moved as bits). Indices from the host are checked before the step; others out of range write zeros.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int index[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint x_off, i_off, y_off, outer, n, dim, inner; } p;

void main() {
  uint total = p.outer * p.n * p.inner;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
    uint r = e % p.inner, rest = e / p.inner;
    uint i = rest % p.n, o = rest / p.n;
    int src = index[p.i_off + i];
    y[p.y_off + e] = (src >= 0 && uint(src) < p.dim) ? x[p.x_off + (o * p.dim + uint(src)) * p.inner + r] : 0u;
  }
}
