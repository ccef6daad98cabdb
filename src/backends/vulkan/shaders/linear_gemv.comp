#version 450
#extension GL_GOOGLE_include_directive : require
// y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for few rows M: one workgroup per output column n, each
// thread a strided part of K for up to 8 rows at a time, then a tree sum in shared memory
// (src/ops/linear.cpp; weights f32, f16, bf16, i8 with per-row scale or q4_0, weight_decode.glsl).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) readonly buffer S { float scale[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint x_off, w_off, b_off, s_off, y_off, m, n, k, has_bias, w_dtype;
} p;

#include "weight_decode.glsl"

const uint R = 8u;
shared float partial[R][64];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint col = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (col >= p.n) return;  // uniform per workgroup
  for (uint m0 = 0u; m0 < p.m; m0 += R) {
    uint rows = min(R, p.m - m0);
    float acc[R];
    for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
    for (uint i = tid; i < p.k; i += 64u) {
      float wv = weight_at(col, i);
      for (uint r = 0u; r < rows; ++r) acc[r] += x[p.x_off + (m0 + r) * p.k + i] * wv;
    }
    for (uint r = 0u; r < R; ++r) partial[r][tid] = acc[r];
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
      if (tid < s)
        for (uint r = 0u; r < rows; ++r) partial[r][tid] += partial[r][tid + s];
      barrier();
    }
    if (tid < rows) {
      float v = partial[tid][0];
      if (p.has_bias != 0u) v += bias[p.b_off + col];
      y[p.y_off + (m0 + tid) * p.n + col] = v;
    }
    barrier();
  }
}
