#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// linear_gemv.comp's GEMV (y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]), a workgroup per output column,
// each thread a strided part of K for up to 8 rows at a time) with the reduction done by subgroupAdd
// inside each subgroup and one shared-memory step across the workgroup's subgroups, instead of a
// six-level tree with a barrier per level. Chosen at load where the device reports arithmetic subgroup
// operations in compute shaders (Context::subgroup_gemv). Each row's sum has the same order whatever
// the number of rows M.
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
// One partial sum per (row, subgroup): 64 slots cover any subgroup size down to 1.
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
    // `rows` is uniform, so every invocation of a subgroup takes part in each subgroupAdd.
    for (uint r = 0u; r < rows; ++r) {
      float s = subgroupAdd(acc[r]);
      if (subgroupElect()) partial[r][gl_SubgroupID] = s;
    }
    barrier();
    if (tid < rows) {
      float v = 0.0;
      for (uint g = 0u; g < gl_NumSubgroups; ++g) v += partial[tid][g];
      if (p.has_bias != 0u) v += bias[p.b_off + col];
      y[p.y_off + (m0 + tid) * p.n + col] = v;
    }
    barrier();
  }
}
