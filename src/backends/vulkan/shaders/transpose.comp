#version 450
// y = permuted copy of x (src/ops/transpose.cpp), rank padded to 4: output index (i0, i1, i2, i3) over
// `dims` reads x at sum(i_k * stride_k), where stride_k is x's stride of the axis perm[k].
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint x_off, y_off, n, d0, d1, d2, d3, s0, s1, s2, s3; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < p.n; e += stride) {
    uint i3 = e % p.d3, r = e / p.d3;
    uint i2 = r % p.d2;
    r /= p.d2;
    uint i1 = r % p.d1, i0 = r / p.d1;
    y[p.y_off + e] = x[p.x_off + i0 * p.s0 + i1 * p.s1 + i2 * p.s2 + i3 * p.s3];
  }
}
