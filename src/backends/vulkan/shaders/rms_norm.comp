#version 450
// y = (x * (1 / sqrt(mean(x^2) + eps))) * (unit_offset ? 1 + w : w), one workgroup per row of D
// (src/ops/rms_norm.cpp).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint x_off, w_off, y_off, rows, d;
  float eps;
  uint unit_offset;
} p;

shared float partial[64];

void main() {
  uint tid = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.d;
    float ss = 0.0;
    for (uint i = tid; i < p.d; i += 64u) {
      float v = x[p.x_off + base + i];
      ss += v * v;
    }
    partial[tid] = ss;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
      if (tid < s) partial[tid] += partial[tid + s];
      barrier();
    }
    precise float inv = 1.0 / sqrt(partial[0] / float(p.d) + p.eps);
    for (uint i = tid; i < p.d; i += 64u) {
      float wv = w[p.w_off + i];
      if (p.unit_offset != 0u) wv = 1.0 + wv;
      precise float v = x[p.x_off + base + i] * inv;
      y[p.y_off + base + i] = v * wv;
    }
    barrier();  // partial[0] is read above before the next row overwrites it
  }
}
