#version 450
// x viewed as [outer, dim, inner]: y[o, i, r] = x[o, start + i, r] for i < len (src/ops/slice.cpp,
// 4-byte elements moved as bits).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint x_off, y_off, outer, len, dim, start, inner; } p;

void main() {
  uint total = p.outer * p.len * p.inner;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
    uint r = e % p.inner, rest = e / p.inner;
    uint i = rest % p.len, o = rest / p.len;
    y[p.y_off + e] = x[p.x_off + (o * p.dim + p.start + i) * p.inner + r];
  }
}
