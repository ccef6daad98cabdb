#version 450
#extension GL_GOOGLE_include_directive : require
// y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for many rows: each 16 × 16 workgroup computes a 32 × 32
// tile of y (2 × 2 per thread) from 32 × 16 slices of x and w staged in shared memory
// (src/ops/linear.cpp; weights f32, f16, bf16, i8 with per-row scale or q4_0, weight_decode.glsl).
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) readonly buffer S { float scale[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint x_off, w_off, b_off, s_off, y_off, m, n, k, has_bias, w_dtype;
} p;

#include "weight_decode.glsl"

const uint TILE = 32u;
const uint TK = 16u;
shared float xs[TILE][TK + 1u];
shared float ws[TILE][TK + 1u];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16u + tx;
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  float acc00 = 0.0, acc01 = 0.0, acc10 = 0.0, acc11 = 0.0;
  for (uint k0 = 0u; k0 < p.k; k0 += TK) {
    // 512 values of each slice, two per thread.
    for (uint e = tid; e < TILE * TK; e += 256u) {
      uint r = e / TK, c = e % TK;
      uint gk = k0 + c;
      uint gm = row0 + r, gn = col0 + r;
      xs[r][c] = (gm < p.m && gk < p.k) ? x[p.x_off + gm * p.k + gk] : 0.0;
      ws[r][c] = (gn < p.n && gk < p.k) ? weight_at(gn, gk) : 0.0;
    }
    barrier();
    for (uint c = 0u; c < TK; ++c) {
      float x0 = xs[ty * 2u][c], x1 = xs[ty * 2u + 1u][c];
      float w0 = ws[tx * 2u][c], w1 = ws[tx * 2u + 1u][c];
      acc00 += x0 * w0;
      acc01 += x0 * w1;
      acc10 += x1 * w0;
      acc11 += x1 * w1;
    }
    barrier();
  }
  uint m0 = row0 + ty * 2u, n0 = col0 + tx * 2u;
  float accs[4] = float[4](acc00, acc01, acc10, acc11);
  for (uint i = 0u; i < 4u; ++i) {
    uint mm = m0 + i / 2u, nn = n0 + i % 2u;
    if (mm < p.m && nn < p.n) {
      float v = accs[i];
      if (p.has_bias != 0u) v += bias[p.b_off + nn];
      y[p.y_off + mm * p.n + nn] = v;
    }
  }
}
